/**
 * The owner of `sync_jobs` (decision 0058): the durable queue of provider syncs. Jobs are queued
 * by the entitlement switch (backfills), the nightly cron, and `POST /api/v1/connections/sync`;
 * the sync worker claims them with a lease (`FOR UPDATE SKIP LOCKED`, one running job per
 * connection, held by a unique index), renews the lease with every page batch and finishes or fails them. `attempts`
 * is the fencing token: a runner whose lease was taken over stops at its next write.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isSqlError } from "effect/sql/SqlError"
import { type SyncJob, SyncJobKind, SyncJobStatus, type SyncProgress } from "../../../schema/connections-sync.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { orderedClaimSettings } from "../../platform/claim-settings.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../platform/database.ts"
import type { Keyset } from "../../platform/pagination.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"
import { currentTraceContext } from "../../platform/tracing.ts"
import { orphanedLease, reapStatement } from "../../platform/liveness.ts"

/**
 * The statements of a claim (see `claim`): `reap` ends the leases of runners that died, `sweep`
 * fails the jobs whose runner died on their last attempt, `claim` takes the oldest claimable job,
 * `probe` says whether any of them would find one.
 * test/api/queue-claim-plans.test.ts checks their generic plans' cost at growing backlogs.
 */
export const claimStatements = (sql: SqlClient, maxAttempts: number, leaseSeconds: number, holder: string | null = null) => {
  const exhausted = sql`status = 'running' AND lease_until < now() AND attempts >= ${maxAttempts}`
  // A running job whose runner died (its liveness lock is gone, decision 0150) while its lease still runs.
  const running = sql`status = 'running'`
  const claimable = sql`
    FROM sync_jobs c
    WHERE ((c.status = 'queued' AND c.run_after <= now())
        OR (c.status = 'running' AND c.lease_until < now() AND c.attempts < ${maxAttempts}))
      AND NOT EXISTS (
        SELECT 1 FROM sync_jobs r WHERE r.connection_id = c.connection_id AND r.status = 'running' AND r.id <> c.id)
      -- A queued job only as its connection's oldest waiting one: a claimer that skips the older one
      -- (locked by another claimer) must not take the newer one and run it first (migration 0062's
      -- index). A job left running under an expired lease holds its connection's turn either way.
      AND (c.status <> 'queued' OR NOT EXISTS (
        SELECT 1 FROM sync_jobs o WHERE o.connection_id = c.connection_id AND o.status = 'queued'
          AND (o.run_after, o.created_at, o.id) < (c.run_after, c.created_at, c.id)))`
  return {
    probe: sql<{ flag: boolean }>`
      SELECT (EXISTS (SELECT 1 ${claimable})
              OR EXISTS (SELECT 1 FROM sync_jobs WHERE ${exhausted})
              OR EXISTS (SELECT 1 FROM sync_jobs WHERE ${orphanedLease(sql, running)})) AS flag`,
    reap: reapStatement(sql, "sync_jobs", running),
    sweep: sql`
      UPDATE sync_jobs SET status = 'failed', finished_at = now(), lease_until = NULL, updated_at = now(),
             error = COALESCE(error, 'lease_expired')
      WHERE ${exhausted}`,
    claim: sql`
      WITH claimed AS (
        UPDATE sync_jobs j
        SET status = 'running', attempts = j.attempts + 1, lease_until = now() + make_interval(secs => ${leaseSeconds}),
            lease_holder = ${holder}::bigint,
            started_at = now(), finished_at = NULL, updated_at = now(), progress = '{}'
        WHERE j.id = (SELECT c.id ${claimable} ORDER BY c.run_after, c.created_at, c.id LIMIT 1 FOR UPDATE OF c SKIP LOCKED)
        RETURNING j.id, j.profile_id, j.connection_id, j.kind, j.window_days, j.attempts, j.traceparent, j.tracestate, j.checkpoint)
      SELECT j.id::text AS id, j.profile_id::text AS profile_id, j.connection_id::text AS connection_id, j.kind,
             j.window_days, j.attempts, j.traceparent, j.tracestate, j.checkpoint, c.provider_kind, c.status AS connection_status,
             (c.disconnected_at IS NULL) AS live, c.currency AS account_currency
      FROM claimed j JOIN connections c ON c.id = j.connection_id`
  }
}

/** The progress column as stored: whatever the last renewal wrote (`{}` before the first). */
const StoredProgress = Schema.Struct({
  phase: Schema.optionalKey(Schema.NullOr(Schema.Literals(["structure", "insights"]))),
  campaigns: Schema.optionalKey(Schema.Int),
  ad_sets: Schema.optionalKey(Schema.Int),
  ads: Schema.optionalKey(Schema.Int),
  insight_rows: Schema.optionalKey(Schema.Int),
  since: Schema.optionalKey(Schema.NullOr(Schema.String)),
  until: Schema.optionalKey(Schema.NullOr(Schema.String)),
  insights_skipped: Schema.optionalKey(Schema.NullOr(Schema.String)),
  products: Schema.optionalKey(Schema.Int),
  orders: Schema.optionalKey(Schema.Int),
  milestones: Schema.optionalKey(Schema.Int),
  deals: Schema.optionalKey(Schema.Int),
  payments: Schema.optionalKey(Schema.Int)
})

export const emptyProgress: SyncProgress = {
  phase: null,
  campaigns: 0,
  ad_sets: 0,
  ads: 0,
  insight_rows: 0,
  since: null,
  until: null,
  insights_skipped: null,
  products: 0,
  orders: 0,
  milestones: 0,
  deals: 0,
  payments: 0
}

const SyncJobRow = Schema.Struct({
  job_id: Schema.String,
  profile_id: Schema.String,
  connection_id: Schema.String,
  kind: SyncJobKind,
  status: SyncJobStatus,
  reason: Schema.NullOr(Schema.String),
  window_days: Schema.NullOr(Schema.Int),
  attempts: Schema.Int,
  progress: Schema.fromJsonString(StoredProgress),
  error: Schema.NullOr(Schema.String),
  run_after: Schema.String,
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String)
})
export type SyncJobRow = typeof SyncJobRow.Type

export const renderSyncJob = (row: SyncJobRow): SyncJob => ({
  job_id: row.job_id,
  connection_id: row.connection_id,
  kind: row.kind,
  status: row.status,
  reason: row.reason,
  window_days: row.window_days,
  attempts: row.attempts,
  progress: { ...emptyProgress, ...row.progress },
  error: row.error,
  run_after: row.run_after,
  created_at: row.created_at,
  started_at: row.started_at,
  finished_at: row.finished_at
})

/** A job a runner claimed, with what the worker needs of its connection and profile. */
export const ClaimedSyncJob = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  connection_id: Schema.String,
  kind: SyncJobKind,
  window_days: Schema.NullOr(Schema.Int),
  attempts: Schema.Int,
  /** The trace that queued it (W3C), null for nightly jobs and jobs queued outside a traced request. */
  traceparent: Schema.NullOr(Schema.String),
  tracestate: Schema.NullOr(Schema.String),
  /** The connection's provider kind, status and account; `live` false once disconnected. */
  provider_kind: Schema.String,
  connection_status: Schema.String,
  live: Schema.Boolean,
  account_currency: Schema.NullOr(Schema.String),
  /** Where an earlier attempt had got to (migration 0030); null for a first attempt or a sync that keeps none. */
  checkpoint: Schema.NullOr(Schema.String)
})
export type ClaimedSyncJob = typeof ClaimedSyncJob.Type

/** A live connection of a profile, as the sync route needs it. */
const SyncableConnection = Schema.Struct({ id: Schema.String, provider_kind: Schema.String, status: Schema.String })
export type SyncableConnection = typeof SyncableConnection.Type

/**
 * Kinds the worker knows how to sync (decision 0058): the ad platform's structure and insights,
 * the CRM's deals (0062), the card gateway's payments (0063), the store's catalogue and orders (0064).
 */
export const SYNCED_PROVIDER_KINDS: ReadonlyArray<string> = ["adplatform", "crm", "cardgw", "commerce"]

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

/** The index that allows one running job per connection (migration 0054). */
const ONE_RUNNING_INDEX = "sync_jobs_one_running"

/** Claims lost in a row to other claimers before this poll gives up (the next poll tries again). */
const CLAIM_CONFLICT_RETRIES = 8

const isRunningConflict = (error: unknown): boolean =>
  isSqlError(error) && error.reason._tag === "UniqueViolation" && error.reason.constraint === ONE_RUNNING_INDEX

export class SyncJobsRepo extends Context.Service<SyncJobsRepo, {
  /** Queues a backfill of `windowDays` for each live ad-platform connection of the profile; answers how many. */
  readonly enqueueBackfills: (profileId: string, windowDays: number, reason: string) => Repo<number>
  /**
   * Queues a job of `kind` on each connection (live, of a kind that syncs), joining the job of
   * the same kind already queued or running on it instead of adding a second.
   */
  readonly enqueue: (
    profileId: string,
    connectionIds: ReadonlyArray<string>,
    kind: SyncJobKind,
    windowDays: number | null,
    reason: string
  ) => Repo<ReadonlyArray<SyncJobRow>>
  /**
   * The nightly run: a structure job for every live connection of a kind that syncs (a CRM's reads
   * its deals), and an insights job of `insightsDays` for ad-platform ones whose profile has the
   * attribution add-on on; joins queued ones.
   */
  readonly enqueueNightly: (insightsDays: number) => Repo<{ readonly structure: number; readonly insights: number }>
  /** The profile's live connections (all of them, or the one named). */
  readonly liveConnections: (profileId: string, connectionId: Option.Option<string>) => Repo<ReadonlyArray<SyncableConnection>>
  readonly find: (profileId: string, jobId: string) => Repo<Option.Option<SyncJobRow>>
  /** The profile's jobs (of one connection, or all), newest first, one more than `limit` to tell whether a page follows. */
  readonly list: (
    profileId: string,
    connectionId: Option.Option<string>,
    limit: number,
    before: Option.Option<Keyset>
  ) => Repo<ReadonlyArray<SyncJobRow>>
  /** True while a job of the connection is running under a live lease (disconnect answers 409 then). */
  readonly isSyncing: (connectionId: string) => Repo<boolean>
  /** Whether the profile's attribution add-on is on now (a person's profile, or `svc_attribution` enabled). */
  readonly attributionOn: (profileId: string) => Repo<boolean>
  readonly anyClaimable: (maxAttempts: number) => Repo<boolean>
  /**
   * Fails jobs whose runner died on their last attempt, then claims the oldest claimable job
   * (queued and due, or running with an expired lease), never while another job of the same
   * connection is running (an expired one is taken over first), skipping rows another runner
   * holds: `attempts` + 1, leased `leaseSeconds`. Losing a connection to a concurrent claimer
   * is not an error: the claim takes another job, or none. A job whose runner died (`holder`
   * keys, decision 0150) is taken over at once; the claimed lease names `holder` (null: none).
   */
  readonly claim: (maxAttempts: number, leaseSeconds: number, holder: string | null) => Repo<Option.Option<ClaimedSyncJob>>
  /**
   * Fenced renewal with the progress so far (and, when given, where the job has got to: a later
   * attempt resumes there); false when the job is no longer ours.
   */
  readonly renew: (job: ClaimedSyncJob, progress: SyncProgress, leaseSeconds: number, checkpoint?: string) => Repo<boolean>
  /** Fenced: done; false when it is no longer ours. */
  readonly succeed: (job: ClaimedSyncJob, progress: SyncProgress) => Repo<boolean>
  /** Fenced: a failed attempt, queued again after `retryAfterSeconds`, or `failed` for good when null. */
  readonly fail: (job: ClaimedSyncJob, code: string, retryAfterSeconds: number | null) => Repo<void>
  /** Fenced: nothing to do any more (connection gone, add-on off); `cancelled` with the code. */
  readonly cancel: (job: ClaimedSyncJob, code: string, progress: SyncProgress) => Repo<void>
  /** Deletes every job of the profile (archiving it: non-audit data goes). */
  readonly deleteForProfile: (profileId: string) => Repo<void>
  /** On shutdown: hands the job back at once instead of waiting for the lease to expire. */
  readonly release: (job: ClaimedSyncJob) => Repo<void>
  /** When the connection's last `done` job started (a CRM sync reads what changed since), none before the first. */
  readonly lastFinishedStart: (connectionId: string) => Repo<Option.Option<string>>
}>()("svc/SyncJobsRepo") {
  static readonly layer = Layer.effect(SyncJobsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const jobRows = decodeRows(SyncJobRow)
      const firstJob = decodeFirstRow(SyncJobRow)
      const firstClaimed = decodeFirstRow(ClaimedSyncJob)
      const connectionRows = decodeRows(SyncableConnection)
      const firstFlag = decodeFirstRow(Schema.Struct({ flag: Schema.Boolean }))
      const counted = decodeFirstRow(Schema.Struct({ structure: Schema.Int, insights: Schema.Int }))

      // The add-on is on for a profile a person created, and for a provisioned one while its entitlement is on.
      const attributionOnSql = sql.literal(`(p.provisioned_by_app_id IS NULL OR COALESCE((
        SELECT e.enabled FROM entitlements e WHERE e.profile_id = p.id AND e.feature = 'svc_attribution'), false))`)

      const columns = sql`j.id::text AS job_id, j.profile_id::text AS profile_id, j.connection_id::text AS connection_id,
        j.kind, j.status, j.reason, j.window_days, j.attempts, j.progress::text AS progress, j.error,
        ${isoTimestamp(sql, "j.run_after")} AS run_after,
        ${isoTimestamp(sql, "j.created_at")} AS created_at,
        ${isoTimestamp(sql, "j.started_at")} AS started_at,
        ${isoTimestamp(sql, "j.finished_at")} AS finished_at`

      /** The queuing request's trace as two columns' values, for the job's span to link to (decision 0083). */
      const traceValues = Effect.map(currentTraceContext, (trace) =>
        Option.match(trace, {
          onNone: () => sql`NULL::text, NULL::text`,
          onSome: ({ traceparent, tracestate }) => sql`${traceparent}::text, ${tracestate === "" ? null : tracestate}::text`
        }))

      const enqueueBackfills = (profileId: string, windowDays: number, reason: string) =>
        Effect.flatMap(traceValues, (trace) => Effect.map(
          sql`INSERT INTO sync_jobs (id, profile_id, connection_id, kind, window_days, reason, traceparent, tracestate)
              SELECT gen_random_uuid(), profile_id, id, 'backfill', ${windowDays}, ${reason}, ${trace}
              FROM connections WHERE profile_id = ${profileId} AND provider_kind = 'adplatform' AND disconnected_at IS NULL
              RETURNING id`,
          (rows) => rows.length
        ))

      /** Serializes enqueues on a connection, so two clicks join one job (released at commit). */
      const lockConnection = (connectionId: string) =>
        sql`SELECT true AS locked FROM pg_advisory_xact_lock(hashtextextended(${`sync_jobs:${connectionId}`}, 0))`

      const enqueue = (
        profileId: string,
        connectionIds: ReadonlyArray<string>,
        kind: SyncJobKind,
        windowDays: number | null,
        reason: string
      ) =>
        sql.withTransaction(Effect.forEach(connectionIds, (connectionId) =>
          Effect.gen(function*() {
            yield* lockConnection(connectionId)
            const open = yield* firstJob(sql`
              SELECT ${columns} FROM sync_jobs j
              WHERE j.connection_id = ${connectionId} AND j.profile_id = ${profileId} AND j.kind = ${kind}
                AND j.status IN ('queued', 'running')
              ORDER BY j.created_at LIMIT 1`)
            if (Option.isSome(open)) return open
            const trace = yield* traceValues
            return yield* firstJob(sql`
              WITH inserted AS (
                INSERT INTO sync_jobs (id, profile_id, connection_id, kind, window_days, reason, traceparent, tracestate)
                SELECT gen_random_uuid(), c.profile_id, c.id, ${kind}, ${windowDays}, ${reason}, ${trace}
                FROM connections c
                WHERE c.id = ${connectionId} AND c.profile_id = ${profileId} AND c.disconnected_at IS NULL
                  AND c.provider_kind = ANY(${SYNCED_PROVIDER_KINDS}::text[])
                RETURNING *)
              SELECT ${columns} FROM inserted j`)
          }), { concurrency: 1 })).pipe(
            Effect.map((rows) => rows.flatMap((row) => Option.isSome(row) ? [row.value] : []))
          )

      const enqueueNightly = (insightsDays: number) =>
        Effect.map(
          counted(sql`
            WITH live AS (
              SELECT c.id, c.profile_id, c.provider_kind, ${attributionOnSql} AS entitled
              FROM connections c JOIN profiles p ON p.id = c.profile_id
              WHERE p.archived_at IS NULL AND c.disconnected_at IS NULL AND c.status <> 'reconnect_required'
                AND c.provider_kind = ANY(${SYNCED_PROVIDER_KINDS}::text[])
            ),
            wanted AS (
              -- A non-ad-platform kind's job reads what its provider brings (a CRM's deals, decision 0062).
              SELECT id, profile_id, 'structure' AS kind, NULL::int AS window_days FROM live
              UNION ALL
              SELECT id, profile_id, 'insights', ${insightsDays}::int FROM live WHERE entitled AND provider_kind = 'adplatform'
            ),
            inserted AS (
              INSERT INTO sync_jobs (id, profile_id, connection_id, kind, window_days, reason)
              SELECT gen_random_uuid(), w.profile_id, w.id, w.kind, w.window_days, 'nightly'
              FROM wanted w
              WHERE NOT EXISTS (
                SELECT 1 FROM sync_jobs q
                WHERE q.connection_id = w.id AND q.kind = w.kind AND q.status IN ('queued', 'running'))
              RETURNING kind)
            SELECT count(*) FILTER (WHERE kind = 'structure')::int AS structure,
                   count(*) FILTER (WHERE kind = 'insights')::int AS insights
            FROM inserted`),
          Option.getOrElse(() => ({ structure: 0, insights: 0 }))
        )

      const liveConnections = (profileId: string, connectionId: Option.Option<string>) =>
        connectionRows(sql`
          SELECT c.id::text AS id, c.provider_kind, c.status FROM connections c
          WHERE c.profile_id = ${profileId} AND c.disconnected_at IS NULL
            ${Option.isSome(connectionId) ? sql`AND c.id = ${connectionId.value}` : sql``}
          ORDER BY c.created_at, c.id`)

      const find = (profileId: string, jobId: string) =>
        firstJob(sql`SELECT ${columns} FROM sync_jobs j WHERE j.id = ${jobId} AND j.profile_id = ${profileId}`)

      const list = (profileId: string, connectionId: Option.Option<string>, limit: number, before: Option.Option<Keyset>) =>
        jobRows(sql`
          SELECT ${columns} FROM sync_jobs j
          WHERE j.profile_id = ${profileId}
            ${Option.isSome(connectionId) ? sql`AND j.connection_id = ${connectionId.value}` : sql``}
            ${Option.isSome(before) ? sql`AND (j.created_at, j.id) < (${before.value.createdAt}::timestamptz, ${before.value.id}::uuid)` : sql``}
          ORDER BY j.created_at DESC, j.id DESC LIMIT ${limit + 1}`)

      const isSyncing = (connectionId: string) =>
        Effect.map(
          firstFlag(sql`
            SELECT EXISTS (
              SELECT 1 FROM sync_jobs
              WHERE connection_id = ${connectionId} AND status = 'running' AND lease_until >= now()) AS flag`),
          (row) => Option.isSome(row) && row.value.flag
        )

      const attributionOn = (profileId: string) =>
        Effect.map(
          firstFlag(sql`
            SELECT ${attributionOnSql} AS flag FROM profiles p WHERE p.id = ${profileId}`),
          (row) => Option.isSome(row) && row.value.flag
        )

      const anyClaimable = (maxAttempts: number) =>
        Effect.map(firstFlag(claimStatements(sql, maxAttempts, 0).probe), (row) => Option.isSome(row) && row.value.flag)

      const claimOnce = (maxAttempts: number, leaseSeconds: number, holder: string | null) =>
        Effect.gen(function*() {
          const statements = claimStatements(sql, maxAttempts, leaseSeconds, holder)
          yield* orderedClaimSettings(sql)
          yield* statements.reap
          yield* statements.sweep
          return yield* firstClaimed(statements.claim)
        }).pipe(sql.withTransaction)

      /**
       * The `NOT EXISTS` above is read before another claimer's start commits; the unique index
       * (migration 0054) refuses the second start of a connection's job. That claim is run again:
       * it then sees the connection busy and takes another job, or none.
       */
      const claim = (maxAttempts: number, leaseSeconds: number, holder: string | null) =>
        claimOnce(maxAttempts, leaseSeconds, holder).pipe(
          Effect.retry({ times: CLAIM_CONFLICT_RETRIES, while: isRunningConflict }),
          Effect.catchIf(isRunningConflict, () => Effect.succeed(Option.none<ClaimedSyncJob>()))
        )

      const ours = (job: ClaimedSyncJob) => sql`id = ${job.id} AND attempts = ${job.attempts} AND status = 'running'`

      const renew = (job: ClaimedSyncJob, progress: SyncProgress, leaseSeconds: number, checkpoint?: string) =>
        Effect.map(
          sql`
            UPDATE sync_jobs SET progress = ${JSON.stringify(progress)}::jsonb, updated_at = now(),
                   checkpoint = COALESCE(${checkpoint ?? null}::text, checkpoint),
                   lease_until = now() + make_interval(secs => ${leaseSeconds})
            WHERE ${ours(job)} RETURNING id`,
          (rows) => rows.length === 1
        )

      const succeed = (job: ClaimedSyncJob, progress: SyncProgress) =>
        Effect.map(
          sql`
            UPDATE sync_jobs SET status = 'done', progress = ${JSON.stringify(progress)}::jsonb, error = NULL,
                   finished_at = now(), lease_until = NULL, updated_at = now()
            WHERE ${ours(job)} RETURNING id`,
          (rows) => rows.length === 1
        )

      const fail = (job: ClaimedSyncJob, code: string, retryAfterSeconds: number | null) => {
        const last = retryAfterSeconds === null
        return Effect.asVoid(sql`
          UPDATE sync_jobs
          SET status = ${last ? "failed" : "queued"}, error = ${code}, updated_at = now(), lease_until = NULL,
              finished_at = ${last ? sql`now()` : sql`NULL`},
              run_after = ${last ? sql`run_after` : sql`now() + make_interval(secs => ${retryAfterSeconds})`}
          WHERE ${ours(job)}`)
      }

      const cancel = (job: ClaimedSyncJob, code: string, progress: SyncProgress) =>
        Effect.asVoid(sql`
          UPDATE sync_jobs SET status = 'cancelled', error = ${code}, progress = ${JSON.stringify(progress)}::jsonb,
                 finished_at = now(), lease_until = NULL, updated_at = now()
          WHERE ${ours(job)}`)

      const release = (job: ClaimedSyncJob) =>
        Effect.asVoid(sql`
          UPDATE sync_jobs SET status = 'queued', lease_until = NULL, updated_at = now()
          WHERE ${ours(job)}`)

      const firstStart = decodeFirstRow(Schema.Struct({ started_at: Schema.String }))
      const lastFinishedStart = (connectionId: string) =>
        Effect.map(
          firstStart(sql`
            SELECT ${isoTimestamp(sql, "started_at")} AS started_at FROM sync_jobs
            WHERE connection_id = ${connectionId} AND status = 'done' AND started_at IS NOT NULL
            ORDER BY started_at DESC LIMIT 1`),
          Option.map((row) => row.started_at)
        )

      const deleteForProfile = (profileId: string) => Effect.asVoid(sql`DELETE FROM sync_jobs WHERE profile_id = ${profileId}`)

      return atDatabaseBoundary({
        deleteForProfile,
        enqueueBackfills,
        enqueue,
        enqueueNightly,
        liveConnections,
        find,
        list,
        isSyncing,
        attributionOn,
        anyClaimable,
        claim,
        renew,
        succeed,
        fail,
        cancel,
        release,
        lastFinishedStart
      })
    })
  )
}
