/** The owner of `entitlements`: the attribution add-on of a profile and the newest delivery applied to it. */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow } from "../../platform/database.ts"

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class EntitlementsRepo extends Context.Service<EntitlementsRepo, {
  /** The profile's last applied delivery is newer than `asOf` (the row is locked by the caller). */
  readonly isStale: (profileId: string, asOf: string) => Repo<boolean>
  /** Notes a delivery as of `asOf` (the newest one wins); a missing row starts disabled. */
  readonly recordDelivery: (profileId: string, asOf: string) => Repo<void>
  /** Turns the attribution add-on on or off, creating the row when there is none. */
  readonly setAttribution: (profileId: string, enabled: boolean) => Repo<void>
}>()("svc/EntitlementsRepo") {
  static readonly layer = Layer.effect(EntitlementsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient

      // NULL when no delivery was recorded yet: not stale.
      const firstStale = decodeFirstRow(Schema.Struct({ stale: Schema.NullOr(Schema.Boolean) }))
      const isStale = (profileId: string, asOf: string) =>
        Effect.map(
          firstStale(sql`
            SELECT (delivery_as_of > ${asOf}::timestamptz) AS stale FROM entitlements
            WHERE profile_id = ${profileId} AND feature = 'svc_attribution'`),
          Option.exists((row) => row.stale === true)
        )

      const recordDelivery = (profileId: string, asOf: string) =>
        Effect.asVoid(sql`
          INSERT INTO entitlements (profile_id, feature, enabled, delivery_as_of)
          VALUES (${profileId}, 'svc_attribution', false, ${asOf}::timestamptz)
          ON CONFLICT (profile_id, feature) DO UPDATE
            SET delivery_as_of = GREATEST(entitlements.delivery_as_of, EXCLUDED.delivery_as_of)`)

      const setAttribution = (profileId: string, enabled: boolean) =>
        Effect.asVoid(sql`
          INSERT INTO entitlements (profile_id, feature, enabled) VALUES (${profileId}, 'svc_attribution', ${enabled})
          ON CONFLICT (profile_id, feature) DO UPDATE SET enabled = EXCLUDED.enabled, updated_at = now()`)

      return atDatabaseBoundary({ isStale, recordDelivery, setAttribution })
    })
  )
}
