/**
 * Recovery in seconds (issue 34, decision 0119): work whose holder stops renewing its lease is
 * taken over within 10 s, and work whose holder keeps renewing it is never taken, however long it
 * runs. With the default (short) lease, a webhook delivery and a sync job are claimed and held by a
 * heartbeat for longer than the lease while other claims poll and must not get them; then the
 * heartbeat stops, as it does when the process is killed, and the next claim that gets the work is
 * timed (polled with a deadline, no fixed sleep). The first holder, renewing again, learns the work
 * is gone and stops without writing. The renewals (webhooks per process, exports per batch, report
 * runs and customer lists per run) read through the primary key in their generic plan, whatever the
 * statistics. Report runs and customer lists are taken over in their own files (reports,
 * audiences-customer-list).
 */
import { assert, layer } from "@effect/vitest"
import { Cause, Duration, Effect, Exit, Fiber, Layer, Option, Scope } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { renewStatement as renewReports } from "../../src/analytics/reports/repo.ts"
import { renewListStatement as renewCustomerList } from "../../src/exports/audiences/repo.ts"
import { renewStatement as renewExports } from "../../src/exports/pipeline/repo.ts"
import { REPLAY_JOB_KIND, ReplayQueue } from "../../src/attribution/jobs/repo.ts"
import { AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { emptyProgress, SyncJobsRepo } from "../../src/ingestion/sync/repo.ts"
import { defaultSyncWorkerSettings, SyncWorkerSettings } from "../../src/ingestion/sync/worker.ts"
import { PgClient } from "@effect/sql-pg"
import * as Reactivity from "effect/reactivity/Reactivity"
import { AppConfig } from "../../src/platform/config.ts"
import { DatabaseInfo, postgresOptions } from "../../src/platform/database.ts"
import { RunnerLiveness } from "../../src/platform/liveness.ts"
import { keyedWriteSettings } from "../../src/platform/claim-settings.ts"
import { heartbeat, LeaseLost, leaseSecondsOf, whileLeased } from "../../src/platform/lease.ts"
import { renewStatement as renewDeliveries } from "../../src/webhooks/delivery/repo.ts"
import { defaultWebhookSettings, WebhookDeliveries, WebhookSettings } from "../../src/webhooks/delivery/service.ts"
import { serveApp, testSettings } from "../support/app.ts"
import { seedProfile } from "../support/tenancy.ts"
import { holdFor, neverTaken, TAKEOVER_BOUND, takenWithin } from "../support/takeover.ts"

const manual = Layer.mergeAll(
  Layer.succeed(SyncWorkerSettings)({ ...defaultSyncWorkerSettings, enabled: false }),
  Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false }),
  Layer.succeed(WebhookSettings)({ ...defaultWebhookSettings, enabled: false })
)

/** A bound parameter as an SQL literal (EXECUTE takes its arguments as text; the statement's casts type them). */
const literal = (value: unknown): string => {
  if (Array.isArray(value)) return literal(`{${value.map((item) => `"${String(item)}"`).join(",")}}`)
  if (typeof value === "number" || typeof value === "boolean") return String(value)
  return `'${String(value).replace(/'/g, "''")}'`
}

layer(
  Layer.provideMerge(Layer.mergeAll(WebhookDeliveries.layer, SyncJobsRepo.layer), serveApp(testSettings())).pipe(Layer.provide(manual)),
  { timeout: "120 seconds", excludeTestServices: true }
)("lease take-over", (it) => {
  it.effect("a webhook delivery held by the heartbeat stays its holder's; abandoned, the next claim takes it within 10 s", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const webhooks = yield* WebhookDeliveries
      const profile = yield* seedProfile()
      const subscriptionId = crypto.randomUUID()
      const deliveryId = crypto.randomUUID()
      // https, so this process (no development allow-list) claims it; the secret never opens: the
      // held attempt is not run until its lease is gone.
      yield* sql`
        INSERT INTO webhook_subscriptions (id, profile_id, workspace_id, url, event_types, status, secret_sealed)
        VALUES (${subscriptionId}, ${profile.profileId}, ${profile.workspaceId}, 'https://hooks.example.com/lease', '{outcome.recorded}', 'active', 'x')`
      yield* sql`
        INSERT INTO webhook_deliveries (id, subscription_id, profile_id, outbox_id, event_id, event_type, body, batch_id, seq, ready, next_attempt_at)
        VALUES (${deliveryId}, ${subscriptionId}, ${profile.profileId}, ${crypto.randomUUID()}, 'evt-lease', 'outcome.recorded', '{}',
                ${crypto.randomUUID()}, 0, true, now() - interval '1 minute')`
      const ours = <A extends { readonly subscriptionId: string }>(claimed: ReadonlyArray<A>) => claimed.filter((c) => c.subscriptionId === subscriptionId)
      const first = ours(yield* webhooks.claimDue(100, []))
      assert.lengthOf(first, 1)

      const lease = defaultWebhookSettings.lease
      const beating = yield* Effect.forkChild(heartbeat(lease, webhooks.renewHeld))
      yield* neverTaken(Effect.map(webhooks.claimDue(100, []), (claimed) => ours(claimed).length > 0), holdFor(lease), "the delivery")
      // The process dies: no more renewals.
      yield* Fiber.interrupt(beating)
      const took = yield* takenWithin(Effect.map(webhooks.claimDue(100, []), (claimed) => ours(claimed).length > 0), "the delivery taken over")
      console.log(`webhook delivery taken over ${took} ms after the last heartbeat stopped (lease ${Duration.format(lease)})`)
      assert.isBelow(took, Duration.toMillis(TAKEOVER_BOUND))

      // The first holder's next renewal finds the row another's: its attempt stops, nothing written.
      yield* webhooks.renewHeld
      assert.strictEqual(yield* first[0]!.run, "lease_lost")
      const [row] = yield* sql<{ attempts: number; logged: number }>`
        SELECT attempts, (SELECT count(*)::int FROM webhook_delivery_attempts WHERE delivery_id = ${deliveryId}) AS logged
        FROM webhook_deliveries WHERE id = ${deliveryId}`
      // Attempts count what was recorded (the attempt log's entries): neither claim recorded one.
      assert.deepStrictEqual(row, { attempts: 0, logged: 0 })
    }))

  it.effect("the renewals read through the primary key in their generic plan (no statistics needed)", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const held = [{ id: crypto.randomUUID(), token: crypto.randomUUID() }, { id: crypto.randomUUID(), token: crypto.randomUUID() }]
      // Each with the settings its transaction runs first, if any (the keyed renewals, decision 0153).
      const keyed = keyedWriteSettings(sql).compile()[0]
      const statements = [
        ["webhook_deliveries_pkey", renewDeliveries(sql, held, 8).compile(), keyed],
        ["conversion_exports_pkey", renewExports(sql, held.map((h) => ({ id: h.id, lease_token: h.token })), 8).compile(), keyed],
        ["report_runs_pkey", renewReports(sql, held[0]!.id, held[0]!.id, 1, "running", 8).compile(), undefined],
        ["customer_list_audiences_pkey", renewCustomerList(sql, { profileId: held[0]!.id, token: held[0]!.token }, 8).compile(), undefined]
      ] as const
      for (const [index, [text, params], settings] of statements) {
        // One connection for the session's setting, the prepared statement and its plan.
        const plan = yield* sql.withTransaction(Effect.gen(function*() {
          if (settings !== undefined) yield* sql.unsafe(settings)
          yield* sql.unsafe(`SET LOCAL plan_cache_mode = force_generic_plan`)
          yield* sql.unsafe(`PREPARE renewal AS ${text}`)
          const rows = yield* sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN EXECUTE renewal(${params.map(literal).join(", ")})`)
          yield* sql.unsafe(`DEALLOCATE renewal`)
          return rows.map((row) => row["QUERY PLAN"]).join("\n")
        }))
        assert.include(plan, index, plan)
        assert.notInclude(plan, "Seq Scan", plan)
      }
    }))

  it.effect("a sync job held by the heartbeat stays its holder's; abandoned, the next claim takes it within 10 s", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const jobs = yield* SyncJobsRepo
      // Due before anything else in the queue: the claims below get this job first.
      const jobId = yield* queuedSyncJob("1999-01-01T00:00:00Z")
      const lease = defaultSyncWorkerSettings.lease
      const leaseSeconds = leaseSecondsOf(lease)
      const maxAttempts = defaultSyncWorkerSettings.maxAttempts
      const claimOurs = Effect.map(jobs.claim(maxAttempts, leaseSeconds, null), Option.filter((job) => job.id === jobId))
      const claimed = yield* claimOurs
      assert.isTrue(Option.isSome(claimed))
      const job = Option.getOrThrow(claimed)

      // The worker's own wrapping: the work here only waits; the heartbeat keeps the job.
      const holder = yield* Effect.forkChild(whileLeased(job.id, lease, jobs.renew(job, emptyProgress, leaseSeconds))(Effect.never))
      yield* neverTaken(Effect.map(claimOurs, Option.isSome), holdFor(lease), "the sync job")
      yield* Fiber.interrupt(holder)
      const took = yield* takenWithin(Effect.map(claimOurs, Option.isSome), "the sync job taken over")
      console.log(`sync job taken over ${took} ms after the last heartbeat stopped (lease ${Duration.format(lease)})`)
      assert.isBelow(took, Duration.toMillis(TAKEOVER_BOUND))

      // The first holder, renewing again, learns the job is gone and stops with LeaseLost.
      const stale = yield* Effect.exit(whileLeased(job.id, lease, jobs.renew(job, emptyProgress, leaseSeconds))(Effect.never))
      assert.isTrue(Exit.isFailure(stale))
      if (Exit.isFailure(stale)) assert.instanceOf(Option.getOrThrow(Cause.findErrorOption(stale.cause)), LeaseLost)
      const [row] = yield* sql<{ attempts: number; status: string }>`SELECT attempts, status FROM sync_jobs WHERE id = ${jobId}`
      assert.deepStrictEqual(row, { attempts: 2, status: "running" })
    }))
})

layer(
  Layer.provideMerge(Layer.mergeAll(SyncJobsRepo.layer, ReplayQueue.layer), serveApp(testSettings())).pipe(Layer.provide(manual)),
  { timeout: "120 seconds", excludeTestServices: true }
)("lease take-over by liveness (decision 0150)", (it) => {
  it.effect("this process names a key whose advisory lock it holds", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const liveness = yield* RunnerLiveness
      const key = yield* pollFor(liveness.holder)
      const [row] = yield* sql<{ held: boolean }>`
        SELECT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
          AND l.classid = (${key}::bigint >> 32)::oid AND l.objid = (${key}::bigint & 4294967295)::oid) AS held`
      assert.isTrue(row?.held)
    }))

  it.effect("a sync job whose holder's session ended is taken over at once; while it lives, never", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const jobs = yield* SyncJobsRepo
      const jobId = yield* queuedSyncJob("1998-01-01T00:00:00Z")
      const maxAttempts = defaultSyncWorkerSettings.maxAttempts
      yield* takenOverByLiveness("sync job", {
        claim: (holder) => Effect.map(jobs.claim(maxAttempts, TEN_MINUTES, holder), (job) => Option.isSome(job) && job.value.id === jobId),
        anyClaimable: jobs.anyClaimable(maxAttempts),
        row: Effect.map(
          sql<{ attempts: number; state: string; lease_holder: string | null }>`
            SELECT attempts, status AS state, lease_holder::text AS lease_holder FROM sync_jobs WHERE id = ${jobId}`,
          (rows) => rows[0]
        )
      })
    }))

  it.effect("a replay whose holder's session ended is taken over at once; while it lives, never", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const replays = yield* ReplayQueue
      const profile = yield* seedProfile()
      const jobId = crypto.randomUUID()
      yield* sql`
        INSERT INTO work_jobs (id, profile_id, kind, reason, state, created_at)
        VALUES (${jobId}, ${profile.profileId}, ${REPLAY_JOB_KIND}, 'recompute_requested', 'queued', '1998-01-01T00:00:00Z')`
      const maxAttempts = defaultWorkerSettings.maxAttempts
      yield* takenOverByLiveness("replay", {
        claim: (holder) => Effect.map(replays.claim(maxAttempts, TEN_MINUTES, holder), (job) => Option.isSome(job) && job.value.id === jobId),
        anyClaimable: replays.anyClaimable(maxAttempts),
        row: Effect.map(
          sql<{ attempts: number; state: string; lease_holder: string | null }>`
            SELECT attempts, state, lease_holder::text AS lease_holder FROM work_jobs WHERE id = ${jobId}`,
          (rows) => rows[0]
        )
      })
    }))
})

const TEN_MINUTES = 600

/**
 * A job claimed under another runner's key (a session of its own holding the key, as
 * RunnerLiveness does) with a ten-minute lease: nobody takes it while that session lives; once it
 * ends (the process died: the server closes its sessions) the job is claimable within seconds,
 * and of claimers at once, as the loops of a restarted runner claim, exactly one takes it. On the
 * embedded database (this process's one session) the lock is taken and let go instead.
 */
const takenOverByLiveness = <E, R>(what: string, job: {
  readonly claim: (holder: string | null) => Effect.Effect<boolean, E, R>
  readonly anyClaimable: Effect.Effect<boolean, E, R>
  readonly row: Effect.Effect<{ readonly attempts: number; readonly state: string; readonly lease_holder: string | null } | undefined, E | SqlError, R>
}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const info = yield* DatabaseInfo
    const settings = yield* AppConfig
    const liveness = yield* RunnerLiveness
    const key = String(4_000_000_000_000 + Math.floor(Math.random() * 1_000_000_000))
    const scope = yield* Scope.make()
    const other = info.mode === "postgres" && Option.isSome(settings.databaseUrl)
      ? yield* PgClient.make({ ...postgresOptions(settings.databaseUrl.value), maxConnections: 1 }).pipe(Scope.provide(scope), Effect.provide(Reactivity.layer))
      : sql
    const [locked] = yield* other<{ locked: boolean }>`SELECT pg_try_advisory_lock(${key}::bigint) AS locked`
    assert.isTrue(locked?.locked)

    assert.isTrue(yield* job.claim(key))
    assert.isFalse(yield* job.claim(null))
    assert.isFalse(yield* job.anyClaimable)

    if (other === sql) yield* sql`SELECT pg_advisory_unlock(${key}::bigint)`
    yield* Scope.close(scope, Exit.void)

    const started = Date.now()
    yield* pollFor(Effect.map(job.anyClaimable, (flag) => flag ? true : null))
    const took = Date.now() - started
    console.log(`${what} claimable ${took} ms after its holder's session ended (lease ${TEN_MINUTES} s)`)
    assert.isBelow(took, 5_000)
    const live = yield* pollFor(liveness.holder)
    const claims = yield* Effect.all(Array.from({ length: 6 }, () => job.claim(live)), { concurrency: "unbounded" })
    assert.strictEqual(claims.filter(Boolean).length, 1)
    assert.deepStrictEqual(yield* job.row, { attempts: 2, state: "running", lease_holder: live })
  })

/** A queued backfill of a new connection of a new profile, due (and created) at `at`; answers its id. */
const queuedSyncJob = (at: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const profile = yield* seedProfile()
    const connectionId = crypto.randomUUID()
    const jobId = crypto.randomUUID()
    yield* sql`
      INSERT INTO connections (id, profile_id, provider, provider_kind, external_account_id, display_name)
      VALUES (${connectionId}, ${profile.profileId}, 'adplatform', 'adplatform', ${`act-${connectionId.slice(0, 8)}`}, 'Ads')`
    yield* sql`
      INSERT INTO sync_jobs (id, profile_id, connection_id, kind, window_days, status, reason, run_after, created_at)
      VALUES (${jobId}, ${profile.profileId}, ${connectionId}, 'backfill', 30, 'queued', 'entitlement', ${at}, ${at})`
    return jobId
  })

/** Polls `probe` until it answers something other than null (deadline 10 s). */
const pollFor = <A, E, R>(probe: Effect.Effect<A | null, E, R>) =>
  Effect.gen(function*() {
    const deadline = Date.now() + 10_000
    while (true) {
      const value = yield* probe
      if (value !== null) return value
      if (Date.now() > deadline) return yield* Effect.die(new Error("not within 10 s"))
      yield* Effect.sleep("50 millis")
    }
  })
