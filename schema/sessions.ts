/**
 * Console sessions (`/api/v1/sessions`) and the signed-in person's MCP user tokens
 * (`/api/v1/me/mcp-tokens`). Decision 0021. The session secret travels only in the
 * `svc_session` cookie; the CSRF token only in this answer and the `X-CSRF-Token` header;
 * a user token's plaintext only in the answer that minted it.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Uuid } from "./common.ts"
import { McpGrants } from "./scopes.ts"

export const CreateSession = Schema.Struct({
  email: Schema.String.check(Schema.isMaxLength(320)),
  /** Capped so a huge body cannot make the KDF expensive. */
  password: Schema.String.check(Schema.isMaxLength(1024))
})
export type CreateSession = typeof CreateSession.Type

/** 201: who signed in, the CSRF token for unsafe requests, and when the session ends. */
export const SessionCreated = Schema.Struct({
  data: Schema.Struct({
    user_id: Uuid,
    email: Schema.String,
    csrf_token: Schema.String,
    expires_at: Schema.String
  })
}).pipe(HttpApiSchema.status(201))

export const McpGrant = Schema.Literals(McpGrants)

export const CreateMcpToken = Schema.Struct({
  /** Default `["mcp:read"]`. */
  grants: Schema.optionalKey(Schema.Array(McpGrant).check(Schema.isMinLength(1), Schema.isMaxLength(3))),
  /** 1 to 10000, default 120. */
  rate_limit_units_per_minute: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10_000 }))),
  /** 1 to 365; absent: the token does not expire. */
  expires_in_days: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 365 })))
})
export type CreateMcpToken = typeof CreateMcpToken.Type

/** 201: the token with its plaintext, shown this once. */
export const McpTokenCreated = Schema.Struct({
  data: Schema.Struct({
    id: Uuid,
    token: Schema.String,
    /** `svc_user_` and the first four characters of the body. */
    prefix: Schema.String,
    grants: Schema.Array(McpGrant),
    rate_limit_units_per_minute: Schema.Int,
    expires_at: Schema.NullOr(Schema.String)
  })
}).pipe(HttpApiSchema.status(201))
