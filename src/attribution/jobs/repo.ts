/**
 * The durable queue of full-profile attribution replays: `work_jobs` rows of kind
 * `attribution_replay` (migrations/0009_outcomes.ts), queued by every domain that changes what
 * crediting reads and claimed by the worker (src/attribution/worker.ts). Enqueueing coalesces:
 * while a replay of the profile is still `queued` (not yet claimed by a runner) a new request
 * joins it, since that replay will read everything as it is when it starts. A `running` replay
 * has already read part of the profile, so a change made meanwhile queues a new one.
 * Decision 0030.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Fragment } from "effect/sql/Statement"
import { ReplayJob } from "../../../schema/attribution.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { orderedClaimSettings } from "../../platform/claim-settings.ts"
import { atDatabaseBoundary, decodeFirstRow, orDatabaseUnavailable } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"
import { currentTraceContext } from "../../platform/tracing.ts"
import { orphanedLease, reapStatement } from "../../platform/liveness.ts"

export const REPLAY_JOB_KIND = "attribution_replay"

/**
 * The statements of a claim (see `claim`): `reap` ends the leases of runners that died (decision
 * 0150), `sweep` fails the jobs whose runner died on their last attempt (nothing will retry them),
 * `claim` takes the oldest claimable one (queued and due, or running with an expired lease; never
 * while the profile has a live replay), `probe` says whether any of them would find one.
 * test/api/queue-claim-plans.test.ts checks their generic plans' cost at growing backlogs.
 */
export const claimStatements = (sql: SqlClient, maxAttempts: number, leaseSeconds: number, holder: string | null = null) => {
  // The kind is written into the text, not bound: the planner then matches it to the partial
  // indexes of replays (migration 0057), which a bound parameter's generic plan cannot use.
  const kind = sql.literal(`'${REPLAY_JOB_KIND}'`)
  const exhausted = sql`kind = ${kind} AND state = 'running' AND lease_until < now() AND attempts >= ${maxAttempts}`
  // A running replay whose runner died (its liveness lock is gone) while its lease still runs. The
  // probe writes the kind in (as the exhausted check does), the reap binds it (as the sweep does).
  const running = (kindIs: Fragment | string) => sql`kind = ${kindIs} AND state = 'running'`
  const claimable = sql`
    FROM work_jobs c
    WHERE c.kind = ${kind}
      -- These bounds hold every row; as a two-sided range they are what the planner, without
      -- statistics, reads as a small share of the table, so walking work_jobs_replay_order in claim
      -- order (stopping at the first) costs less than reading every claimable replay (a bitmap) first.
      AND c.created_at > '-infinity'::timestamptz AND c.created_at < 'infinity'::timestamptz
      AND ((c.state = 'queued' AND (c.lease_until IS NULL OR c.lease_until <= now()))
        OR (c.state = 'running' AND c.lease_until < now() AND c.attempts < ${maxAttempts}))
      AND NOT EXISTS (
        SELECT 1 FROM work_jobs r
        WHERE r.profile_id = c.profile_id AND r.kind = ${kind} AND r.state = 'running'
          AND r.lease_until >= now() AND r.id <> c.id)`
  return {
    probe: sql`
      SELECT 1 AS n
      WHERE EXISTS (SELECT 1 ${claimable}) OR EXISTS (SELECT 1 FROM work_jobs WHERE ${exhausted})
         OR EXISTS (SELECT 1 FROM work_jobs WHERE ${orphanedLease(sql, running(kind))})`,
    reap: reapStatement(sql, "work_jobs", running(REPLAY_JOB_KIND)),
    // The kind bound here, not written in: then only the running jobs' partial index matches (the
    // replays' queue index cannot be proven to hold the rows), whatever the table's past.
    sweep: sql`
      UPDATE work_jobs SET state = 'failed', finished_at = now(), lease_until = NULL,
             error = COALESCE(error, 'lease_expired')
      WHERE kind = ${REPLAY_JOB_KIND} AND state = 'running' AND lease_until < now() AND attempts >= ${maxAttempts}`,
    claim: sql`
      UPDATE work_jobs j
      SET state = 'running', attempts = j.attempts + 1, lease_until = now() + make_interval(secs => ${leaseSeconds}),
          lease_holder = ${holder}::bigint, started_at = now(), finished_at = NULL, progress = 0
      WHERE j.id = (SELECT c.id ${claimable} ORDER BY c.created_at, c.id LIMIT 1 FOR UPDATE OF c SKIP LOCKED)
      RETURNING j.id::text AS id, j.profile_id::text AS profile_id, j.attempts, j.reason, j.traceparent, j.tracestate`
  }
}

/** Why a replay was queued (`work_jobs.reason`). Other domains queue with their own reasons. */
export type ReplayReason =
  | "definitions_changed"
  | "recompute_requested"
  | (string & {})

/** A job row: the published `ReplayJob` and the profile it replays. */
export const ReplayJobRow = Schema.Struct({
  ...ReplayJob.fields,
  profile_id: Schema.String
})
export type ReplayJobRow = typeof ReplayJobRow.Type

export const renderReplayJob = (row: ReplayJobRow): ReplayJob => ({
  job_id: row.job_id,
  state: row.state,
  reason: row.reason,
  progress: row.progress,
  total: row.total,
  attempts: row.attempts,
  created_at: row.created_at,
  started_at: row.started_at,
  finished_at: row.finished_at,
  error: row.error
})

export interface Enqueued {
  readonly jobId: string
  /** An already queued replay of the profile was joined; nothing was inserted. */
  readonly coalesced: boolean
}

/** A replay a runner claimed: `attempts` is its fencing token. */
export const ClaimedJob = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  attempts: Schema.Int,
  reason: Schema.String,
  /** The trace that queued it (W3C), null when queued outside a traced request. */
  traceparent: Schema.NullOr(Schema.String),
  tracestate: Schema.NullOr(Schema.String)
})
export type ClaimedJob = typeof ClaimedJob.Type

/** A replay's split: `parts` customer partitions, of which `done` are committed (decision 0131). */
export const ReplayPlan = Schema.Struct({ parts: Schema.Int, done: Schema.Array(Schema.Int) })
export type ReplayPlan = typeof ReplayPlan.Type

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class ReplayQueue extends Context.Service<ReplayQueue, {
  /**
   * Queues a full replay of the profile, or joins the one already queued. Runs in the caller's
   * transaction when there is one (so the replay is queued exactly when the change commits) and
   * in its own otherwise. The queued row is locked (FOR UPDATE), so a runner cannot claim it
   * between this check and the caller's commit: it either waits for the commit (and then reads
   * the change) or has already claimed it (and then this inserts a new job).
   */
  readonly enqueue: (profileId: string, reason: ReplayReason) => Repo<Enqueued>
  /**
   * The transaction-scoped lock that serializes a profile's classification writes and replay
   * enqueues (re-entrant within a transaction, released at commit or rollback).
   */
  readonly lockProfile: (profileId: string) => Repo<void>
  /** The profile's most recent replay, if any. */
  readonly latest: (profileId: string) => Repo<Option.Option<ReplayJobRow>>
  readonly find: (jobId: string) => Repo<Option.Option<ReplayJobRow>>
  /**
   * Work for the replay loop: a claimable job (queued and due, or running with an expired lease
   * and fewer than `maxAttempts` attempts), or an exhausted one to fail.
   */
  readonly anyClaimable: (maxAttempts: number) => Repo<boolean>
  /**
   * Fails the jobs whose runner died on their last attempt (nothing will retry them), then claims
   * the oldest claimable job (never while its profile has a live replay), skipping rows another
   * runner holds: `attempts` + 1, leased for `leaseSeconds`.
   */
  readonly claim: (maxAttempts: number, leaseSeconds: number, holder: string | null) => Repo<Option.Option<ClaimedJob>>
  /** Fenced renewal: sets `progress` (and `total` when given); false when the job is no longer ours. */
  readonly renew: (job: ClaimedJob, progress: number, total: number | null, leaseSeconds: number) => Repo<boolean>
  /** Fenced renewal after a batch: adds `done` to `progress`; false when the job is no longer ours. */
  readonly advance: (job: ClaimedJob, done: number, leaseSeconds: number) => Repo<boolean>
  /**
   * Fenced: how the replay splits its profile (decision 0131). The first attempt records `parts`;
   * a later attempt gets the count recorded then and the parts already committed, to skip them.
   * None when the job is no longer ours.
   */
  readonly plan: (job: ClaimedJob, parts: number) => Repo<Option.Option<ReplayPlan>>
  /**
   * Fenced renewal after a part, in the part's transaction: adds `done` to `progress` and records
   * the part as committed; false when the job is no longer ours.
   */
  readonly advancePart: (job: ClaimedJob, part: number, done: number, leaseSeconds: number) => Repo<boolean>
  /** Fenced: the job succeeded with `progress`; false when it is no longer ours. */
  readonly succeed: (job: ClaimedJob, progress: number) => Repo<boolean>
  /**
   * Fenced: records a failed attempt with its error code; queued again after `retryAfterSeconds`,
   * or `failed` for good when that is null.
   */
  readonly fail: (job: ClaimedJob, code: string, retryAfterSeconds: number | null) => Repo<void>
  /** On shutdown: hand the job back at once instead of waiting for the lease to expire. */
  readonly release: (job: ClaimedJob) => Repo<void>
  /** Runs `effect` in one transaction (the repositories' statements join it): a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/ReplayQueue") {
  static readonly layer = Layer.effect(ReplayQueue)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const firstJob = decodeFirstRow(ReplayJobRow)
      const firstId = decodeFirstRow(Schema.Struct({ id: Schema.String }))
      const firstClaimed = decodeFirstRow(ClaimedJob)
      const firstCount = decodeFirstRow(Schema.Struct({ n: Schema.Int }))
      const firstPlan = decodeFirstRow(ReplayPlan)

      /** The columns of `ReplayJobRow`, from `work_jobs j`. */
      const columns = sql`j.id::text AS job_id, j.profile_id::text AS profile_id, j.state, j.reason, j.progress, j.total, j.attempts,
        ${isoTimestamp(sql, "j.created_at")} AS created_at,
        ${isoTimestamp(sql, "j.started_at")} AS started_at,
        ${isoTimestamp(sql, "j.finished_at")} AS finished_at,
        j.error`

      const lockProfile = (profileId: string) =>
        Effect.asVoid(sql`SELECT true AS locked FROM pg_advisory_xact_lock(hashtextextended(${`attribution_replay:${profileId}`}, 0))`)

      const enqueue = (profileId: string, reason: ReplayReason) =>
        Effect.gen(function*() {
          yield* lockProfile(profileId)
          const queued = yield* firstId(sql`
            SELECT id::text AS id FROM work_jobs
            WHERE profile_id = ${profileId} AND kind = ${REPLAY_JOB_KIND} AND state = 'queued'
            ORDER BY created_at, id LIMIT 1 FOR UPDATE`)
          if (Option.isSome(queued)) return { jobId: queued.value.id, coalesced: true } satisfies Enqueued
          const jobId = crypto.randomUUID()
          // The queuing request's trace, for the replay's span to link to (decision 0083).
          const trace = Option.getOrUndefined(yield* currentTraceContext)
          yield* sql`
            INSERT INTO work_jobs (id, profile_id, kind, reason, state, traceparent, tracestate)
            VALUES (${jobId}, ${profileId}, ${REPLAY_JOB_KIND}, ${reason}, 'queued',
                    ${trace?.traceparent ?? null}, ${trace === undefined || trace.tracestate === "" ? null : trace.tracestate})`
          return { jobId, coalesced: false } satisfies Enqueued
        }).pipe(
          sql.withTransaction,
          Effect.withSpan("ReplayQueue.enqueue", { attributes: { "svc.profile_id": profileId, "svc.replay.reason": reason } })
        )

      const latest = (profileId: string) =>
        firstJob(sql`
          SELECT ${columns} FROM work_jobs j
          WHERE j.profile_id = ${profileId} AND j.kind = ${REPLAY_JOB_KIND}
          ORDER BY j.created_at DESC, j.id DESC LIMIT 1`).pipe(Effect.withSpan("ReplayQueue.latest"))

      const find = (jobId: string) =>
        firstJob(sql`SELECT ${columns} FROM work_jobs j WHERE j.id = ${jobId} AND j.kind = ${REPLAY_JOB_KIND}`).pipe(
          Effect.withSpan("ReplayQueue.find")
        )

      const anyClaimable = (maxAttempts: number) => Effect.map(firstCount(claimStatements(sql, maxAttempts, 0).probe), Option.isSome)

      const claim = (maxAttempts: number, leaseSeconds: number, holder: string | null) =>
        Effect.gen(function*() {
          const statements = claimStatements(sql, maxAttempts, leaseSeconds, holder)
          yield* orderedClaimSettings(sql)
          yield* statements.reap
          yield* statements.sweep
          return yield* firstClaimed(statements.claim)
        }).pipe(sql.withTransaction)

      const renew = (job: ClaimedJob, progress: number, total: number | null, leaseSeconds: number) =>
        Effect.map(
          sql`
            UPDATE work_jobs
            SET progress = ${progress}, total = GREATEST(COALESCE(${total}::int, total), ${progress}),
                lease_until = now() + make_interval(secs => ${leaseSeconds})
            WHERE id = ${job.id} AND attempts = ${job.attempts} AND state = 'running'
            RETURNING id`,
          (rows) => rows.length === 1
        )

      const advance = (job: ClaimedJob, done: number, leaseSeconds: number) =>
        Effect.map(
          sql`
            UPDATE work_jobs
            SET progress = progress + ${done}, total = GREATEST(total, progress + ${done}),
                lease_until = now() + make_interval(secs => ${leaseSeconds})
            WHERE id = ${job.id} AND attempts = ${job.attempts} AND state = 'running'
            RETURNING id`,
          (rows) => rows.length === 1
        )

      const plan = (job: ClaimedJob, parts: number) =>
        firstPlan(sql`
          UPDATE work_jobs SET parts = COALESCE(parts, ${Math.max(1, Math.floor(parts))}::int)
          WHERE id = ${job.id} AND attempts = ${job.attempts} AND state = 'running'
          RETURNING parts, parts_done AS done`)

      const advancePart = (job: ClaimedJob, part: number, done: number, leaseSeconds: number) =>
        Effect.map(
          sql`
            UPDATE work_jobs
            SET progress = progress + ${done}, total = GREATEST(total, progress + ${done}),
                parts_done = array_append(parts_done, ${part}::int),
                lease_until = now() + make_interval(secs => ${leaseSeconds})
            WHERE id = ${job.id} AND attempts = ${job.attempts} AND state = 'running'
            RETURNING id`,
          (rows) => rows.length === 1
        )

      const succeed = (job: ClaimedJob, progress: number) =>
        Effect.map(
          sql`
            UPDATE work_jobs
            SET state = 'succeeded', progress = ${progress}, total = GREATEST(COALESCE(total, 0), ${progress}),
                finished_at = now(), lease_until = NULL, error = NULL
            WHERE id = ${job.id} AND attempts = ${job.attempts} AND state = 'running'
            RETURNING id`,
          (rows) => rows.length === 1
        )

      const fail = (job: ClaimedJob, code: string, retryAfterSeconds: number | null) => {
        const last = retryAfterSeconds === null
        return Effect.asVoid(sql`
          UPDATE work_jobs
          SET state = ${last ? "failed" : "queued"}, error = ${code},
              finished_at = ${last ? sql`now()` : sql`NULL`},
              lease_until = ${last ? sql`NULL` : sql`now() + make_interval(secs => ${retryAfterSeconds})`}
          WHERE id = ${job.id} AND attempts = ${job.attempts} AND state = 'running'
          RETURNING id`)
      }

      const release = (job: ClaimedJob) =>
        Effect.asVoid(sql`
          UPDATE work_jobs SET state = 'queued', lease_until = NULL
          WHERE id = ${job.id} AND attempts = ${job.attempts} AND state = 'running'`)

      return {
        ...atDatabaseBoundary({
          enqueue,
          lockProfile,
          latest,
          find,
          anyClaimable,
          claim,
          renew,
          advance,
          plan,
          advancePart,
          succeed,
          fail,
          release
        }),
        // Generic, so outside `atDatabaseBoundary`'s mapped type; the same mapping for BEGIN and COMMIT.
        transaction: (effect) => orDatabaseUnavailable(sql.withTransaction(effect))
      }
    })
  )
}
