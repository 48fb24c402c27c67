/**
 * The attribution worker (decision 0030): new conversions are credited under every model, replays
 * recompute a profile after its classification changed, and replay jobs survive a runner that
 * died. Touches, outcome events and conversions are written by SQL (their routes are other
 * domains'); the worker is stepped with `drainOnce`, and a second server shows the background
 * fibers doing the same unasked.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Duration, Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AttributionWorker, AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { call, serveApp, testSettings } from "../support/app.ts"
import { eventually } from "../support/eventually.ts"
import { seedApiKey, seedProfile, type SeededProfile } from "../support/tenancy.ts"

const DAY = 86_400_000

interface Fixture extends SeededProfile {
  readonly key: string
}

const seed = Effect.gen(function*() {
  const profile = yield* seedProfile()
  const { key } = yield* seedApiKey(profile, {
    scopes: ["goals:write", "conversions:read", "attribution:write", "analytics:read"],
    rateLimitPerMinute: 10_000
  })
  return { ...profile, key } satisfies Fixture
})

const send = (key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  call(path, {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

const defineGoal = (fixture: Fixture, body: Record<string, unknown>) =>
  Effect.map(send(fixture.key, "POST", "/api/v1/goals/definitions", body), (response) => {
    assert.include([200, 201], response.status, response.text)
    return response.json as { data: { id: string }; meta: { replay_job_id: string | null } }
  })

const customer = (fixture: Fixture, anonymousIds: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const id = crypto.randomUUID()
    yield* sql`INSERT INTO customers (id, profile_id, customer_key) VALUES (${id}, ${fixture.profileId}, ${`cust-${id.slice(0, 8)}`})`
    for (const value of anonymousIds) {
      yield* sql`
        INSERT INTO customer_identifiers (id, profile_id, customer_id, kind, value)
        VALUES (${crypto.randomUUID()}, ${fixture.profileId}, ${id}, 'anonymous_id', ${value})`
    }
    return id
  })

const touch = (
  fixture: Fixture,
  options: {
    readonly at: number
    readonly channel: string
    readonly customerId?: string
    readonly anonymousId?: string
    readonly kind?: string
  }
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const id = crypto.randomUUID()
    yield* sql`
      INSERT INTO touches (id, profile_id, kind, occurred_at, channel, customer_id, anonymous_id)
      VALUES (${id}, ${fixture.profileId}, ${options.kind ?? "web_touch"}, ${new Date(options.at)}, ${options.channel},
              ${options.customerId ?? null}, ${options.anonymousId ?? null})`
    return id
  })

/** An outcome event and its conversion, not yet credited (what ingest writes). */
const conversion = (
  fixture: Fixture,
  options: {
    /** Epoch ms, or an infinite time (a broken row ingest never writes). */
    readonly at: number | "-infinity"
    readonly customerId: string | null
    readonly definitionId: string | null
    readonly key?: string
    readonly eligible?: boolean
  }
) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const eventId = crypto.randomUUID()
    const id = crypto.randomUUID()
    const at = options.at === "-infinity" ? options.at : new Date(options.at)
    yield* sql`
      WITH e AS (
        INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at, customer_id)
        VALUES (${eventId}, ${fixture.profileId}, ${crypto.randomUUID()}, 'test', ${options.key ?? "purchase"}, ${at},
                ${options.customerId})
        RETURNING profile_id, idempotency_key, id, occurred_at)
      INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at) SELECT * FROM e`
    yield* sql`
      INSERT INTO conversions (id, profile_id, outcome_event_id, definition_id, conversion_key, occurred_at, customer_id,
                               counts_as_cash, attribution_eligible)
      VALUES (${id}, ${fixture.profileId}, ${eventId}, ${options.definitionId}, ${options.key ?? "purchase"}, ${at},
              ${options.customerId}, false, ${options.eligible ?? true})`
    return id
  })

interface CreditRow {
  readonly model: string
  readonly touch_id: string
  readonly position: number
  readonly credit_share: string
  readonly is_credited: boolean
}

const creditsOf = (conversionId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    return yield* sql<CreditRow>`
      SELECT model, touch_id::text AS touch_id, position, credit_share::text AS credit_share, is_credited
      FROM attribution_credits WHERE conversion_id = ${conversionId} ORDER BY model, position`
  })

/** Per model: how many rows and the exact sum of the shares, computed by the database. */
const sumsOf = (conversionId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const rows = yield* sql<{ model: string; n: number; total: string; sums_to_one: boolean }>`
      SELECT model, count(*)::int AS n, sum(credit_share)::text AS total, sum(credit_share) = 1 AS sums_to_one
      FROM attribution_credits WHERE conversion_id = ${conversionId} GROUP BY model ORDER BY model`
    return rows
  })

const MODELS = ["first_touch", "last_non_direct", "last_touch", "linear", "svc_model", "time_decay"]

const creditedAt = (conversionId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [row] = yield* sql<{ credited: boolean }>`SELECT NOT EXISTS (SELECT 1 FROM credit_queue WHERE conversion_id = ${conversionId}) AS credited`
    return row?.credited ?? false
  })

const job = (jobId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const [row] = yield* sql<{ state: string; attempts: number; progress: number; total: number | null; error: string | null; leased: boolean }>`
      SELECT state, attempts, progress, total, error, lease_until IS NOT NULL AS leased FROM work_jobs WHERE id = ${jobId}`
    return row
  })

const drain = Effect.gen(function*() {
  const worker = yield* AttributionWorker
  return yield* worker.drainOnce
})

/**
 * A customer with an anonymous id bound to them, and touches around a conversion 1 hour ago:
 * paid_search 20 days before (anonymous), direct 10 days before, email 2 days before, referral
 * 40 days before (outside a 30-day window), an `outcome` touch, a touch after the conversion, and
 * another customer's touch.
 */
const journey = (fixture: Fixture, definitionId: string | null) =>
  Effect.gen(function*() {
    const now = Date.now()
    const at = now - 3_600_000
    const anonymous = `anon-${crypto.randomUUID()}`
    const customerId = yield* customer(fixture, [anonymous])
    const otherCustomer = yield* customer(fixture)
    const paid = yield* touch(fixture, { at: at - 20 * DAY, channel: "paid_search", anonymousId: anonymous })
    const direct = yield* touch(fixture, { at: at - 10 * DAY, channel: "direct", customerId })
    const email = yield* touch(fixture, { at: at - 2 * DAY, channel: "email", customerId })
    yield* touch(fixture, { at: at - 40 * DAY, channel: "referral", customerId })
    yield* touch(fixture, { at: at - DAY, channel: "direct", customerId, kind: "outcome" })
    yield* touch(fixture, { at: at + 60_000, channel: "paid_social", customerId })
    yield* touch(fixture, { at: at - 3 * DAY, channel: "organic_social", customerId: otherCustomer })
    const conversionId = yield* conversion(fixture, { at, customerId, definitionId })
    return { conversionId, customerId, paid, direct, email, at }
  })

const manual = Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false, replayBatchSize: 3 })

layer(serveApp(testSettings()).pipe(Layer.provide(manual)), { timeout: "120 seconds", excludeTestServices: true })(
  "attribution worker (stepped by hand)",
  (it) => {
    describe("crediting new conversions", () => {
      it.effect("credits every model over the customer's touches in the window (anonymous ids included); shares sum to 1; out of the credit queue", () =>
        Effect.gen(function*() {
          const fixture = yield* seed
          const goal = yield* defineGoal(fixture, { conversion_key: "purchase", name: "Purchase", event_names: ["purchase"] })
          const { conversionId, paid, direct, email } = yield* journey(fixture, goal.data.id)
          assert.isFalse(yield* creditedAt(conversionId))
          // A time finer than milliseconds, which the engine's model arithmetic rounds away.
          const sql = yield* SqlClient
          yield* sql`UPDATE touches SET occurred_at = occurred_at + interval '123 microseconds' WHERE id = ${paid}`

          const result = yield* drain
          assert.isAtLeast(result.credited, 1)
          assert.isTrue(yield* creditedAt(conversionId))

          const sums = yield* sumsOf(conversionId)
          assert.deepStrictEqual(sums.map((row) => row.model), MODELS)
          for (const row of sums) {
            assert.strictEqual(row.n, 3, row.model)
            assert.strictEqual(row.total, "1.0000000000", row.model)
            assert.isTrue(row.sums_to_one, row.model)
          }
          // Every row names its touch's exact time (migration 0075): its touch's whole key.
          const [times] = yield* sql<{ n: number; exact: number }>`
            SELECT count(*)::int AS n, count(*) FILTER (WHERE a.touch_at = t.occurred_at)::int AS exact
            FROM attribution_credits a JOIN touches t ON t.id = a.touch_id WHERE a.conversion_id = ${conversionId}`
          assert.deepStrictEqual(times, { n: 18, exact: 18 })
          const credits = yield* creditsOf(conversionId)
          const of = (model: string) => credits.filter((row) => row.model === model)
          assert.deepStrictEqual(of("linear").map((row) => [row.touch_id, row.position, row.credit_share]), [
            [paid, 1, "0.3333333333"],
            [direct, 2, "0.3333333333"],
            [email, 3, "0.3333333334"]
          ])
          const creditedTouch = (model: string) => of(model).filter((row) => row.is_credited).map((row) => row.touch_id)
          assert.deepStrictEqual(creditedTouch("first_touch"), [paid])
          assert.deepStrictEqual(creditedTouch("last_touch"), [email])
          assert.deepStrictEqual(creditedTouch("last_non_direct"), [email])
          // Below the svc_model data threshold its rows are time_decay's.
          assert.deepStrictEqual(
            of("svc_model").map((row) => row.credit_share),
            of("time_decay").map((row) => row.credit_share)
          )
        }))

      it.effect("an ineligible conversion and one without a customer get no rows but are marked credited", () =>
        Effect.gen(function*() {
          const fixture = yield* seed
          const goal = yield* defineGoal(fixture, {
            conversion_key: "refund",
            name: "Refund",
            event_names: ["refund"],
            attribution_eligible: false
          })
          const { conversionId: ineligible } = yield* journey(fixture, goal.data.id)
          const anonymous = yield* conversion(fixture, { at: Date.now() - 1000, customerId: null, definitionId: null, key: "lead" })
          // Stale rows of an earlier credit are replaced.
          yield* drain
          for (const id of [ineligible, anonymous]) {
            assert.isTrue(yield* creditedAt(id))
            assert.lengthOf(yield* creditsOf(id), 0)
          }
          const sql = yield* SqlClient
          const [flags] = yield* sql<{ attribution_eligible: boolean }>`SELECT attribution_eligible FROM conversions WHERE id = ${ineligible}`
          assert.isFalse(flags?.attribution_eligible, "the definition's eligibility is written to the conversion")
        }))

      it.effect("a conversion that cannot be credited does not hold up the others: it is marked without rows", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* seed
          const customerId = yield* customer(fixture)
          yield* touch(fixture, { at: Date.now() - DAY, channel: "email", customerId })
          // An infinite time: the credit models refuse it (a broken row, never written by ingest).
          const poison = yield* conversion(fixture, { at: "-infinity", customerId, definitionId: null })
          yield* sql`UPDATE conversions SET created_at = now() - interval '1 hour' WHERE id = ${poison}`
          const good = yield* conversion(fixture, { at: Date.now() - 1000, customerId, definitionId: null })
          yield* drain
          assert.isTrue(yield* creditedAt(good))
          assert.deepStrictEqual((yield* sumsOf(good)).map((row) => [row.model, row.total]), MODELS.map((model) => [model, "1.0000000000"]))
          assert.isTrue(yield* creditedAt(poison))
          assert.lengthOf(yield* creditsOf(poison), 0)
        }))

      it.effect("several drains at once (several runners) credit each conversion exactly once", () =>
        Effect.gen(function*() {
          const fixture = yield* seed
          const customerId = yield* customer(fixture)
          const now = Date.now()
          yield* touch(fixture, { at: now - 5 * DAY, channel: "paid_social", customerId })
          yield* touch(fixture, { at: now - 4 * DAY, channel: "email", customerId })
          const ids: Array<string> = []
          for (let i = 0; i < 25; i++) ids.push(yield* conversion(fixture, { at: now - i * 60_000, customerId, definitionId: null }))
          const worker = yield* AttributionWorker
          yield* Effect.all([worker.drainOnce, worker.drainOnce, worker.drainOnce], { concurrency: "unbounded" })
          const sql = yield* SqlClient
          const rows = yield* sql<{ n: number; bad: number; waiting: number }>`
            SELECT (SELECT count(*)::int FROM attribution_credits WHERE conversion_id = ANY(${ids}::uuid[])) AS n,
                   (SELECT count(*)::int FROM (
                      SELECT conversion_id, model FROM attribution_credits WHERE conversion_id = ANY(${ids}::uuid[])
                      GROUP BY conversion_id, model HAVING sum(credit_share) <> 1 OR count(*) <> 2) x) AS bad,
                   (SELECT count(*)::int FROM credit_queue WHERE conversion_id = ANY(${ids}::uuid[])) AS waiting`
          assert.deepStrictEqual(rows[0], { n: 25 * 6 * 2, bad: 0, waiting: 0 })
        }))
    })

    describe("replays", () => {
      it.effect("a replay after a definition's window changes recomputes the profile's credits in batches; replay-status follows it", () =>
        Effect.gen(function*() {
          const fixture = yield* seed
          const goal = yield* defineGoal(fixture, { conversion_key: "purchase", name: "Purchase", event_names: ["purchase"] })
          const { conversionId, direct, email } = yield* journey(fixture, goal.data.id)
          // More conversions than one replay batch (3 here).
          const customerId = yield* customer(fixture)
          for (let i = 0; i < 4; i++) yield* conversion(fixture, { at: Date.now() - (i + 1) * 1000, customerId, definitionId: goal.data.id })
          yield* drain
          assert.lengthOf((yield* creditsOf(conversionId)).filter((row) => row.model === "linear"), 3)

          const empty = yield* seed
          assert.deepStrictEqual((yield* send(empty.key, "GET", "/api/v1/tracking/replay-status")).json, { data: null })

          const patched = yield* send(fixture.key, "PATCH", `/api/v1/goals/definitions/${goal.data.id}`, { lookback_window_days: 15 })
          assert.strictEqual(patched.status, 200, patched.text)
          const jobId = patched.json.meta.replay_job_id
          const queued = yield* send(fixture.key, "GET", "/api/v1/tracking/replay-status")
          assert.strictEqual(queued.status, 200)
          assert.deepStrictEqual(
            { ...queued.json.data, created_at: "" },
            {
              job_id: jobId,
              state: "queued",
              reason: "definitions_changed",
              progress: 0,
              total: null,
              attempts: 0,
              created_at: "",
              started_at: null,
              finished_at: null,
              error: null
            }
          )

          const result = yield* drain
          assert.deepStrictEqual(
            result.replays.filter((outcome) => outcome.jobId === jobId),
            [{ jobId, profileId: fixture.profileId, state: "succeeded", progress: 5 }]
          )
          assert.deepStrictEqual(
            (yield* creditsOf(conversionId)).filter((row) => row.model === "linear").map((row) => [row.touch_id, row.credit_share]),
            [[direct, "0.5000000000"], [email, "0.5000000000"]],
            "the paid_search touch 20 days before is outside the new 15-day window"
          )
          for (const row of yield* sumsOf(conversionId)) assert.isTrue(row.sums_to_one, row.model)
          const done = yield* send(fixture.key, "GET", "/api/v1/tracking/replay-status")
          assert.strictEqual(done.json.data.job_id, jobId)
          assert.strictEqual(done.json.data.state, "succeeded")
          assert.strictEqual(done.json.data.progress, 5)
          assert.strictEqual(done.json.data.total, 5)
          assert.strictEqual(done.json.data.attempts, 1)
          assert.isString(done.json.data.started_at)
          assert.isString(done.json.data.finished_at)
          assert.isNull(done.json.data.error)

          // replay-status shows a job mid-way as it is.
          const sql = yield* SqlClient
          yield* sql`UPDATE work_jobs SET state = 'running', progress = 3, total = 10, lease_until = now() + interval '1 hour' WHERE id = ${jobId}`
          const midway = yield* send(fixture.key, "GET", "/api/v1/tracking/replay-status")
          assert.deepStrictEqual([midway.json.data.state, midway.json.data.progress, midway.json.data.total], ["running", 3, 10])
          yield* sql`UPDATE work_jobs SET state = 'succeeded', lease_until = NULL WHERE id = ${jobId}`
        }))

      it.effect("a replay left running by a runner that died is claimed again once its lease expires, and finished", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* seed
          const { conversionId } = yield* journey(fixture, null)
          yield* drain
          assert.lengthOf(yield* sumsOf(conversionId), 6)
          yield* sql`DELETE FROM attribution_credits WHERE conversion_id = ${conversionId}`

          // The runner died mid-replay: the job says running, its lease ran out a minute ago.
          const orphan = crypto.randomUUID()
          yield* sql`
            INSERT INTO work_jobs (id, profile_id, kind, reason, state, progress, total, attempts, started_at, lease_until)
            VALUES (${orphan}, ${fixture.profileId}, 'attribution_replay', 'definitions_changed', 'running', 1, 1, 1,
                    now() - interval '5 minutes', now() - interval '1 minute')`
          // Another profile's replay held by a live runner is left alone.
          const other = yield* seed
          const held = crypto.randomUUID()
          yield* sql`
            INSERT INTO work_jobs (id, profile_id, kind, reason, state, attempts, started_at, lease_until)
            VALUES (${held}, ${other.profileId}, 'attribution_replay', 'recompute_requested', 'running', 1, now(), now() + interval '1 hour')`
          // And one whose runner died on its last attempt is failed, not retried forever.
          const exhausted = crypto.randomUUID()
          yield* sql`
            INSERT INTO work_jobs (id, profile_id, kind, reason, state, attempts, started_at, lease_until)
            VALUES (${exhausted}, ${other.profileId}, 'attribution_replay', 'recompute_requested', 'running',
                    ${defaultWorkerSettings.maxAttempts}, now() - interval '1 hour', now() - interval '1 minute')`

          const result = yield* drain
          assert.deepStrictEqual(result.replays.filter((outcome) => outcome.jobId === orphan).map((outcome) => outcome.state), ["succeeded"])
          assert.deepStrictEqual(yield* job(orphan), { state: "succeeded", attempts: 2, progress: 1, total: 1, error: null, leased: false })
          assert.deepStrictEqual((yield* sumsOf(conversionId)).map((row) => row.total), MODELS.map(() => "1.0000000000"))
          assert.deepStrictEqual(yield* job(held), { state: "running", attempts: 1, progress: 0, total: null, error: null, leased: true })
          const failed = yield* job(exhausted)
          assert.strictEqual(failed?.state, "failed")
          assert.strictEqual(failed?.error, "lease_expired")
          yield* sql`UPDATE work_jobs SET state = 'failed', lease_until = NULL WHERE id = ${held}`
        }))

      it.effect("a runner stopped mid-replay hands the job back at once; the next claim finishes it", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* seed
          const customerId = yield* customer(fixture)
          yield* touch(fixture, { at: Date.now() - DAY, channel: "email", customerId })
          yield* sql`
            WITH e AS (
              INSERT INTO outcome_events (id, profile_id, idempotency_key, request_hash, event_name, occurred_at, customer_id)
              SELECT gen_random_uuid(), ${fixture.profileId}, 'bulk-' || g, 'test', 'purchase', now() - g * interval '1 second', ${customerId}
              FROM generate_series(1, 600) AS g
              RETURNING id, idempotency_key, occurred_at),
            k AS (
              INSERT INTO outcome_keys (profile_id, idempotency_key, outcome_event_id, occurred_at)
              SELECT ${fixture.profileId}, e.idempotency_key, e.id, e.occurred_at FROM e)
            INSERT INTO conversions (id, profile_id, outcome_event_id, conversion_key, occurred_at, customer_id, counts_as_cash, attribution_eligible)
            SELECT gen_random_uuid(), ${fixture.profileId}, e.id, 'purchase', e.occurred_at, ${customerId}, false, true FROM e`
          const recompute = yield* send(fixture.key, "POST", "/api/v1/attribution/recompute")
          const jobId: string = recompute.json.data.job_id
          const worker = yield* AttributionWorker
          const fiber = yield* Effect.forkChild(worker.runNextReplay)
          const seen = yield* eventually(job(jobId), (row) => row?.state === "running" && row.progress > 0, {
            what: "the replay to be under way",
            within: "2 seconds",
            every: "10 millis"
          })
          assert.strictEqual(seen?.state, "running", "the replay is under way (200 batches of 3)")
          yield* Fiber.interrupt(fiber)
          const released = yield* job(jobId)
          assert.strictEqual(released?.state, "queued")
          assert.strictEqual(released?.attempts, 1)
          assert.isFalse(released?.leased)

          const result = yield* drain
          assert.deepStrictEqual(result.replays.filter((outcome) => outcome.jobId === jobId).map((outcome) => outcome.state), ["succeeded"])
          const finished = yield* job(jobId)
          assert.deepStrictEqual([finished?.state, finished?.attempts, finished?.progress, finished?.total], ["succeeded", 2, 600, 600])
          const [waiting] = yield* sql<{ n: number }>`
            SELECT count(*)::int AS n FROM credit_queue WHERE profile_id = ${fixture.profileId}`
          assert.strictEqual(waiting?.n, 0)
        }))

      it.effect("an attempt after an interrupted one skips the parts that attempt committed, and recomputes the others", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* seed
          const partOf = (customerId: string) =>
            Effect.map(
              sql<{ part: number }>`SELECT (hashtext(${customerId}::text) & 2147483647) % 2 AS part`,
              (rows) => rows[0]?.part ?? -1
            )
          // Journeys until two customers fall in different parts of a split in two (the replay's hash).
          const first = yield* journey(fixture, null)
          const firstPart = yield* partOf(first.customerId)
          const others: Array<string> = []
          let second: string | undefined
          while (second === undefined) {
            const next = yield* journey(fixture, null)
            if ((yield* partOf(next.customerId)) === firstPart) others.push(next.conversionId)
            else second = next.conversionId
          }
          yield* drain
          yield* sql`DELETE FROM attribution_credits WHERE profile_id = ${fixture.profileId}`
          // An earlier attempt split the profile in two and committed the first conversion's part, then its runner died.
          const total = 2 + others.length
          const jobId = crypto.randomUUID()
          yield* sql`
            INSERT INTO work_jobs (id, profile_id, kind, reason, state, progress, total, attempts, started_at, lease_until, parts, parts_done)
            VALUES (${jobId}, ${fixture.profileId}, 'attribution_replay', 'recompute_requested', 'running', 1, ${total}, 1,
                    now() - interval '5 minutes', now() - interval '1 minute', 2, ARRAY[${firstPart}]::int[])`
          const result = yield* drain
          assert.deepStrictEqual(result.replays.filter((outcome) => outcome.jobId === jobId).map((outcome) => outcome.state), ["succeeded"])
          assert.deepStrictEqual(yield* job(jobId), { state: "succeeded", attempts: 2, progress: total, total, error: null, leased: false })
          for (const id of [first.conversionId, ...others]) assert.lengthOf(yield* creditsOf(id), 0, "the committed part is not recomputed")
          assert.deepStrictEqual((yield* sumsOf(second)).map((row) => row.total), MODELS.map(() => "1.0000000000"))
          const [recorded] = yield* sql<{ parts: number; done: ReadonlyArray<number> }>`
            SELECT parts, parts_done AS done FROM work_jobs WHERE id = ${jobId}`
          assert.deepStrictEqual([recorded?.parts, [...(recorded?.done ?? [])].sort()], [2, [0, 1]], "both parts recorded as done")
        }))

      it.effect("deleting a touch or a conversion deletes its credit rows (what the foreign keys' cascade did)", () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient
          const fixture = yield* seed
          const { conversionId, email } = yield* journey(fixture, null)
          const other = yield* journey(fixture, null)
          yield* drain
          assert.lengthOf((yield* creditsOf(conversionId)).filter((row) => row.touch_id === email), 6)
          yield* sql`DELETE FROM touches WHERE id = ${email}`
          assert.lengthOf((yield* creditsOf(conversionId)).filter((row) => row.touch_id === email), 0)
          assert.lengthOf((yield* creditsOf(conversionId)).filter((row) => row.model === "linear"), 2, "the other touches' rows stay")
          yield* sql`DELETE FROM conversions WHERE id = ${conversionId}`
          assert.lengthOf(yield* creditsOf(conversionId), 0)
          assert.lengthOf(yield* sumsOf(other.conversionId), 6, "another conversion's rows stay")
          const refused = yield* Effect.exit(sql`UPDATE touches SET id = ${crypto.randomUUID()} WHERE id = ${other.email}`)
          assert.strictEqual(refused._tag, "Failure", "a referenced touch keeps its key")
        }))

      it.effect("POST /api/v1/attribution/recompute answers 202 with the queued job, joins it on a repeat, and the worker runs it", () =>
        Effect.gen(function*() {
          const fixture = yield* seed
          const { conversionId } = yield* journey(fixture, null)
          const first = yield* send(fixture.key, "POST", "/api/v1/attribution/recompute")
          assert.strictEqual(first.status, 202, first.text)
          assert.strictEqual(first.json.data.state, "queued")
          assert.strictEqual(first.json.data.reason, "recompute_requested")
          assert.deepStrictEqual(first.json.meta, { coalesced: false })
          const again = yield* send(fixture.key, "POST", "/api/v1/attribution/recompute", undefined, { "idempotency-key": "r-1" })
          assert.strictEqual(again.status, 202)
          assert.strictEqual(again.json.data.job_id, first.json.data.job_id)
          assert.deepStrictEqual(again.json.meta, { coalesced: true })
          const replayed = yield* send(fixture.key, "POST", "/api/v1/attribution/recompute", undefined, { "idempotency-key": "r-1" })
          assert.strictEqual(replayed.status, 202)
          assert.strictEqual(replayed.headers.get("idempotent-replayed"), "true")

          const reader = yield* seedApiKey(fixture, { scopes: ["analytics:read"] })
          const refused = yield* send(reader.key, "POST", "/api/v1/attribution/recompute")
          assert.strictEqual(refused.status, 403)
          assert.strictEqual(refused.json.error.code, "insufficient_scope")
          assert.strictEqual((yield* send(reader.key, "GET", "/api/v1/tracking/replay-status")).status, 200)

          yield* drain
          assert.strictEqual((yield* job(first.json.data.job_id))?.state, "succeeded")
          assert.isTrue(yield* creditedAt(conversionId))
          assert.strictEqual((yield* send(fixture.key, "GET", "/api/v1/tracking/replay-status")).json.data.state, "succeeded")
        }))
    })
  }
)

const background = Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, pollInterval: Duration.millis(200) })

layer(serveApp(testSettings()).pipe(Layer.provide(background)), { timeout: "120 seconds", excludeTestServices: true })(
  "attribution worker (background fibers)",
  (it) => {
    it.effect("credits a new conversion and runs a queued replay without being asked", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const { conversionId } = yield* journey(fixture, null)
        yield* eventually(creditedAt(conversionId), (credited) => credited, {
          what: "the background worker to credit the conversion",
          within: "15 seconds"
        })
        assert.lengthOf(yield* sumsOf(conversionId), 6)
        const recompute = yield* send(fixture.key, "POST", "/api/v1/attribution/recompute")
        assert.strictEqual(recompute.status, 202)
        yield* eventually(job(recompute.json.data.job_id), (row) => row?.state === "succeeded", {
          what: "the replay to finish in the background",
          within: "15 seconds"
        })
      }))
  }
)

// SVC_WORKERS=off (decision 0139): the same fast-polling settings as above, but this process works
// no queue; its AttributionWorker service still answers a drain asked of it.
layer(serveApp(testSettings({ workers: false })).pipe(Layer.provide(background)), { timeout: "120 seconds", excludeTestServices: true })(
  "attribution worker with SVC_WORKERS=off",
  (it) => {
    it.effect("credits nothing by itself; a drain asked of its service still credits", () =>
      Effect.gen(function*() {
        const fixture = yield* seed
        const { conversionId } = yield* journey(fixture, null)
        // An absence can only be watched for a while: ten of the polls the worker would make.
        yield* Effect.sleep(Duration.millis(2_000))
        assert.isFalse(yield* creditedAt(conversionId))
        const worker = yield* AttributionWorker
        const drained = yield* worker.drainOnce
        assert.isAtLeast(drained.credited, 1)
        assert.isTrue(yield* creditedAt(conversionId))
        assert.lengthOf(yield* sumsOf(conversionId), 6)
      }))
  }
)
