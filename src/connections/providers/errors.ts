/**
 * What a provider call can end in besides success. Internal to the service: each domain maps
 * them onto its documented codes (for instance `adplatform_unavailable` 502, `rate_limit_exceeded`
 * 429 with `Retry-After`, `adplatform_write_permission_missing` 403, a connection marked
 * `reconnect_required`).
 */
import { Data } from "effect"
import type { ProviderKind } from "./registry.ts"

interface CallFacts {
  readonly provider: ProviderKind
  /** The port operation, e.g. `adplatform.listAds`. */
  readonly operation: string
}

/** Unreachable, timed out or answering 5xx after the retries. */
export class ProviderUnavailable extends Data.TaggedError("ProviderUnavailable")<CallFacts & {
  readonly status: number | null
  readonly detail: string
}> {}

/** Still throttled (429) after the retries; `retryAfterSeconds` from the provider when it said. */
export class ProviderThrottled extends Data.TaggedError("ProviderThrottled")<CallFacts & {
  readonly retryAfterSeconds: number
}> {}

/** The grant is dead (token revoked or expired beyond refresh): the connection needs a reconnect. */
export class ProviderAuthRevoked extends Data.TaggedError("ProviderAuthRevoked")<CallFacts> {}

/** The grant lacks a permission the operation needs (e.g. manage ads). */
export class ProviderPermissionMissing extends Data.TaggedError("ProviderPermissionMissing")<CallFacts & {
  readonly permission: string
}> {}

/** A 4xx the provider explains (unknown object, invalid value, refused state change). */
export class ProviderRefused extends Data.TaggedError("ProviderRefused")<CallFacts & {
  readonly status: number
  /** The provider's own error code. */
  readonly code: string
  readonly detail: string
  /** When the provider says the refusal passes (`retry_after_seconds`, e.g. template analytics being switched on). */
  readonly retryAfterSeconds?: number | undefined
}> {}

export type ProviderError =
  | ProviderUnavailable
  | ProviderThrottled
  | ProviderAuthRevoked
  | ProviderPermissionMissing
  | ProviderRefused
