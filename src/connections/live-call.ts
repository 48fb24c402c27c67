/**
 * One call on the profile's current connection of a provider, with the provider's failures
 * answered as documented codes (the inbox, email and calendar routes; decision 0080):
 * no connection or one awaiting a reconnect is 409 `invalid_state`; a dead grant is reported once
 * (`reconnect_required`) and answered by the caller's `authRevoked`; an object the provider does
 * not show this grant is 404; a value it refuses is 422 `validation_error`; a state it refuses is
 * 409; a throttle is 429 with `Retry-After`; only an unreachable or failing provider is 502.
 */
import { Effect, Option } from "effect"
import {
  AdplatformUnavailable,
  type DatabaseUnavailable,
  InvalidState,
  NotFound,
  RateLimitExceeded,
  unprocessable,
  type ValidationError
} from "../../schema/errors.ts"
import type { ProviderError } from "./providers/errors.ts"
import type { ProviderSession } from "./providers/oauth/port.ts"
import { type ConnectionRecord, ConnectionSessions } from "./sessions.ts"

export type LiveCallError = InvalidState | NotFound | ValidationError | RateLimitExceeded | AdplatformUnavailable | DatabaseUnavailable

export const connectionRequired = (provider: string) =>
  new InvalidState({
    message: `The profile has no ${provider} connection: connect it through POST /api/v1/connections/${provider}/handoff.`,
    reason: `${provider}_connection_required`,
    provider
  })

export const reconnectRequired = (provider: string) =>
  new InvalidState({
    message: `The ${provider} grant is no longer valid: reconnect it through POST /api/v1/connections/${provider}/handoff.`,
    reason: "reconnect_required",
    reconnect_required: true,
    provider
  })

const providerFields = (provider: string, status: number | null, code: string | null, detail: string) => ({
  provider,
  ...(status === null ? {} : { provider_status: status }),
  ...(code === null ? {} : { provider_code: code }),
  provider_message: detail.slice(0, 200)
})

/** The provider's failure as a documented answer (the dead grant is the caller's `authRevoked`). */
export const mapProviderError = <E>(provider: string, what: string, authRevoked: () => E) =>
(error: ProviderError): E | LiveCallError => {
  switch (error._tag) {
    case "ProviderAuthRevoked":
      return authRevoked()
    case "ProviderThrottled":
      return new RateLimitExceeded({
        message: `The ${provider} provider is throttling this connection; retry after the delay it asked for.`,
        reason: "provider_throttled",
        provider,
        retry_after_seconds: Math.max(1, Math.ceil(error.retryAfterSeconds))
      })
    case "ProviderPermissionMissing":
      return new InvalidState({
        message: `The ${provider} grant lacks the permission ${error.permission}; reconnect it to grant it.`,
        reason: "provider_permission_missing",
        reconnect_required: true,
        provider
      })
    case "ProviderRefused":
      // The provider hides what this grant cannot reach: an unknown id and a foreign one answer alike.
      if (error.status === 404) return new NotFound({ message: `${what} was not found.` })
      if (error.status === 409) {
        return new InvalidState({
          message: `The ${provider} provider refused the change: ${error.detail.slice(0, 200)}`,
          reason: error.code,
          ...providerFields(provider, error.status, error.code, error.detail)
        })
      }
      if (error.status >= 400 && error.status < 500) {
        return unprocessable(`The ${provider} provider refused the request: ${error.detail.slice(0, 200)}`, { reason: error.code })
      }
      return unavailable(provider, error.status, error.code, error.detail)
    case "ProviderUnavailable":
      return unavailable(provider, error.status, null, error.detail)
  }
}

const unavailable = (provider: string, status: number | null, code: string | null, detail: string) =>
  new AdplatformUnavailable({
    message: `The ${provider} provider could not be reached; retry shortly.`,
    reason: "provider_unavailable",
    ...providerFields(provider, status, code, detail)
  })

export interface LiveCallOptions<E> {
  /** What the path names, for a 404's message (e.g. `Calendar cal_1`). */
  readonly what: string
  /** The answer to a dead grant (after it is reported); `reconnect_required` 409 by default. */
  readonly authRevoked?: () => E
}

/**
 * The caller of the profile's current connections: `(profileId, provider, options, call)` runs
 * `call` on a session of it. `call` may fail with its own errors besides the provider's; those
 * pass through unchanged.
 */
export const liveCaller = Effect.gen(function*() {
  const sessions = yield* ConnectionSessions
  return <A, F, E = never>(
    profileId: string,
    provider: string,
    options: LiveCallOptions<E>,
    call: (session: ProviderSession, connection: ConnectionRecord) => Effect.Effect<A, ProviderError | F>
  ): Effect.Effect<A, LiveCallError | E | Exclude<F, ProviderError>> =>
    Effect.gen(function*() {
      const authRevoked: () => E | InvalidState = options.authRevoked ?? (() => reconnectRequired(provider))
      const found = yield* sessions.currentOf(profileId, provider)
      if (Option.isNone(found)) return yield* connectionRequired(provider)
      const connection = found.value
      if (connection.status === "reconnect_required") return yield* Effect.fail(authRevoked())
      const mapped = mapProviderError(provider, options.what, authRevoked)
      return yield* sessions.session(connection.id).pipe(
        Effect.flatMap((session) => call(session, connection)),
        Effect.catchIf(isProviderError, (error) =>
          error._tag === "ProviderAuthRevoked"
            ? Effect.flatMap(sessions.reportAuthRevoked(connection.id), () => Effect.fail(mapped(error)))
            : Effect.fail(mapped(error)))
      )
    })
})

export type LiveCaller = Effect.Success<typeof liveCaller>

const PROVIDER_TAGS = new Set(["ProviderUnavailable", "ProviderThrottled", "ProviderAuthRevoked", "ProviderPermissionMissing", "ProviderRefused"])

const isProviderError = <E>(error: E | ProviderError): error is ProviderError =>
  typeof error === "object" && error !== null && "_tag" in error && typeof error._tag === "string" && PROVIDER_TAGS.has(error._tag)
