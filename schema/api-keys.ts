/**
 * Workspace API keys (`/api/v1/workspaces/{workspaceId}/api-keys`): list (prefixes only),
 * create, edit, revoke and rotate. The plaintext `key` appears in exactly two answers, the
 * create and the rotate that minted it; no read ever carries it or its digest.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Page, Uuid } from "./common.ts"

/** `revoked` (revoked_at set), `expired` (expires_at passed, e.g. the end of a rotation grace), else `active`. */
export const ApiKeyStatus = Schema.Literals(["active", "expired", "revoked"])
export type ApiKeyStatus = typeof ApiKeyStatus.Type

const Name = Schema.String.check(Schema.isMaxLength(200))
/** Scope names are checked against the catalogue by the service, so an unknown one is named in the 400. */
const ScopeNames = Schema.Array(Schema.String.check(Schema.isMaxLength(100))).check(
  Schema.isMinLength(1),
  Schema.isMaxLength(64)
)
const RateLimitPerMinute = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 10_000 }))

export const CreateApiKey = Schema.Struct({
  /** A live profile of the workspace; the key is bound to it. */
  profile_id: Schema.String,
  name: Schema.optionalKey(Name),
  /** Default: `analytics:read`, `campaigns:read`, `conversions:read`, `realtime:read`. */
  scopes: Schema.optionalKey(ScopeNames),
  /** 1 to 10000, default 60. */
  rate_limit_per_minute: Schema.optionalKey(RateLimitPerMinute)
})
export type CreateApiKey = typeof CreateApiKey.Type

export const UpdateApiKey = Schema.Struct({
  name: Schema.optionalKey(Name),
  scopes: Schema.optionalKey(ScopeNames),
  rate_limit_per_minute: Schema.optionalKey(RateLimitPerMinute)
})
export type UpdateApiKey = typeof UpdateApiKey.Type

/** A key as every read shows it: the display prefix, never the secret nor its digest. */
export const ApiKey = Schema.Struct({
  id: Uuid,
  workspace_id: Uuid,
  profile_id: Uuid,
  name: Schema.String,
  /** `svc_live_` and the first four characters of the body. */
  prefix: Schema.String,
  scopes: Schema.Array(Schema.String),
  rate_limit_per_minute: Schema.Int,
  /** Set on a key minted for (or by) an OAuth app. */
  oauth_app_id: Schema.NullOr(Uuid),
  /** Set on a key minted by rotating another. */
  rotated_from_id: Schema.NullOr(Uuid),
  status: ApiKeyStatus,
  created_at: Schema.String,
  /** Set on a rotated-away key: the end of its 48-hour grace. */
  expires_at: Schema.NullOr(Schema.String),
  revoked_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "ApiKey" })
export type ApiKey = typeof ApiKey.Type

/** Scopes asked for but left out because the profile is healthcare-family (S5.1); present only when any were. */
const WithheldMeta = Schema.Struct({ withheld_scopes: Schema.Array(Schema.String) })

const NewKey = Schema.Struct({ ...ApiKey.fields, key: Schema.String })

/** 201: the key with its plaintext, shown this once. */
export const ApiKeyCreated = Schema.Struct({
  data: NewKey,
  meta: Schema.optionalKey(WithheldMeta)
}).pipe(HttpApiSchema.status(201))

/** 201: the successor with its plaintext (shown once) and the rotated-away key with its `expires_at`. */
export const ApiKeyRotated = Schema.Struct({
  data: NewKey,
  meta: Schema.Struct({
    rotated_from: ApiKey,
    withheld_scopes: Schema.optionalKey(Schema.Array(Schema.String))
  })
}).pipe(HttpApiSchema.status(201))

export const ApiKeyBody = Schema.Struct({ data: ApiKey, meta: Schema.optionalKey(WithheldMeta) })

export const ApiKeyPage = Page(ApiKey)
