/**
 * Cost of the database-metrics tracer (decision 0101) with trace export off, paired in one
 * process: the same work with span creation switched off (what `TracingDisabled` was before)
 * and with the placeholder tracer that feeds `db.client.operation.duration` (what it is now).
 * Rounds alternate off/on, on/off; the figure is CPU time per operation (process.cpuUsage),
 * median over rounds.
 *
 * - `spans`: five nested internal spans (as `Effect.fn` service calls make) and one client
 *   span with a statement's attributes: the tracer's cost on work that does no I/O at all.
 * - `SELECT 1`: one statement through @effect/sql-pg, sequential, when DATABASE_URL is set.
 *
 * Run: `npx node bench/tracing/db-metrics.ts` (env BENCH_ROUNDS, default 8, even).
 */
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Redacted, Tracer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { postgresOptions } from "../../src/platform/database.ts"
import { dbMetricsTracer } from "../../src/platform/db-metrics.ts"

const rounds = Number(process.env["BENCH_ROUNDS"] ?? 8)
const databaseUrl = Option.fromNullishOr(process.env["DATABASE_URL"])

const nested = (depth: number): Effect.Effect<void> =>
  depth === 0
    ? Effect.void.pipe(Effect.withSpan("postgres", {
      kind: "client",
      attributes: { "db.system.name": "postgresql", "db.namespace": "bench", "db.query.text": "SELECT 1", "effect.sql.method": "execute" }
    }))
    : nested(depth - 1).pipe(Effect.withSpan(`Service.method${depth}`))

type Side = "off" | "on"
const under = (side: Side) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  side === "off"
    ? Effect.withTracerEnabled(effect, false)
    : Effect.withFiber((fiber) => Effect.provideService(effect, Tracer.Tracer, dbMetricsTracer(fiber.context, undefined)))

/** CPU microseconds per operation of `count` runs of `operation`. */
const cpuPerOp = <E, R>(operation: Effect.Effect<unknown, E, R>, count: number) =>
  Effect.gen(function*() {
    const before = process.cpuUsage()
    for (let i = 0; i < count; i++) yield* operation
    const used = process.cpuUsage(before)
    return (used.user + used.system) / count
  })

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 0 ? (sorted[middle - 1]! + sorted[middle]!) / 2 : sorted[middle]!
}

const measure = <E, R>(name: string, operation: Effect.Effect<unknown, E, R>, count: number) =>
  Effect.gen(function*() {
    // Warm-up on both sides.
    yield* under("off")(cpuPerOp(operation, count))
    yield* under("on")(cpuPerOp(operation, count))
    const results: Record<Side, Array<number>> = { off: [], on: [] }
    for (let round = 0; round < rounds; round++) {
      for (const side of round % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const)) {
        results[side].push(yield* under(side)(cpuPerOp(operation, count)))
      }
    }
    const [off, on] = [median(results.off), median(results.on)]
    console.log(`| ${name} | ${off.toFixed(1)} | ${on.toFixed(1)} | ${(on - off).toFixed(1)} | ${((on / off - 1) * 100).toFixed(1)} % |`)
  })

const program = Effect.gen(function*() {
  console.log(`database-metrics tracer, export off: CPU µs per operation, median of ${rounds} rounds per side`)
  console.log("")
  console.log("| operation | spans off | metrics tracer | difference µs | overhead |")
  console.log("|---|---|---|---|---|")
  yield* measure("5 internal spans + 1 statement-like client span", nested(5), 20_000)
  const sql = yield* Effect.serviceOption(SqlClient)
  if (Option.isSome(sql)) yield* measure("SELECT 1 (PostgreSQL, sequential)", sql.value`SELECT 1`, 2_000)
})

const database = Option.match(databaseUrl, {
  onNone: () => Layer.empty,
  onSome: (url) => PgClient.layer({ ...postgresOptions(Redacted.make(url)), maxConnections: 2 })
})

Effect.runPromise(program.pipe(Effect.provide(database), Effect.orDie)).catch((error) => {
  console.error(error)
  process.exit(1)
})
