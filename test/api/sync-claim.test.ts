/**
 * One running sync job per connection (decision 0058), enforced by the database (migration
 * 0054: a unique index over running jobs' connection), not by a check that two claimers can
 * both pass: many claims at once against a connection with two queued jobs (a backfill and a
 * manual sync) start exactly one; the other stays queued and is claimed once the first is done.
 * No claim fails for it. The repository is called directly, the worker is off.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Exit, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { type ClaimedSyncJob, emptyProgress, SyncJobsRepo } from "../../src/ingestion/sync/repo.ts"
import { defaultSyncWorkerSettings, SyncWorkerSettings } from "../../src/ingestion/sync/worker.ts"
import { serveApp, testSettings } from "../support/app.ts"
import { seedProfile } from "../support/tenancy.ts"

const manual = Layer.succeed(SyncWorkerSettings)({ ...defaultSyncWorkerSettings, enabled: false })

const MAX_ATTEMPTS = 6
const LEASE_SECONDS = 60
const ROUNDS = 5
const CLAIMERS = 16

/** An ad-platform connection with a backfill and a manual sync queued, due before anything else in the queue. */
const connectionWithTwoJobs = Effect.gen(function*() {
  const sql = yield* SqlClient
  const profile = yield* seedProfile()
  const connectionId = crypto.randomUUID()
  yield* sql`
    INSERT INTO connections (id, profile_id, provider, provider_kind, external_account_id, display_name)
    VALUES (${connectionId}, ${profile.profileId}, 'adplatform', 'adplatform', ${`act-${connectionId.slice(0, 8)}`}, 'Ads')`
  const backfill = crypto.randomUUID()
  const manualSync = crypto.randomUUID()
  yield* sql`
    INSERT INTO sync_jobs (id, profile_id, connection_id, kind, window_days, status, reason, run_after, created_at)
    VALUES (${backfill}, ${profile.profileId}, ${connectionId}, 'backfill', 30, 'queued', 'entitlement', '2000-01-01T00:00:00Z', '2000-01-01T00:00:00Z'),
           (${manualSync}, ${profile.profileId}, ${connectionId}, 'manual', NULL, 'queued', 'requested', '2000-01-01T00:00:00Z', '2000-01-01T00:00:01Z')`
  return { connectionId, jobs: [backfill, manualSync] }
})

const statuses = (connectionId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    return yield* sql<{ id: string; status: string }>`
      SELECT id::text AS id, status FROM sync_jobs WHERE connection_id = ${connectionId} ORDER BY created_at`
  })

layer(Layer.provideMerge(SyncJobsRepo.layer, serveApp(testSettings())).pipe(Layer.provide(manual)), {
  timeout: "120 seconds",
  excludeTestServices: true
})("claiming sync jobs", (it) => {
  it.effect(`${CLAIMERS} claims at once start one job per connection; the other starts once the first is done`, () =>
    Effect.gen(function*() {
      const repo = yield* SyncJobsRepo
      for (let round = 0; round < ROUNDS; round++) {
        const { connectionId, jobs } = yield* connectionWithTwoJobs
        const exits = yield* Effect.forEach(
          Array.from({ length: CLAIMERS }, () => repo.claim(MAX_ATTEMPTS, LEASE_SECONDS, null)),
          Effect.exit,
          { concurrency: "unbounded" }
        )
        // No claim fails because another took the connection's turn.
        assert.deepStrictEqual(exits.filter(Exit.isFailure), [], "no claim fails")
        const claimed = exits.flatMap((exit) => Exit.isSuccess(exit) && Option.isSome(exit.value) ? [exit.value.value] : [])
        const ours = claimed.filter((job) => job.connection_id === connectionId)
        const rows = yield* statuses(connectionId)
        assert.strictEqual(ours.length, 1, `round ${round}: claims of the connection: ${JSON.stringify(ours.map((job) => job.kind))}`)
        const first: ClaimedSyncJob = ours[0]!
        assert.strictEqual(first.id, jobs[0], "the older job goes first")
        assert.deepStrictEqual(rows.map((row) => row.status), ["running", "queued"])

        // While the first runs, the second is not claimable; once it is done, the next claim takes it.
        const meanwhile = yield* repo.claim(MAX_ATTEMPTS, LEASE_SECONDS, null)
        assert.isFalse(Option.isSome(meanwhile) && meanwhile.value.connection_id === connectionId)
        assert.isTrue(yield* repo.succeed(first, emptyProgress))
        const next = yield* repo.claim(MAX_ATTEMPTS, LEASE_SECONDS, null)
        assert.isTrue(Option.isSome(next), "the second job is claimed after the first is done")
        if (Option.isSome(next)) {
          assert.deepStrictEqual([next.value.id, next.value.kind, next.value.attempts], [jobs[1]!, "manual", 1])
          assert.isTrue(yield* repo.succeed(next.value, emptyProgress))
        }
        assert.deepStrictEqual((yield* statuses(connectionId)).map((row) => row.status), ["done", "done"])
      }
    }))

  it.effect("a job still running under an expired lease is taken over before the connection's next job starts", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const repo = yield* SyncJobsRepo
      const { connectionId, jobs } = yield* connectionWithTwoJobs
      // The manual sync's runner died: running, its lease expired, attempt 1 of 6.
      yield* sql`
        UPDATE sync_jobs SET status = 'running', attempts = 1, started_at = now(), lease_until = now() - interval '1 second'
        WHERE id = ${jobs[1]!}`
      const exits = yield* Effect.forEach(
        Array.from({ length: CLAIMERS }, () => repo.claim(MAX_ATTEMPTS, LEASE_SECONDS, null)),
        Effect.exit,
        { concurrency: "unbounded" }
      )
      assert.deepStrictEqual(exits.filter(Exit.isFailure), [])
      const ours = exits.flatMap((exit) =>
        Exit.isSuccess(exit) && Option.isSome(exit.value) && exit.value.value.connection_id === connectionId ? [exit.value.value] : []
      )
      assert.deepStrictEqual(ours.map((job) => [job.id, job.attempts]), [[jobs[1]!, 2]])
      assert.deepStrictEqual((yield* statuses(connectionId)).map((row) => row.status), ["queued", "running"])
    }))
})
