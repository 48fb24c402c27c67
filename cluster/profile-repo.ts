import { Context, Effect, Layer, Schema, SchemaTransformation } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import type { DatabaseUnavailable } from "../schema/errors.ts"
import { atDatabaseBoundary } from "../src/platform/database.ts"

/** A profile's stored state; `updated_at` is null when no row exists yet. */
export interface ProfileRecord {
  readonly profile_id: string
  readonly revocation_epoch: number
  readonly updated_at: string | null
}

// int8 arrives as a bigint, timestamptz as a Date.
const EpochFromBigInt = Schema.BigInt.pipe(
  Schema.decodeTo(Schema.Int, SchemaTransformation.transform({ decode: (n) => Number(n), encode: (n) => BigInt(n) }))
)
const IsoFromDate = Schema.Date.pipe(
  Schema.decodeTo(
    Schema.String,
    SchemaTransformation.transform({ decode: (date) => date.toISOString(), encode: (iso) => new Date(iso) })
  )
)

const ProfileStateRow = Schema.Struct({
  profile_id: Schema.String,
  revocation_epoch: EpochFromBigInt,
  updated_at: IsoFromDate
})

/** The SQL behind the Profile entity. Only the entity (one message at a time per profile) writes here. */
export class ProfileRepo extends Context.Service<ProfileRepo, {
  readonly find: (profileId: string) => Effect.Effect<ProfileRecord, DatabaseUnavailable>
  readonly bumpRevocationEpoch: (profileId: string) => Effect.Effect<ProfileRecord, DatabaseUnavailable>
}>()("svc/ProfileRepo") {
  static readonly layer = Layer.effect(ProfileRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient

      const findRow = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: ProfileStateRow,
        execute: (profileId) =>
          sql`
            SELECT profile_id::text AS profile_id, revocation_epoch, updated_at
            FROM profile_state
            WHERE profile_id = ${profileId}::uuid`
      })

      const bumpRow = SqlSchema.findOne({
        Request: Schema.String,
        Result: ProfileStateRow,
        execute: (profileId) =>
          sql`
            INSERT INTO profile_state (profile_id, revocation_epoch, updated_at)
            VALUES (${profileId}::uuid, 1, now())
            ON CONFLICT (profile_id) DO UPDATE
            SET revocation_epoch = profile_state.revocation_epoch + 1, updated_at = now()
            RETURNING profile_id::text AS profile_id, revocation_epoch, updated_at`
      })

      const find = Effect.fn("ProfileRepo.find")(function*(profileId: string) {
        const row = yield* findRow(profileId)
        return row._tag === "Some" ? row.value : { profile_id: profileId, revocation_epoch: 0, updated_at: null }
      })

      const bumpRevocationEpoch = Effect.fn("ProfileRepo.bumpRevocationEpoch")(function*(profileId: string) {
        // RETURNING always yields the row.
        return yield* bumpRow(profileId).pipe(Effect.catchTag("NoSuchElementError", Effect.die))
      })

      return atDatabaseBoundary({ find, bumpRevocationEpoch })
    })
  )
}
