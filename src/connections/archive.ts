/**
 * What an archived profile leaves in connections: its connections and what references them
 * (hand-offs, claimed provider events) deleted; the audit trail stays. Called in the archiving
 * transaction (src/accounts/profiles, through src/main/ports.ts).
 */
import { Context, Effect, Layer } from "effect"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { HandoffsRepo } from "./handoffs/repo.ts"
import { ProviderEventsRepo } from "./hooks/repo.ts"
import { ConnectionsRepo } from "./repo.ts"

export class ConnectionsArchive extends Context.Service<ConnectionsArchive, {
  readonly forgetProfile: (profileId: string) => Effect.Effect<void, DatabaseUnavailable>
}>()("svc/ConnectionsArchive") {
  static readonly layer = Layer.effect(ConnectionsArchive)(
    Effect.gen(function*() {
      const connections = yield* ConnectionsRepo
      const handoffs = yield* HandoffsRepo
      const providerEvents = yield* ProviderEventsRepo

      const forgetProfile = Effect.fn("ConnectionsArchive.forgetProfile")(function*(profileId: string) {
        // What references the connections goes first.
        yield* handoffs.deleteForProfile(profileId)
        yield* providerEvents.forgetProfile(profileId)
        yield* connections.deleteForProfile(profileId)
      })

      return { forgetProfile }
    })
  ).pipe(Layer.provide([ConnectionsRepo.layer, HandoffsRepo.layer, ProviderEventsRepo.layer]))
}
