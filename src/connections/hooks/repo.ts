/** The owner of `provider_events`: provider callback event ids already handled, so a redelivery writes once. */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, orDatabaseUnavailable, retryConflicts } from "../../platform/database.ts"
import { PushWorld } from "./push-world.ts"

export class ProviderEventsRepo extends Context.Service<ProviderEventsRepo, {
  readonly seen: (provider: string, eventId: string) => Effect.Effect<boolean, DatabaseUnavailable>
  /** Records the event id; false when it was already there (in the caller's transaction: what it causes commits with it). */
  readonly claim: (provider: string, eventId: string, connectionId: string | null) => Effect.Effect<boolean, DatabaseUnavailable>
  /** Keeps the handled event ids of the profile's connections but drops the link to them (archiving it). */
  readonly forgetProfile: (profileId: string) => Effect.Effect<void, DatabaseUnavailable>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/ProviderEventsRepo") {
  static readonly layer = Layer.effect(ProviderEventsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      // A sandbox push's ids are its world's: every world numbers its objects alike (./push-world.ts).
      const keyed = <A, E, R>(eventId: string, use: (key: string) => Effect.Effect<A, E, R>) =>
        Effect.flatMap(PushWorld, ({ profileId }) => use(profileId === undefined ? eventId : `${eventId}@${profileId}`))
      const seen = (provider: string, eventId: string) =>
        keyed(eventId, (key) =>
          Effect.map(
            sql`SELECT 1 AS seen FROM provider_events WHERE provider = ${provider} AND event_id = ${key}`,
            (rows) => rows.length > 0
          ))
      const claim = (provider: string, eventId: string, connectionId: string | null) =>
        keyed(eventId, (key) =>
          Effect.map(
            sql`INSERT INTO provider_events (provider, event_id, connection_id) VALUES (${provider}, ${key}, ${connectionId})
              ON CONFLICT (provider, event_id) DO NOTHING RETURNING event_id`,
            (rows) => rows.length > 0
          ))
      // The ids stay so that a late redelivery still writes nothing.
      const forgetProfile = (profileId: string) =>
        Effect.asVoid(sql`UPDATE provider_events SET connection_id = NULL
                          WHERE connection_id IN (SELECT id FROM connections WHERE profile_id = ${profileId})`)
      return {
        ...atDatabaseBoundary({ seen, claim, forgetProfile }),
        transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
