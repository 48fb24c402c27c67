/**
 * The RPC contract for internal services: what `/rpc` answers (src/rpc/server.ts) and what
 * `makeServiceClient` (src/rpc/client.ts) calls. Schemas only, no I/O.
 *
 * Every call carries `Authorization: Bearer <SVC_RPC_TOKEN>`; without a configured token the
 * server refuses every call with `RpcUnauthorized`.
 */
import { Schema } from "effect"
import { Rpc, RpcGroup, RpcMiddleware } from "effect/rpc"
import { DatabaseUnavailable, ServiceUnavailable } from "./errors.ts"

export { DatabaseUnavailable, ServiceUnavailable }

/** A profile id: a UUID (any version). The server lower-cases it before routing. */
export const ProfileId = Schema.String.check(Schema.isUUID())

/**
 * The Profile entity's state as a caller sees it. A profile never written has
 * `revocation_epoch: 0` and `updated_at: null` (reading does not create a row).
 */
export const ProfileState = Schema.Struct({
  profile_id: Schema.String,
  revocation_epoch: Schema.Int,
  /** ISO 8601 UTC of the last change, or null when the profile has no stored state yet. */
  updated_at: Schema.NullOr(Schema.String),
  /** The runner that handled the message: its `host:port`, or `single` for the in-process runner. */
  served_by: Schema.String
}).annotate({ identifier: "ProfileState" })
export type ProfileState = typeof ProfileState.Type

export const RunnerStatus = Schema.Struct({
  address: Schema.String,
  healthy: Schema.Boolean
})

export const ClusterStatusInfo = Schema.Struct({
  mode: Schema.Literals(["single", "socket"]),
  /** This runner's advertised `host:port`, or `single`. */
  runner_address: Schema.String,
  /** Runners registered in the runner table; empty when the table cannot be read. */
  runners: Schema.Array(RunnerStatus),
  shards: Schema.Struct({
    total: Schema.Int,
    owned_by_this_runner: Schema.Int
  })
}).annotate({ identifier: "ClusterStatus" })
export type ClusterStatusInfo = typeof ClusterStatusInfo.Type

export const ServiceStatusInfo = Schema.Struct({
  version: Schema.String,
  database: Schema.Struct({
    mode: Schema.Literals(["postgres", "embedded"]),
    location: Schema.String,
    reachable: Schema.Boolean,
    migrations: Schema.Struct({
      /** Newest applied migration id; null when the database could not be read. */
      applied: Schema.NullOr(Schema.Int),
      latest: Schema.Int
    })
  }),
  cluster: ClusterStatusInfo
}).annotate({ identifier: "ServiceStatus" })
export type ServiceStatusInfo = typeof ServiceStatusInfo.Type

/** Missing, malformed or wrong bearer token, or no token configured on the server. */
export class RpcUnauthorized extends Schema.TaggedError<RpcUnauthorized>()("RpcUnauthorized", {
  message: Schema.String
}) {}

/** Bearer-token authentication of every call (implemented in src/rpc/server.ts). */
export class RpcAuth extends RpcMiddleware.Service<RpcAuth>()("svc/RpcAuth", { error: RpcUnauthorized }) {}

const ProfileErrors = Schema.Union([DatabaseUnavailable, ServiceUnavailable])

export class ServiceStatus extends Rpc.make("ServiceStatus", { success: ServiceStatusInfo }) {}

/** Reads the profile's state on the runner owning its shard. */
export class ProfileGetState extends Rpc.make("ProfileGetState", {
  payload: { profile_id: ProfileId },
  success: ProfileState,
  error: ProfileErrors
}) {}

/**
 * Increments the profile's revocation epoch on the runner owning its shard. The message is
 * persisted: if that runner dies, the next owner processes it. `ServiceUnavailable` with
 * `reason: "outcome_unknown"` means the bump was accepted but not answered in time; it may
 * still apply.
 */
export class ProfileBumpRevocationEpoch extends Rpc.make("ProfileBumpRevocationEpoch", {
  payload: { profile_id: ProfileId },
  success: ProfileState,
  error: ProfileErrors
}) {}

export const ServiceRpcs = RpcGroup.make(ServiceStatus, ProfileGetState, ProfileBumpRevocationEpoch).middleware(RpcAuth)
export type ServiceRpcs = RpcGroup.Rpcs<typeof ServiceRpcs>
