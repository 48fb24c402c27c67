/**
 * Connections as the contexts that work through them read them (syncs, live reads, push
 * handlers): a connection's record and wire view, the live connections on a provider account,
 * a sync's finish, an account's revocation, and the push receiver's handled event ids. Each
 * read is its repository's statement (src/connections/repo.ts, src/connections/hooks/repo.ts),
 * on the caller's SqlClient: inside whatever transaction it holds.
 */
import { Context, Effect, Layer } from "effect"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { OutboxRepo } from "../kernel/outbox/repo.ts"
import { CONNECTION_REVOKED, connectionEvent } from "./events.ts"
import { ProviderEventsRepo } from "./hooks/repo.ts"
import { type ConnectionRecord, ConnectionsRepo } from "./repo.ts"
import { factsOf } from "./sessions.ts"

export type { ConnectionRecord } from "./repo.ts"

type Connections = ConnectionsRepo["Service"]
type ProviderEvents = ProviderEventsRepo["Service"]

/** The repository's statement under the service's span. */
const traced = <Args extends ReadonlyArray<unknown>, A, E>(name: string, statement: (...args: Args) => Effect.Effect<A, E>) =>
  Effect.fn(name)(function*(...args: Args) {
    return yield* statement(...args)
  })

export class ConnectionRecords extends Context.Service<ConnectionRecords, {
  readonly find: Connections["find"]
  readonly view: Connections["view"]
  readonly currentOf: Connections["currentOf"]
  readonly liveForAccount: Connections["liveForAccount"]
  readonly markSynced: Connections["markSynced"]
  /**
   * The provider took the grant back (an app uninstalled from the account): disconnects the
   * connection and writes `connection.revoked` with `reason` in the same transaction. Answers
   * whether this call did it (false when it was disconnected already).
   */
  readonly revoke: (record: ConnectionRecord, reason: string) => Effect.Effect<boolean, DatabaseUnavailable>
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

      const revoke = Effect.fn("ConnectionRecords.revoke")(function*(record: ConnectionRecord, reason: string) {
        return yield* repo.transaction(Effect.gen(function*() {
          const changed = yield* repo.disconnect(record.id)
          if (changed) yield* outbox.insert([connectionEvent(CONNECTION_REVOKED, factsOf(record), reason)])
          return changed
        }))
      })

      return {
        find: traced("ConnectionRecords.find", repo.find),
        view: traced("ConnectionRecords.view", repo.view),
        currentOf: traced("ConnectionRecords.currentOf", repo.currentOf),
        liveForAccount: traced("ConnectionRecords.liveForAccount", repo.liveForAccount),
        markSynced: traced("ConnectionRecords.markSynced", repo.markSynced),
        revoke,
        eventSeen: traced("ConnectionRecords.eventSeen", events.seen),
        claimEvent: traced("ConnectionRecords.claimEvent", events.claim)
      }
    })
  ).pipe(Layer.provide([ConnectionsRepo.layer, ProviderEventsRepo.layer, OutboxRepo.layer]))
}
