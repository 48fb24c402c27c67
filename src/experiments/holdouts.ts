/**
 * Which customers the running audience holdouts of a profile leave out of its uploaded audience
 * (issue 32): the same hash of salt and customer as the results' split (`heldOut`), so the
 * customers compared as held out are exactly those the platform never received. What exports'
 * `AudienceHoldouts` port answers (wired in src/main/ports.ts).
 */
import { Clock, Context, Effect, Layer } from "effect"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { heldOut } from "./analysis.ts"
import { ExperimentsRepo } from "./repo.ts"

export class ExperimentHoldouts extends Context.Service<ExperimentHoldouts, {
  readonly heldOut: (profileId: string) => Effect.Effect<(customerId: string) => boolean, DatabaseUnavailable>
  /**
   * After an upload of the list to `audienceId`: each running holdout records how many of the
   * `candidates` (the list before holdouts) it left out, in its exclusion state.
   */
  readonly uploaded: (profileId: string, candidates: ReadonlyArray<string>, audienceId: string | null) => Effect.Effect<void, DatabaseUnavailable>
}>()("svc/ExperimentHoldouts") {
  static readonly layer = Layer.effect(ExperimentHoldouts)(
    Effect.gen(function*() {
      const repo = yield* ExperimentsRepo
      return {
        heldOut: Effect.fn("ExperimentHoldouts.heldOut")(function*(profileId: string) {
          const running = yield* repo.runningHoldouts(profileId, new Date(yield* Clock.currentTimeMillis).toISOString())
          return (customerId: string) => running.some((e) => heldOut(e.salt, customerId, e.fraction))
        }),
        uploaded: Effect.fn("ExperimentHoldouts.uploaded")(function*(profileId: string, candidates: ReadonlyArray<string>, audienceId: string | null) {
          const now = new Date(yield* Clock.currentTimeMillis)
          const running = yield* repo.runningHoldouts(profileId, now.toISOString())
          for (const e of running) {
            yield* repo.recordHoldoutUpload(profileId, e.id, {
              uploaded_at: now.toISOString(),
              platform_audience_id: audienceId,
              held_out: candidates.filter((id) => heldOut(e.salt, id, e.fraction)).length
            })
          }
        })
      }
    })
  ).pipe(Layer.provide(ExperimentsRepo.layer))
}
