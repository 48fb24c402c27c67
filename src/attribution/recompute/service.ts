/**
 * Attribution recompute and replay status: a recompute queues (or joins) a full-profile replay,
 * which the worker runs as durable work; the status is the profile's most recent replay.
 * Decision 0030.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { ReplayJob } from "../../../schema/attribution.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import type { PrincipalShape, ProfileContext } from "../../kernel/principal.ts"
import { renderReplayJob, ReplayQueue } from "../jobs/repo.ts"

export interface Recomputed {
  readonly job: ReplayJob
  /** A replay of the profile was already queued: this request joined it. */
  readonly coalesced: boolean
}

export class AttributionJobs extends Context.Service<AttributionJobs, {
  /**
   * Queues (or joins the already queued) full-profile replay in the caller's transaction, so it is
   * queued exactly when the caller's change commits (another context's change of the records).
   */
  readonly queueReplay: (profileId: string, reason: string) => Effect.Effect<void, DatabaseUnavailable>
  readonly recompute: (actor: PrincipalShape, profile: ProfileContext) => Effect.Effect<Recomputed, DatabaseUnavailable>
  /** The most recent replay; none on the connect-broker tier (its reads answer empty). */
  readonly replayStatus: (profile: ProfileContext) => Effect.Effect<ReplayJob | null, DatabaseUnavailable>
  /** As `queueReplay`, answering the id of the job queued or joined (a settings change reports it). */
  readonly enqueueReplay: (profileId: string, reason: string) => Effect.Effect<string, DatabaseUnavailable>
  /**
   * The transaction-scoped lock that serializes a profile's classification writes and replay
   * enqueues, held until the caller's transaction ends (a built-in definition's creation takes it).
   */
  readonly lockProfile: (profileId: string) => Effect.Effect<void, DatabaseUnavailable>
}>()("svc/AttributionJobs") {
  static readonly layer = Layer.effect(AttributionJobs)(
    Effect.gen(function*() {
      const queue = yield* ReplayQueue
      const audit = yield* AuditLog

      const queueReplay = Effect.fn("AttributionJobs.queueReplay")(function*(profileId: string, reason: string) {
        yield* queue.enqueue(profileId, reason)
      })

      const recompute = Effect.fn("AttributionJobs.recompute")(function*(actor: PrincipalShape, profile: ProfileContext) {
        const queued = yield* Effect.gen(function*() {
          const queued = yield* queue.enqueue(profile.profileId, "recompute_requested")
          yield* audit.record({
            actor,
            action: "attribution.recompute_requested",
            targetKind: "work_job",
            targetId: queued.jobId,
            workspaceId: profile.workspaceId,
            profileId: profile.profileId,
            details: { coalesced: queued.coalesced }
          })
          return queued
        }).pipe(queue.transaction)
        const job = yield* queue.find(queued.jobId)
        if (Option.isNone(job)) return yield* Effect.die("a replay job vanished right after it was queued")
        return { job: renderReplayJob(job.value), coalesced: queued.coalesced } satisfies Recomputed
      })

      const replayStatus = Effect.fn("AttributionJobs.replayStatus")(function*(profile: ProfileContext) {
        if (!profile.attributionEnabled) return null
        const latest = yield* queue.latest(profile.profileId)
        return Option.match(latest, { onNone: () => null, onSome: renderReplayJob })
      })

      const enqueueReplay = Effect.fn("AttributionJobs.enqueueReplay")(function*(profileId: string, reason: string) {
        return (yield* queue.enqueue(profileId, reason)).jobId
      })

      const lockProfile = Effect.fn("AttributionJobs.lockProfile")(function*(profileId: string) {
        yield* queue.lockProfile(profileId)
      })

      return { queueReplay, recompute, replayStatus, enqueueReplay, lockProfile }
    })
  ).pipe(Layer.provide([ReplayQueue.layer, AuditLog.layer]))
}
