/**
 * The profile's ad-platform connections as the ad actions see them (not disconnected, with their
 * granted scopes): what conversion sync, audiences and Platform-Safe pick their connection from.
 */
import { Context, Effect, Layer } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { type AdConnection, AdActionsRepo } from "./repo.ts"

export type { AdConnection }

export class AdConnections extends Context.Service<AdConnections, {
  /** The profile's ad-platform connections not disconnected, oldest first. */
  readonly of: (profileId: string) => Effect.Effect<ReadonlyArray<AdConnection>, DatabaseUnavailable>
}>()("svc/AdConnections") {
  static readonly layer = Layer.effect(AdConnections)(
    Effect.gen(function*() {
      const repo = yield* AdActionsRepo
      const of = Effect.fn("AdConnections.of")(function*(profileId: string) {
        return yield* repo.connections(profileId)
      })
      return { of }
    })
  ).pipe(Layer.provide(AdActionsRepo.layer))
}
