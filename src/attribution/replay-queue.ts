/**
 * The durable queue of full-profile attribution replays: `work_jobs` rows of kind
 * `attribution_replay` (migrations/0009_outcomes.ts). Enqueueing coalesces: while a replay of
 * the profile is still `queued` (not yet claimed by a runner) a new request joins it, since
 * that replay will read everything as it is when it starts. A `running` replay has already read
 * part of the profile, so a change made meanwhile queues a new one. Decision 0030.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { type ReplayJob, ReplayState } from "../../schema/attribution.ts"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { decodeFirstRow, orDatabaseUnavailable } from "../platform/database.ts"
import { isoTimestamp } from "../platform/sql-time.ts"

export const REPLAY_JOB_KIND = "attribution_replay"

/** Why a replay was queued (`work_jobs.reason`). Other domains queue with their own reasons. */
export type ReplayReason =
  | "definitions_changed"
  | "recompute_requested"
  | (string & {})

export const ReplayJobRow = Schema.Struct({
  job_id: Schema.String,
  profile_id: Schema.String,
  state: ReplayState,
  reason: Schema.String,
  progress: Schema.Int,
  total: Schema.NullOr(Schema.Int),
  attempts: Schema.Int,
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String)
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

/**
 * The transaction-scoped lock that serializes a profile's classification writes and replay
 * enqueues (re-entrant within a transaction, released at commit or rollback).
 */
export const lockProfileAttribution = (sql: SqlClient, profileId: string) =>
  sql`SELECT true AS locked FROM pg_advisory_xact_lock(hashtextextended(${`attribution_replay:${profileId}`}, 0))`

/**
 * Queues a full replay of the profile, or joins the one already queued. Runs in the caller's
 * transaction when there is one (so the replay is queued exactly when the change commits) and
 * in its own otherwise. The queued row is locked (FOR UPDATE), so a runner cannot claim it
 * between this check and the caller's commit: it either waits for the commit (and then reads
 * the change) or has already claimed it (and then this inserts a new job).
 */
export const enqueueReplay = (sql: SqlClient, profileId: string, reason: ReplayReason) => {
  const firstId = decodeFirstRow(Schema.Struct({ id: Schema.String }))
  return Effect.gen(function*() {
    yield* lockProfileAttribution(sql, profileId)
    const queued = yield* firstId(sql`
      SELECT id::text AS id FROM work_jobs
      WHERE profile_id = ${profileId} AND kind = ${REPLAY_JOB_KIND} AND state = 'queued'
      ORDER BY created_at, id LIMIT 1 FOR UPDATE`)
    if (Option.isSome(queued)) return { jobId: queued.value.id, coalesced: true } satisfies Enqueued
    const jobId = crypto.randomUUID()
    yield* sql`
      INSERT INTO work_jobs (id, profile_id, kind, reason, state)
      VALUES (${jobId}, ${profileId}, ${REPLAY_JOB_KIND}, ${reason}, 'queued')`
    return { jobId, coalesced: false } satisfies Enqueued
  }).pipe(sql.withTransaction)
}

export class ReplayQueue extends Context.Service<ReplayQueue, {
  /** Queues (or joins) a full-profile replay; inside a transaction it commits with it. */
  readonly enqueue: (profileId: string, reason: ReplayReason) => Effect.Effect<Enqueued, DatabaseUnavailable>
  /** The profile's most recent replay, if any. */
  readonly latest: (profileId: string) => Effect.Effect<Option.Option<ReplayJobRow>, DatabaseUnavailable>
  readonly find: (jobId: string) => Effect.Effect<Option.Option<ReplayJobRow>, DatabaseUnavailable>
}>()("svc/ReplayQueue") {
  static readonly layer = Layer.effect(ReplayQueue)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const firstJob = decodeFirstRow(ReplayJobRow)
      const columns = replayJobColumns(sql)

      const latest = (profileId: string) =>
        firstJob(sql`
          SELECT ${columns} FROM work_jobs j
          WHERE j.profile_id = ${profileId} AND j.kind = ${REPLAY_JOB_KIND}
          ORDER BY j.created_at DESC, j.id DESC LIMIT 1`)

      const find = (jobId: string) =>
        firstJob(sql`SELECT ${columns} FROM work_jobs j WHERE j.id = ${jobId} AND j.kind = ${REPLAY_JOB_KIND}`)

      return {
        enqueue: (profileId, reason) =>
          orDatabaseUnavailable(enqueueReplay(sql, profileId, reason)).pipe(
            Effect.withSpan("ReplayQueue.enqueue", { attributes: { "svc.profile_id": profileId, "svc.replay.reason": reason } })
          ),
        latest: (profileId) => orDatabaseUnavailable(latest(profileId)).pipe(Effect.withSpan("ReplayQueue.latest")),
        find: (jobId) => orDatabaseUnavailable(find(jobId)).pipe(Effect.withSpan("ReplayQueue.find"))
      }
    })
  )
}

/** The columns of `ReplayJobRow`, from `work_jobs j`. */
export const replayJobColumns = (sql: SqlClient) =>
  sql`j.id::text AS job_id, j.profile_id::text AS profile_id, j.state, j.reason, j.progress, j.total, j.attempts,
      ${isoTimestamp(sql, "j.created_at")} AS created_at,
      ${isoTimestamp(sql, "j.started_at")} AS started_at,
      ${isoTimestamp(sql, "j.finished_at")} AS finished_at,
      j.error`
