/**
 * Authentication of every `/rpc` call (decision 0081), the RPC twin of src/http/auth.ts and
 * built from the same parts: the credential from the RPC header `authorization: Bearer <secret>`
 * (sent in every request message, so it works over HTTP and WebSocket alike), the profile the
 * call names checked against the credential's list, the entitlement gate, the scope check
 * (src/kernel/scope-check.ts), the per-credential rate limit and the PII access log.
 */
import { Cause, Context, Duration, Effect, Exit, Layer, Option } from "effect"
import { RateLimiter } from "effect/persistence/RateLimiter"
import { isUuid } from "../../schema/common.ts"
import { timedRpcCall } from "../platform/metrics.ts"
import { EntitlementRequired, NotFound, statusOfFailure, Unauthorized, InsufficientScope } from "../../schema/errors.ts"
import { RpcAuth, RpcPolicy, type RpcPolicyShape } from "../../schema/rpc.ts"
import { PiiAccessLog, piiResultOf } from "../kernel/audit/pii-access.ts"
import type { PrincipalShape } from "../kernel/principal.ts"
import { checkHeldScopes, checkScopes } from "../kernel/scope-check.ts"
import { AppConfig } from "../platform/config.ts"
import { consumeBucket } from "../platform/rate-limit.ts"
import { secretMatches } from "../platform/secrets.ts"
import { RpcCredentials } from "./credentials/service.ts"
import { CurrentRequestId, newRequestId } from "../platform/request-id.ts"
import { type CredentialRow, RpcCredentialsRepo } from "./credentials/repo.ts"

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i
const METER_WINDOW = Duration.minutes(1)
const NO_POLICY: RpcPolicyShape = { scopes: [] }

/**
 * The caller of the current call as the middleware resolved it: a `service` principal on the
 * profile the call names. Undefined on the cluster calls, which act on no profile's data.
 */
export const RpcCaller = Context.Reference<PrincipalShape | undefined>("svc/RpcCaller", { defaultValue: () => undefined })

const unauthorized = (message = "Missing, invalid, expired or revoked credential.") => new Unauthorized({ message })

/** The `profile_id` a call's payload names, if any (every profile call has one). */
const profileIdOf = (payload: unknown): string | undefined =>
  typeof payload === "object" && payload !== null && "profile_id" in payload && typeof payload.profile_id === "string"
    ? payload.profile_id
    : undefined

/** The credential's per-minute bucket, as an API key's over HTTP. */
const bucketOf = (credential: CredentialRow, policy: RpcPolicyShape) => ({
  key: `service:${credential.id}`,
  limit: credential.rate_limit_per_minute,
  window: METER_WINDOW,
  tokens: policy.cost ?? 1,
  exceeded: { message: `Rate limit of ${credential.rate_limit_per_minute} requests per minute exceeded.` }
})

export const RpcAuthLayer = Layer.effect(RpcAuth)(
  Effect.gen(function*() {
    const { rpcToken } = yield* AppConfig
    const credentials = yield* RpcCredentials
    const repo = yield* RpcCredentialsRepo
    const limiter = yield* RateLimiter
    const piiLog = yield* PiiAccessLog

    return RpcAuth.of((call, options) => {
      // One id per call, as HTTP has per request: on its PII log rows, its audit rows and its refusal.
      const requestId = newRequestId()
      return authorize(call, options).pipe(
        Effect.mapError((error) => withRequestId(error, requestId)),
        Effect.provideService(CurrentRequestId, requestId)
      )
    })

    function authorize(call: Parameters<typeof RpcAuth.Service>[0], { headers, payload, rpc }: Parameters<typeof RpcAuth.Service>[1]) {
      // Calls are timed by method (rpc.server.call.duration, decision 0084).
      const effect = timedRpcCall("ServiceRpcs", rpc._tag)(call)
      const policy = Context.getOrElse(rpc.annotations, RpcPolicy, () => NO_POLICY)
      const match = BEARER.exec(headers["authorization"] ?? "")
      if (match === null) return Effect.fail(unauthorized("Authentication required: send `authorization: Bearer <credential>`."))
      const secret = match[1] ?? ""
      // The deprecated shared token (decision 0081): the cluster calls only, for one release.
      if (Option.isSome(rpcToken) && !secret.startsWith("svc_rpc_") && secretMatches(secret, rpcToken.value)) {
        return policy.cluster === true ? effect : Effect.fail(new InsufficientScope({
          message: "SVC_RPC_TOKEN opens only the cluster calls; use an internal-service credential (svc_rpc_...).",
          reason: "shared_token_cluster_calls_only"
        }))
      }
      return Effect.gen(function*() {
        const found = yield* credentials.authenticate(secret)
        if (Option.isNone(found)) return yield* unauthorized()
        const credential = found.value
        const rawProfileId = profileIdOf(payload)
        const profileId = rawProfileId?.toLowerCase()
        if (profileId !== undefined && credential.profile_ids !== null && !credential.profile_ids.includes(profileId)) {
          return yield* new NotFound({ message: "No such profile.", reason: "profile_not_in_credential" })
        }
        if (profileId === undefined || policy.cluster === true) {
          // The cluster calls read or bump an entity, not profile data: scopes and the allowance only.
          const refused = checkHeldScopes("service", credential.scopes, policy)
          if (refused !== undefined) return yield* refused
          yield* consumeBucket(limiter, bucketOf(credential, policy))
          return yield* effect
        }
        const profile = isUuid(profileId) ? yield* repo.profile(profileId) : Option.none()
        if (Option.isNone(profile)) return yield* new NotFound({ message: "No such profile." })
        const principal: PrincipalShape = {
          kind: "service",
          credentialId: credential.id,
          scopes: credential.scopes,
          rateLimitPerMinute: credential.rate_limit_per_minute,
          profile: {
            profileId: profile.value.profile_id,
            workspaceId: profile.value.workspace_id,
            attributionEnabled: profile.value.attribution_enabled
          }
        }
        const served = Effect.gen(function*() {
          if (policy.entitlement !== undefined && !profile.value.attribution_enabled) {
            return yield* new EntitlementRequired({
              message: `The attribution add-on (${policy.entitlement}) is off for this profile; the provisioning app turns it on.`,
              reason: `entitlement_required:${policy.entitlement}`
            })
          }
          const refused = checkScopes(principal, policy)
          if (refused !== undefined) return yield* refused
          yield* consumeBucket(limiter, bucketOf(credential, policy))
          return yield* Effect.provideService(effect, RpcCaller, principal)
        })
        if (policy.personData !== true) return yield* served
        // As over HTTP: every answer after authentication lands in the PII access log; a failed
        // log write is reported, not turned into a failed read.
        return yield* Effect.onExit(served, (exit) =>
          piiLog.record({
            principal,
            workspaceId: profile.value.workspace_id,
            profileId: profile.value.profile_id,
            route: `RPC ${rpc._tag}`,
            result: piiResultOf(Exit.isSuccess(exit) ? 200 : Option.match(Cause.findErrorOption(exit.cause), {
              onNone: () => 500,
              onSome: statusOfFailure
            }))
          }).pipe(Effect.catch((error) => Effect.logWarning("PII access not logged", error))))
      })
    }
  })
)

/**
 * A catalogued refusal with the call's `request_id` (a copy: errors are values). Anything else
 * (a defect's cause, a transport error) passes as it is.
 */
const withRequestId = <E>(error: E, requestId: string): E => {
  if (!(error instanceof Error) || !("_tag" in error) || !("message" in error)) return error
  const stamped: E = Object.assign(Object.create(Object.getPrototypeOf(error)), error, { request_id: requestId })
  return stamped
}
