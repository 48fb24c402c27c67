/**
 * Connections as the contexts that work through them need them (syncs and push handlers): a
 * connection's record and wire view, a sync's finish, an account's revocation by its provider,
 * and the push receiver's handled event ids. Each is its repository's statement
 * (src/connections/repo.ts, src/connections/hooks/repo.ts) on the caller's SqlClient, inside
 * whatever transaction it holds. A connection's current or live records on an account are
 * ConnectionSessions' (./sessions.ts), beside the sessions opened on them.
 */
import { Context, Effect, Layer } from "effect"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { OutboxRepo } from "../kernel/outbox/repo.ts"
import { CONNECTION_REVOKED, connectionEvent } from "./events.ts"
import { ProviderEventsRepo } from "./hooks/repo.ts"
import { type ConnectionRecord, ConnectionsRepo } from "./repo.ts"
import { factsOf } from "./sessions.ts"
import { traced } from "../platform/traced.ts"

type Connections = ConnectionsRepo["Service"]
type ProviderEvents = ProviderEventsRepo["Service"]

export class ConnectionRecords extends Context.Service<ConnectionRecords, {
  readonly find: Connections["find"]
  readonly view: Connections["view"]
  readonly markSynced: Connections["markSynced"]
  /**
   * The provider took the account's grant back (an app uninstalled from it): disconnects each
   * live connection on the account, each in its own transaction with its `connection.revoked`
   * row (`reason`). Answers how many this call disconnected.
   */
  readonly revokeAccount: (provider: string, accountId: string, reason: string) => Effect.Effect<number, DatabaseUnavailable>
  /** Whether a push's event id was handled already (src/connections/hooks/repo.ts). */
  readonly eventSeen: ProviderEvents["seen"]
  /** Records a push's event id as handled; false when it was there already. */
  readonly claimEvent: ProviderEvents["claim"]
}>()("svc/ConnectionRecords") {
  static readonly layer = Layer.effect(ConnectionRecords)(
    Effect.gen(function*() {
      const repo = yield* ConnectionsRepo
      const events = yield* ProviderEventsRepo
      const outbox = yield* OutboxRepo

      const revoke = (record: ConnectionRecord, reason: string) =>
        repo.transaction(Effect.gen(function*() {
          const changed = yield* repo.disconnect(record.id)
          if (changed) yield* outbox.insert([connectionEvent(CONNECTION_REVOKED, factsOf(record), reason)])
          return changed
        }))

      const revokeAccount = Effect.fn("ConnectionRecords.revokeAccount")(function*(provider: string, accountId: string, reason: string) {
        const live = yield* repo.liveForAccount(provider, accountId)
        let n = 0
        for (const record of live) {
          if (yield* revoke(record, reason)) n++
        }
        return n
      })

      return {
        find: traced("ConnectionRecords.find", repo.find),
        view: traced("ConnectionRecords.view", repo.view),
        markSynced: traced("ConnectionRecords.markSynced", repo.markSynced),
        revokeAccount,
        eventSeen: traced("ConnectionRecords.eventSeen", events.seen),
        claimEvent: traced("ConnectionRecords.claimEvent", events.claim)
      }
    })
  ).pipe(Layer.provide([ConnectionsRepo.layer, ProviderEventsRepo.layer, OutboxRepo.layer]))
}
