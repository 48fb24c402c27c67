/**
 * The Profile entity's protocol: one instance per profile id, sharded across runners. Every
 * change to a profile's serialised state goes through it, so changes for one profile run one
 * message at a time on the runner owning its shard (entity handlers run with concurrency 1).
 * The behaviour is registered by cluster/Profile.ts.
 */
import { Schema } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { DatabaseUnavailable, InvalidState, NotFound } from "../../../schema/errors.ts"
import { ProfileState } from "../../../schema/rpc.ts"
import { EntitlementResult, PartnerPrivacyMode } from "../../../schema/tenancy.ts"

/** Reads the state; a profile without a row answers epoch 0 and `updated_at: null`. Not persisted. */
export const GetState = Rpc.make("GetState", { success: ProfileState, error: DatabaseUnavailable })

/**
 * Increments the revocation epoch. Persisted, so a runner crash hands it to the next shard
 * owner; run in the message storage's transaction, so the write and its stored reply commit
 * together and a redelivery after a crash does not bump twice. Once sent it completes even if
 * the caller gives up (a timeout or a dropped HTTP request does not interrupt it).
 */
export const BumpRevocationEpoch = Rpc.make("BumpRevocationEpoch", { success: ProfileState, error: DatabaseUnavailable })
  .annotate(ClusterSchema.Persisted, true)
  .annotate(ClusterSchema.WithTransaction, true)
  .annotate(ClusterSchema.Uninterruptible, "client")

/** Turns the attribution add-on on or off for the provisioning app (and may move the privacy mode). */
export const SetEntitlement = Rpc.make("SetEntitlement", {
  payload: {
    app_id: Schema.String,
    client_id: Schema.String,
    request_id: Schema.String,
    enabled: Schema.Boolean,
    privacy_mode: Schema.optionalKey(PartnerPrivacyMode),
    as_of: Schema.optionalKey(Schema.String),
    /** Set when an internal service sent it over RPC (decision 0096): the audit names the credential. */
    service_credential_id: Schema.optionalKey(Schema.String)
  },
  success: EntitlementResult,
  error: Schema.Union([NotFound, InvalidState, DatabaseUnavailable])
})

export const Profile = Entity.make("Profile", [GetState, BumpRevocationEpoch, SetEntitlement])
