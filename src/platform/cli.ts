/**
 * Operator CLI: `npm run cli -- <command>`. Later domains add their operator commands to
 * `commands` (one `Command` each); every command gets the same configuration and database.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Console, Effect } from "effect"
import { Command } from "effect/cli"
import { AppConfig } from "./config.ts"
import { DatabaseInfo, DatabaseLive } from "./database.ts"
import { appliedMigrationId, latestMigrationId, migrate } from "./migrator.ts"
import { settingsOrExit } from "./startup.ts"
import { VERSION } from "./version.ts"

const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

/** Opens the database only for the commands that need it (not for --help). */
const withDatabase = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, DatabaseLive)

const migrateCommand = Command.make("migrate", {}, () =>
  withDatabase(Effect.gen(function*() {
    const applied = yield* migrate
    yield* printJson({
      applied: applied.map(([id, name]) => `${String(id).padStart(4, "0")}_${name}`),
      latest: latestMigrationId
    })
  }))).pipe(Command.withDescription("Apply pending database migrations and exit."))

const statusCommand = Command.make("status", {}, () =>
  withDatabase(Effect.gen(function*() {
    const info = yield* DatabaseInfo
    const applied = yield* appliedMigrationId
    yield* printJson({
      version: VERSION,
      database: { mode: info.mode, location: info.location },
      migrations: { applied, latest: latestMigrationId, pending: Math.max(0, latestMigrationId - applied) }
    })
  }))).pipe(Command.withDescription("Show the version, the database in use and the migration state."))

export const commands = [migrateCommand, statusCommand] as const

const cli = Command.make("svc").pipe(
  Command.withDescription("Attribution service operator commands."),
  Command.withSubcommands(commands)
)

const main = Effect.gen(function*() {
  const settings = yield* settingsOrExit
  yield* Command.run(cli, { version: VERSION }).pipe(
    Effect.provide(AppConfig.layerWith(settings))
  )
})

NodeRuntime.runMain(main.pipe(Effect.provide(NodeServices.layer)))
