/**
 * Operator CLI: `npm run cli -- <command>`. Later domains add their operator commands to
 * `commands` (one `Command` each); every command gets the same configuration and database.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Console, Effect, FileSystem, Layer, Option, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { CreateOAuthApp } from "../../schema/admin.ts"
import { AdminService } from "../admin/service.ts"
import { AnalyticsImports, parseFxCsv, parseSpendCsv } from "../analytics/imports.ts"
import { AnalyticsRollupSettings, AnalyticsRollups, defaultRollupSettings } from "../analytics/rollups.ts"
import { CredentialStoreLive } from "../auth/credential-store.ts"
import { AppConfig } from "./config.ts"
import { DatabaseInfo, DatabaseLive } from "./database.ts"
import { appliedMigrationId, latestMigrationId, migrate } from "./migrator.ts"
import { SecretBox } from "./secret-box.ts"
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

/** Operator commands run with the schema current (pending migrations are applied first). */
const withAdmin = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provide(
    Effect.andThen(migrate, effect),
    AdminService.layer.pipe(
      // The credential cache a revocation clears is this process's own: harmless here.
      Layer.provideMerge(Layer.merge(SecretBox.layer, CredentialStoreLive)),
      Layer.provideMerge(DatabaseLive)
    )
  )

const operator = { kind: "operator" } as const

const oauthAppsCreate = Command.make("create", {
  name: Flag.String("name").pipe(Flag.withDescription("Display name of the app")),
  redirectUris: Flag.String("redirect-uri").pipe(Flag.atLeast(1), Flag.withDescription("Registered redirect URI (repeat)")),
  returnOrigins: Flag.String("allowed-return-origin").pipe(Flag.atLeast(0), Flag.withDescription("Extra hand-off return origin (repeat)")),
  profileResolution: Flag.Literals("profile-resolution", ["email", "external_ref"]).pipe(Flag.optional),
  rateTier: Flag.Literals("rate-tier", ["standard", "elevated", "internal"]).pipe(Flag.optional),
  ownerWorkspaceId: Flag.String("owner-workspace-id").pipe(Flag.optional)
}, (flags) =>
  withAdmin(Effect.gen(function*() {
    const input = yield* Schema.decodeUnknownEffect(CreateOAuthApp)({
      name: flags.name,
      redirect_uris: flags.redirectUris,
      allowed_return_origins: flags.returnOrigins,
      ...Option.match(flags.profileResolution, { onNone: () => ({}), onSome: (value) => ({ profile_resolution: value }) }),
      ...Option.match(flags.rateTier, { onNone: () => ({}), onSome: (value) => ({ rate_tier: value }) }),
      ...Option.match(flags.ownerWorkspaceId, { onNone: () => ({}), onSome: (value) => ({ owner_workspace_id: value }) })
    })
    const admin = yield* AdminService
    yield* printJson({ data: yield* admin.createApp(operator, input) })
  }))).pipe(Command.withDescription("Register an OAuth app; prints its client secret and JWT secret once."))

const oauthAppsList = Command.make("list", {}, () =>
  withAdmin(Effect.gen(function*() {
    const admin = yield* AdminService
    yield* printJson(yield* admin.listApps({ limit: 100 }))
  }))).pipe(Command.withDescription("List OAuth apps (never their secrets)."))

const oauthAppsCommand = Command.make("oauth-apps").pipe(
  Command.withDescription("Partner OAuth apps: the operator surface of /api/v1/admin/oauth-apps."),
  Command.withSubcommands([oauthAppsCreate, oauthAppsList])
)

const workspacesSetHealthcareAgency = Command.make("set-healthcare-agency", {
  workspaceId: Argument.String("workspace-id").pipe(Argument.withDescription("The workspace's id")),
  value: Argument.Literals("value", ["true", "false"]).pipe(Argument.withDescription("true or false"))
}, ({ workspaceId, value }) =>
  withAdmin(Effect.gen(function*() {
    const admin = yield* AdminService
    yield* printJson({ data: yield* admin.setHealthcareAgency(operator, workspaceId, value === "true") })
  }))).pipe(Command.withDescription(
    "Set a workspace's is_healthcare_agency flag (S5.3); turning it on revokes delegated keys with person scopes."
  ))

const workspacesCommand = Command.make("workspaces").pipe(
  Command.withDescription("Workspaces: the operator surface of /api/v1/admin/workspaces."),
  Command.withSubcommands([workspacesSetHealthcareAgency])
)

/** Analytics inputs and rollups (decision 0041): the internal write path of spend and FX rates. */
const withAnalytics = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provide(
    Effect.andThen(migrate, effect),
    Layer.merge(AnalyticsImports.layer, AnalyticsRollups.layer).pipe(
      // No background fiber in a one-shot command: `rebuild` drains by itself.
      Layer.provide(Layer.succeed(AnalyticsRollupSettings)({ ...defaultRollupSettings, enabled: false })),
      Layer.provideMerge(DatabaseLive)
    )
  )

const readCsv = (path: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFileString(path))

const spendImport = Command.make("import", {
  file: Argument.String("file").pipe(Argument.withDescription("CSV: profile_id,platform,day,campaign_id,ad_set_id,ad_id,currency,amount"))
}, ({ file }) =>
  withAnalytics(Effect.gen(function*() {
    const rows = yield* Effect.fromResult(parseSpendCsv(yield* readCsv(file)))
    const imports = yield* AnalyticsImports
    yield* printJson({ data: { rows: yield* imports.upsertSpend(rows) } })
  }))).pipe(Command.withDescription("Import ad spend per ad and day (idempotent: a row per profile, platform, day and ad)."))

const spendCommand = Command.make("spend").pipe(
  Command.withDescription("Ad spend: the internal import path until the ad-platform sync supplies it."),
  Command.withSubcommands([spendImport])
)

const fxImport = Command.make("import", {
  file: Argument.String("file").pipe(Argument.withDescription("The ECB reference rates CSV (Date,USD,...) or day,base,quote,rate")),
  source: Flag.String("source").pipe(Flag.withDefault("ecb"), Flag.withDescription("Where the rates come from"))
}, ({ file, source }) =>
  withAnalytics(Effect.gen(function*() {
    const rows = yield* Effect.fromResult(parseFxCsv(yield* readCsv(file)))
    const imports = yield* AnalyticsImports
    yield* printJson({ data: { rates: yield* imports.upsertFxRates(rows, source) } })
  }))).pipe(Command.withDescription("Import daily FX rates (idempotent: a rate per base, quote and day)."))

const fxCommand = Command.make("fx").pipe(
  Command.withDescription("The stored daily FX table analytics convert amounts with."),
  Command.withSubcommands([fxImport])
)

const analyticsRebuild = Command.make("rebuild", {
  profileId: Flag.String("profile-id").pipe(Flag.optional, Flag.withDescription("Only this profile (default: every profile)"))
}, ({ profileId }) =>
  withAnalytics(Effect.gen(function*() {
    const rollups = yield* AnalyticsRollups
    yield* printJson({ data: yield* rollups.rebuild(Option.getOrNull(profileId)) })
  }))).pipe(Command.withDescription("Recompute the analytics rollups from the raw tables."))

const analyticsCommand = Command.make("analytics").pipe(
  Command.withDescription("Analytics rollups."),
  Command.withSubcommands([analyticsRebuild])
)

export const commands = [migrateCommand, statusCommand, oauthAppsCommand, workspacesCommand, spendCommand, fxCommand, analyticsCommand] as const

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
