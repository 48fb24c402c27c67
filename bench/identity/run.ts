/**
 * Identity at scale (`npm run bench:identity`). Decisions 0038 and 0040; figures in bench/README.md.
 *
 * In-process, on the PostgreSQL of `DATABASE_URL` (required), with the service's own layers
 * (configuration, database pool, migrations, `IdentityRepo`, `CustomersService`). A profile is
 * generated with set-based SQL (its time is printed, not counted):
 *
 * - BENCH_CUSTOMERS customers (1,000,000), each with an email and a phone identifier; 5 % of
 *   them share their email with another customer (so the proposer must find 5 % × N pairs);
 * - one "heavy" person with BENCH_TOUCHES touches (1,000) and 20 conversions.
 *
 * Then, in the same run:
 * - baseline "group": the read half of the proposer alone (identifier values held by two or
 *   more live customers: the GROUP BY), nothing written;
 * - scan 1: the merge proposer (`IdentityRepo.scan`, what POST .../merge-proposals/scan runs)
 *   on a queue with no proposals: every pair written;
 * - scan 2: the same on the full queue (every pair found again, evidence refreshed);
 * - journey: `CustomersService.personJourney` for the heavy person (the route's code path minus
 *   HTTP: resolution, merged set, one page of 100 rows with credit, meta.person with the newest 50
 *   conversions), first page and last page, BENCH_READS times (200) each; p50/p95; next to
 *   baseline "touch page": a bare keyset SELECT of 100 of the person's touches.
 *
 * customers/s = customers scanned / scan seconds. Goals are not given by the issue beyond
 * printing the figures; the checks (pair counts) fail the run when wrong.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { CustomersService } from "../../src/identity/customers/service.ts"
import type { PrincipalShape } from "../../src/kernel/principal.ts"
import { IdentityRepo } from "../../src/identity/repo.ts"
import { AppConfig } from "../../src/platform/config.ts"
import { DatabaseLayer } from "../../src/platform/database.ts"
import { MigrationsLayer } from "../../src/main/core.ts"
import { fmt, intFromEnv, runInProcessBench } from "../support.ts"

const CUSTOMERS = intFromEnv("BENCH_CUSTOMERS", 1_000_000, 20_000_000)
const TOUCHES = intFromEnv("BENCH_TOUCHES", 1_000, 1_000_000)
const READS = intFromEnv("BENCH_READS", 200, 100_000)
const DUPLICATE_SHARE = 0.05

const seconds = (start: bigint) => Number(process.hrtime.bigint() - start) / 1e9

const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const start = process.hrtime.bigint()
    const value = yield* effect
    return { value, seconds: seconds(start) }
  })

const percentiles = (samples: Array<number>) => {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? Number.NaN
  return { p50: at(0.5), p95: at(0.95) }
}

const generate = Effect.gen(function*() {
  const sql = yield* SqlClient
  const workspaceId = crypto.randomUUID()
  const profileId = crypto.randomUUID()
  const duplicates = Math.floor(CUSTOMERS * DUPLICATE_SHARE)
  yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'bench identity')`
  yield* sql`INSERT INTO profiles (id, workspace_id, name, currency) VALUES (${profileId}, ${workspaceId}, 'bench identity', 'EUR')`
  // Customer n has key c<n>, email u<n>@bench.example (the first 5 % share the email of customer n + 5 %), phone +3460<n>.
  yield* sql`
    INSERT INTO customers (id, profile_id, customer_key, created_at)
    SELECT gen_random_uuid(), ${profileId}, 'c' || n, now() - make_interval(secs => ${CUSTOMERS} - n)
    FROM generate_series(1, ${CUSTOMERS}) AS n`
  yield* sql`
    INSERT INTO customer_identifiers (id, profile_id, customer_id, kind, value)
    SELECT gen_random_uuid(), ${profileId}, c.id, 'email',
           'u' || CASE WHEN n <= ${duplicates} THEN n + ${duplicates} ELSE n END || '@bench.example'
    FROM (SELECT id, substr(customer_key, 2)::int AS n FROM customers WHERE profile_id = ${profileId}) c`
  yield* sql`
    INSERT INTO customer_identifiers (id, profile_id, customer_id, kind, value)
    SELECT gen_random_uuid(), ${profileId}, c.id, 'phone', '+3460' || lpad(substr(customer_key, 2), 7, '0')
    FROM customers c WHERE c.profile_id = ${profileId}`
  const [heavy] = yield* sql<{ id: string }>`SELECT id FROM customers WHERE profile_id = ${profileId} AND customer_key = 'c1'`
  if (heavy === undefined) return yield* Effect.die("the heavy customer was not generated")
  yield* sql`
    INSERT INTO touches (id, profile_id, kind, occurred_at, channel, source, medium, customer_id, anonymous_id, url, path)
    SELECT gen_random_uuid(), ${profileId}, 'web_touch', now() - make_interval(mins => n * 17),
           (ARRAY['paid_search', 'organic_search', 'direct', 'email', 'paid_social'])[1 + n % 5], 'bench', 'cpc', ${heavy.id},
           'anon-heavy-' || (n % 7), 'https://shop.example/p/' || n, '/p/' || n
    FROM generate_series(1, ${TOUCHES}) AS n`
  yield* sql`
    INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at, customer_id)
    SELECT gen_random_uuid(), ${profileId}, 'heavy-' || n, 'bench', 'purchase', now() - make_interval(days => n), ${heavy.id}
    FROM generate_series(1, 20) AS n`
  yield* sql`
    INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at)
    SELECT profile_id, idempotency_key, id, occurred_at FROM outcome_events WHERE profile_id = ${profileId}`
  yield* sql`
    INSERT INTO conversions (id, profile_id, outcome_event_id, conversion_key, occurred_at, customer_id, counts_as_cash, attribution_eligible)
    SELECT gen_random_uuid(), profile_id, id, 'sale', occurred_at, customer_id, true, true
    FROM outcome_events WHERE profile_id = ${profileId}`
  // Credited already: out of the credit queue.
  yield* sql`DELETE FROM credit_queue WHERE profile_id = ${profileId}`
  yield* sql`ANALYZE customers`
  yield* sql`ANALYZE customer_identifiers`
  yield* sql`ANALYZE touches`
  return { workspaceId, profileId, heavyId: heavy.id, duplicates }
})

const drop = (profileId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    yield* sql`DELETE FROM merge_proposals WHERE profile_id = ${profileId}`
    yield* sql`DELETE FROM conversions WHERE profile_id = ${profileId}`
    // The key rows first: they name their events (decision 0146).
    yield* sql`DELETE FROM outcome_keys WHERE profile_id = ${profileId}`
    yield* sql`DELETE FROM outcome_events WHERE profile_id = ${profileId}`
    yield* sql`DELETE FROM touches WHERE profile_id = ${profileId}`
    yield* sql`DELETE FROM touch_keys WHERE profile_id = ${profileId}`
    yield* sql`DELETE FROM customer_identifiers WHERE profile_id = ${profileId}`
    yield* sql`DELETE FROM pii_access_log WHERE profile_id = ${profileId}`
    yield* sql`DELETE FROM customers WHERE profile_id = ${profileId}`
  })

const program = Effect.gen(function*() {
  const sql = yield* SqlClient
  const identity = yield* IdentityRepo
  const customers = yield* CustomersService
  console.log(`node ${process.versions.node}; ${fmt(CUSTOMERS)} customers (${DUPLICATE_SHARE * 100} % share an email), heavy person with ${fmt(TOUCHES)} touches`)
  const generated = yield* timed(generate)
  const dataset = generated.value
  console.log(`dataset generated in ${fmt(generated.seconds, 1)} s (not counted)`)
  yield* Effect.ensuring(
    Effect.gen(function*() {
      const group = yield* timed(sql<{ groups: number }>`
        SELECT count(*)::int AS groups FROM (
          SELECT i.kind, i.value FROM customer_identifiers i
          JOIN customers c ON c.id = i.customer_id AND c.merged_into_id IS NULL AND c.erased_at IS NULL
          WHERE i.profile_id = ${dataset.profileId} AND i.removed_at IS NULL
          GROUP BY i.kind, i.value HAVING count(DISTINCT i.customer_id) > 1) g`)
      const first = yield* timed(identity.scan(dataset.profileId))
      const second = yield* timed(identity.scan(dataset.profileId))
      const failures: Array<string> = []
      if (first.value.pairs !== dataset.duplicates || first.value.proposed !== dataset.duplicates) {
        failures.push(`scan 1 found ${first.value.pairs} pairs and wrote ${first.value.proposed}; expected ${dataset.duplicates}`)
      }
      if (second.value.pairs !== dataset.duplicates || second.value.proposed !== 0) {
        failures.push(`scan 2 found ${second.value.pairs} pairs and wrote ${second.value.proposed}; expected ${dataset.duplicates} and 0`)
      }
      if (first.value.customers_scanned !== CUSTOMERS) failures.push(`scanned ${first.value.customers_scanned} customers, not ${CUSTOMERS}`)

      const principal: PrincipalShape = {
        kind: "api_key",
        keyId: crypto.randomUUID(),
        profileId: dataset.profileId,
        workspaceId: dataset.workspaceId,
        scopes: ["conversions:read"],
        oauthAppId: null,
        rateLimitPerMinute: 1_000_000,
        attributionEnabled: true
      }
      const profile = { profileId: dataset.profileId, workspaceId: dataset.workspaceId, attributionEnabled: true }
      const firstPage = yield* customers.personJourney(principal, profile, { customer_key: "c1", limit: 100 })
      if (firstPage.data.length !== 100 || firstPage.meta.person.touch_count !== TOUCHES) {
        failures.push(`journey answered ${firstPage.data.length} rows and touch_count ${firstPage.meta.person.touch_count}`)
      }
      // The last page: walk the cursors once (not timed), then read it repeatedly.
      let cursor = firstPage.pagination.cursor
      let lastCursor: string | null = null
      while (cursor !== null) {
        lastCursor = cursor
        cursor = (yield* customers.personJourney(principal, profile, { customer_key: "c1", limit: 100, cursor })).pagination.cursor
      }
      const sample = (query: { readonly customer_key: string; readonly limit: number; readonly cursor?: string }) =>
        Effect.gen(function*() {
          const samples: Array<number> = []
          for (let i = 0; i < READS; i++) samples.push((yield* timed(customers.personJourney(principal, profile, query))).seconds * 1000)
          return percentiles(samples)
        })
      const journeyFirst = yield* sample({ customer_key: "c1", limit: 100 })
      const journeyLast = yield* sample(lastCursor === null ? { customer_key: "c1", limit: 100 } : { customer_key: "c1", limit: 100, cursor: lastCursor })
      const bare: Array<number> = []
      for (let i = 0; i < READS; i++) {
        bare.push((yield* timed(sql`
          SELECT id, kind, occurred_at, channel, source, medium, url FROM touches
          WHERE customer_id = ${dataset.heavyId} ORDER BY occurred_at, id LIMIT 101`)).seconds * 1000)
      }
      const bareTouches = percentiles(bare)

      console.log("")
      console.log("| run | seconds | customers/s |")
      console.log("|---|---:|---:|")
      console.log(`| baseline "group" (read half only) | ${fmt(group.seconds, 2)} | ${fmt(CUSTOMERS / group.seconds)} |`)
      console.log(`| scan 1 (empty queue, ${fmt(first.value.proposed)} proposals written) | ${fmt(first.seconds, 2)} | ${fmt(CUSTOMERS / first.seconds)} |`)
      console.log(`| scan 2 (full queue, evidence refreshed) | ${fmt(second.seconds, 2)} | ${fmt(CUSTOMERS / second.seconds)} |`)
      console.log("")
      console.log(`| journey read (${fmt(TOUCHES)} touches, page of 100) | p50 ms | p95 ms |`)
      console.log("|---|---:|---:|")
      console.log(`| first page (service) | ${fmt(journeyFirst.p50, 2)} | ${fmt(journeyFirst.p95, 2)} |`)
      console.log(`| last page (service) | ${fmt(journeyLast.p50, 2)} | ${fmt(journeyLast.p95, 2)} |`)
      console.log(`| baseline: bare SELECT of 101 touches | ${fmt(bareTouches.p50, 2)} | ${fmt(bareTouches.p95, 2)} |`)
      for (const failure of failures) console.log(`CHECK FAILED: ${failure}`)
      if (failures.length > 0) return yield* Effect.fail(new Error("the identity bench's checks failed (see above)"))
      console.log(`checks: ${fmt(dataset.duplicates)} pairs found by both scans, none written twice, journey pages complete: yes`)
    }),
    process.env["BENCH_KEEP"] === "1" ? Effect.void : Effect.orDie(drop(dataset.profileId))
  )
})

await runInProcessBench("identity", "a PostgreSQL the bench may write a million customers to", program, () =>
  Layer.mergeAll(IdentityRepo.layer, CustomersService.layer).pipe(
    Layer.provideMerge(MigrationsLayer),
    Layer.provideMerge(DatabaseLayer),
    Layer.provide(AppConfig.layer)
  ))
