/**
 * The outcome recorder alone (`node bench/ingest/recorder.ts`): outcomes handed to
 * `OutcomeRecorder.record` as the ingest handler hands them, with no HTTP in front, so its CPU
 * per event is the recorder's own (group commit, the batch's statements, the first-payment rules,
 * the outbox rows). Issue 35 part 2: where ingest's cost goes between the request path and the write.
 *
 * Needs `DATABASE_URL` (a fresh database: it is migrated, and each run seeds its own profile) and
 * `SVC_SECRETS_KEY` (32 bytes, base64). Settings (env): BENCH_EVENTS (10000 a round), BENCH_ROUNDS
 * (2: the same customers each round, so their histories grow), BENCH_CUSTOMERS (2000),
 * BENCH_CONCURRENCY (64 `record` calls at once; fewer means thinner batches). Each event is a
 * cash payment at the time it is sent, keyed by `external_id`.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { API_ORIGIN, type CheckedEvent, OutcomeRecorder } from "../../src/ingestion/events/outcomes/recorder.ts"
import { AppConfig } from "../../src/platform/config.ts"
import { DatabaseLayer } from "../../src/platform/database.ts"
import { migrate } from "../../src/platform/migrator.ts"
import { intFromEnv } from "../support.ts"

const events = intFromEnv("BENCH_EVENTS", 10_000, 1_000_000)
const rounds = intFromEnv("BENCH_ROUNDS", 2, 100)
const customers = intFromEnv("BENCH_CUSTOMERS", 2_000, 1_000_000)
const concurrency = intFromEnv("BENCH_CONCURRENCY", 64, 4_096)

const program = Effect.gen(function*() {
  const sql = yield* SqlClient
  const recorder = yield* OutcomeRecorder
  const workspaceId = crypto.randomUUID()
  const profileId = crypto.randomUUID()
  yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'bench recorder')`
  yield* sql`INSERT INTO profiles (id, workspace_id, name, currency) VALUES (${profileId}, ${workspaceId}, 'bench recorder', 'USD')`
  yield* sql`
    INSERT INTO conversion_definitions (id, profile_id, conversion_key, name, kind, event_names, is_default, counts_as_cash)
    VALUES (${crypto.randomUUID()}, ${profileId}, 'purchase', 'Purchase', 'event', ${["purchase"]}, true, true)`
  const profile = { profileId, workspaceId, attributionEnabled: true }
  const run = Date.now().toString(36)
  const one = (n: number) => {
    const checked: CheckedEvent = {
      eventName: "purchase",
      idempotencyKey: `${run}-${n}`,
      occurredAt: new Date().toISOString(),
      valueAmount: "12.340000",
      currency: "USD",
      subjectRef: null,
      orderGroup: null,
      externalId: `cust-${n % customers}`,
      email: null,
      phone: null,
      crmContactId: null,
      nationalIdHash: null,
      anonymousId: null,
      actionSource: "website",
      clickIds: { gclid: `g${n}` }
    }
    return recorder.record(profile, checked, `h${n}`, API_ORIGIN)
  }
  const batch = (from: number, count: number) =>
    Effect.forEach(Array.from({ length: count }, (_, i) => from + i), one, { concurrency, discard: true })
  // Warm-up: every customer exists and the statements are prepared before anything is timed.
  yield* batch(0, customers)
  console.log(`recorder alone: ${events} events a round, ${customers} customers, ${concurrency} at once`)
  for (let round = 0; round < rounds; round++) {
    const cpu = process.cpuUsage()
    const started = performance.now()
    yield* batch(customers + round * events, events)
    const used = process.cpuUsage(cpu)
    const ms = performance.now() - started
    const [stored] = yield* sql<{ per: number }>`
      SELECT round(count(*)::numeric / ${customers}, 1)::float8 AS per FROM conversions WHERE profile_id = ${profileId}`
    console.log(
      `  round ${round + 1}: ${((events * 1000) / ms).toFixed(0)} events/s, ` +
        `${((used.user + used.system) / events).toFixed(0)} µs of CPU an event (user ${(used.user / events).toFixed(0)}), ` +
        `${stored?.per ?? 0} payments a customer after it`
    )
  }
})

const layer = OutcomeRecorder.layer.pipe(Layer.provideMerge(DatabaseLayer), Layer.provide(AppConfig.layer))
await Effect.runPromise(Effect.scoped(Effect.provide(Effect.andThen(migrate, program), layer)))
