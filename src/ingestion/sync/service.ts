/**
 * Syncs on demand (decision 0058): `POST /api/v1/connections/sync` queues a job on one
 * connection or on every live connection of the profile that syncs, joining a job of the same
 * kind already queued or running; `GET /api/v1/connections/sync/{job_id}` reads its progress.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { SyncJob, SyncJobPage, SyncRequest } from "../../../schema/connections-sync.ts"
import { type DatabaseUnavailable, type InvalidParameter, InvalidState, NotFound } from "../../../schema/errors.ts"
import { isUuid } from "../../../schema/common.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { DEFAULT_PAGE_SIZE, keysetCursor, pageOf } from "../../platform/pagination.ts"
import { renderSyncJob, SYNCED_PROVIDER_KINDS, SyncJobsRepo } from "./repo.ts"
import { StructureRepo } from "./structure-repo.ts"

const noSuchConnection = () => new NotFound({ message: "No live connection of this profile has this id.", reason: "connection_not_found" })
const noSuchJob = () => new NotFound({ message: "No sync job of this profile has this id.", reason: "sync_job_not_found" })

export class ConnectionSync extends Context.Service<ConnectionSync, {
  readonly trigger: (
    profile: ProfileContext,
    request: SyncRequest
  ) => Effect.Effect<ReadonlyArray<SyncJob>, NotFound | InvalidState | DatabaseUnavailable>
  readonly progress: (profile: ProfileContext, jobId: string) => Effect.Effect<SyncJob, NotFound | DatabaseUnavailable>
  readonly list: (
    profile: ProfileContext,
    query: { readonly connection_id?: string; readonly limit?: number; readonly cursor?: string }
  ) => Effect.Effect<SyncJobPage, InvalidParameter | DatabaseUnavailable>
  /**
   * Queues a backfill of `windowDays` on each of the profile's live ad-platform connections (the
   * attribution entitlement switched on, through src/main/ports.ts); in the caller's transaction, answers how many.
   */
  readonly enqueueBackfills: (profileId: string, windowDays: number, reason: string) => Effect.Effect<number, DatabaseUnavailable>
  /** Archiving a profile: its sync jobs and synced structure deleted, in the caller's transaction (before its connections go). */
  readonly forgetProfile: (profileId: string) => Effect.Effect<void, DatabaseUnavailable>
}>()("svc/ConnectionSync") {
  static readonly layer = Layer.effect(ConnectionSync)(
    Effect.gen(function*() {
      const repo = yield* SyncJobsRepo
      const structure = yield* StructureRepo

      const trigger = Effect.fn("ConnectionSync.trigger")(function*(profile: ProfileContext, request: SyncRequest) {
        const named = Option.fromUndefinedOr(request.connection_id)
        const live = yield* repo.liveConnections(profile.profileId, named)
        if (Option.isSome(named)) {
          const connection = live[0]
          if (connection === undefined) return yield* noSuchConnection()
          if (!SYNCED_PROVIDER_KINDS.includes(connection.provider_kind)) {
            return yield* new InvalidState({
              message: "This connection's provider has nothing this sync brings (the ad platform's structure and insights).",
              reason: "provider_not_synced"
            })
          }
          if (connection.status === "reconnect_required") {
            return yield* new InvalidState({
              message: "The provider no longer accepts this connection's grant: reconnect it through a new hand-off, then sync.",
              reason: "reconnect_required"
            })
          }
        }
        const syncable = live.filter((c) => SYNCED_PROVIDER_KINDS.includes(c.provider_kind) && c.status !== "reconnect_required")
        const kind = request.kind ?? "manual"
        const rows = yield* repo.enqueue(profile.profileId, syncable.map((c) => c.id), kind, null, "requested")
        yield* Effect.annotateCurrentSpan({ "svc.profile_id": profile.profileId, "svc.sync.jobs": rows.length })
        return rows.map(renderSyncJob)
      })

      const progress = Effect.fn("ConnectionSync.progress")(function*(profile: ProfileContext, jobId: string) {
        if (!isUuid(jobId)) return yield* noSuchJob()
        const row = yield* repo.find(profile.profileId, jobId)
        if (Option.isNone(row)) return yield* noSuchJob()
        return renderSyncJob(row.value)
      })

      const list = Effect.fn("ConnectionSync.list")(function*(
        profile: ProfileContext,
        query: { readonly connection_id?: string; readonly limit?: number; readonly cursor?: string }
      ) {
        const limit = query.limit ?? DEFAULT_PAGE_SIZE
        // A cursor this list did not issue is refused (decision 0138), never a bad cast in SQL.
        const before = yield* keysetCursor(query.cursor)
        const rows = yield* repo.list(profile.profileId, Option.fromUndefinedOr(query.connection_id), limit, before)
        const { page, pagination } = pageOf(rows, limit, (row) => ({ createdAt: row.created_at, id: row.job_id }))
        return { data: page.map(renderSyncJob), pagination }
      })

      const enqueueBackfills = Effect.fn("ConnectionSync.enqueueBackfills")(function*(
        profileId: string,
        windowDays: number,
        reason: string
      ) {
        return yield* repo.enqueueBackfills(profileId, windowDays, reason)
      })

      const forgetProfile = Effect.fn("ConnectionSync.forgetProfile")(function*(profileId: string) {
        yield* repo.deleteForProfile(profileId)
        yield* structure.deleteForProfile(profileId)
      })

      return { trigger, progress, list, enqueueBackfills, forgetProfile }
    })
  ).pipe(Layer.provide([SyncJobsRepo.layer, StructureRepo.layer]))
}
