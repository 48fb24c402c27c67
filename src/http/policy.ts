/**
 * Each operation's access policy, declared beside its endpoint in `src/<domain>/api.ts`.
 * The same data drives the authentication middleware, the scope check, the rate limiter's
 * cost, the idempotency middleware and the `x-` extensions of the OpenAPI document.
 */
import { Context } from "effect"
import { OpenApi } from "effect/http-api"

/** The credential kinds the specification names. */
export type CredentialKind = "api_key" | "user_token" | "app_client" | "session" | "operator"

export interface OperationPolicy {
  /** Scopes the caller must hold. Empty: none. */
  readonly scopes: ReadonlyArray<string>
  /** `all` (default): every scope; `any`: one of them (e.g. `conversions:read or customers:read`). */
  readonly scopeMode?: "all" | "any"
  /**
   * The body field whose value names the one scope of `scopes` the call needs (a message send
   * needs its `channel`'s scope). The middleware checks `any` before the body is read; the
   * handler checks the named one with `checkNamedScope`. Published as `x-scope-from: body.<field>`.
   */
  readonly scopeFrom?: string
  /** Credential kinds the operation accepts. Empty: public. */
  readonly auth: ReadonlyArray<CredentialKind>
  readonly idempotency: "required" | "optional" | "none"
  /** What the credential is scoped to for this operation. */
  readonly grain: "profile" | "workspace" | "app" | "none"
  /** Units of the per-minute allowance this call costs (heavy reads cost 3). */
  readonly cost?: number
  /**
   * A write of the attribution tier: on an app-provisioned profile with this add-on off it
   * answers 409 `entitlement_required` for any principal, before the scope check.
   */
  readonly entitlement?: "svc_attribution"
  /** Answers customer or visitor personal data: every call is written to the workspace's PII access log. */
  readonly personData?: boolean
}

export class Policy extends Context.Service<Policy, OperationPolicy>()("svc/OperationPolicy") {}

/** Who may call a profile-grain route: the profile's keys and its people (user tokens and sessions). */
export const PROFILE_PRINCIPALS = ["api_key", "user_token", "session"] as const satisfies ReadonlyArray<CredentialKind>

export const PUBLIC: OperationPolicy = { scopes: [], auth: [], idempotency: "none", grain: "none" }

/**
 * An operation's policy as endpoint annotations (`endpoint.annotateMerge(policy(...))`):
 * read by the middleware, and published as the operation's `x-` extensions.
 */
export const policy = (policy: OperationPolicy): Context.Context<Policy | OpenApi.Override> =>
  Context.make(Policy, policy).pipe(Context.add(OpenApi.Override, {
    "x-scopes": [...policy.scopes],
    ...(policy.scopeMode === "any" ? { "x-scope-mode": "any" } : {}),
    ...(policy.scopeFrom !== undefined ? { "x-scope-from": `body.${policy.scopeFrom}` } : {}),
    "x-auth": [...policy.auth],
    "x-idempotency": policy.idempotency,
    "x-scope-grain": policy.grain,
    ...(policy.cost !== undefined && policy.cost !== 1 ? { "x-rate-cost": policy.cost } : {}),
    ...(policy.entitlement !== undefined ? { "x-entitlement": policy.entitlement } : {}),
    ...(policy.personData === true ? { "x-person-data": true } : {}),
    security: policy.auth.flatMap((kind) => securitySchemesOf[kind].map((name) => ({ [name]: [] })))
  }))

/** The OpenAPI security schemes that carry each credential kind. */
const securitySchemesOf: Record<CredentialKind, ReadonlyArray<string>> = {
  api_key: ["apiKey"],
  user_token: ["userToken"],
  app_client: ["appClientBasic"],
  session: ["session"],
  operator: ["operatorToken"]
}

export const securitySchemes = {
  apiKey: {
    type: "http",
    scheme: "bearer",
    description: "A profile API key (`svc_live_...`), server-to-server only."
  },
  userToken: {
    type: "http",
    scheme: "bearer",
    description: "An MCP user token naming a person; profile routes need `?profile_id=`."
  },
  appClientBasic: {
    type: "http",
    scheme: "basic",
    description: "OAuth-app client credential (client_id:client_secret) for partner management routes."
  },
  session: { type: "apiKey", in: "cookie", name: "svc_session", description: "Signed-in console session." },
  operatorToken: { type: "http", scheme: "bearer", description: "Operator token (`SVC_ADMIN_TOKEN`)." }
} as const
