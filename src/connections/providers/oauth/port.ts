/**
 * The OAuth side every provider kind shares (authorization-code flow, as the real ad platform,
 * CRM and commerce providers run it): the consent address a hand-off sends the person to, the
 * code exchange, refresh, who the grant is and which accounts it reaches, the push channel
 * (subscribe to callbacks on `/hooks/{provider}`) and revocation.
 */
import type { Effect, Option, Redacted } from "effect"
import { Context } from "effect"
import type { ProviderError } from "../errors.ts"
import type { ProviderKind } from "../registry.ts"

export interface TokenSet {
  readonly accessToken: Redacted.Redacted<string>
  readonly refreshToken: Option.Option<Redacted.Redacted<string>>
  readonly expiresAt: Option.Option<Date>
  /** The permissions the person granted (e.g. `ads_management`, `ads_read`). */
  readonly scopes: ReadonlyArray<string>
}

/** An account the grant reaches: an ad account, a CRM portal, a shop, a business number, a mailbox. */
export interface ProviderAccount {
  readonly id: string
  readonly name: string
  readonly currency: string | null
  readonly timezone: string | null
}

export interface ProviderIdentity {
  readonly userId: string
  readonly scopes: ReadonlyArray<string>
  readonly accounts: ReadonlyArray<ProviderAccount>
}

/**
 * A live grant on one connection: the rate-limited bucket and the spans are keyed by
 * `connectionId`; `accountId` is the provider's account the connection is for.
 */
export interface ProviderSession {
  readonly provider: ProviderKind
  readonly connectionId: string
  readonly accountId: string
  readonly accessToken: Redacted.Redacted<string>
}

/**
 * The app the service authenticates as, when not the deployment's own for the provider: a
 * merchant's custom commerce app registered through `/api/v1/admin/commerce-apps` (decision 0066).
 */
export interface ProviderClient {
  readonly clientId: string
  readonly clientSecret: Redacted.Redacted<string>
  /** Asked for at the consent (`scope`); empty: the provider's defaults. */
  readonly scopes: ReadonlyArray<string>
}

export class ProviderOAuth extends Context.Service<ProviderOAuth, {
  /** The provider's consent address (a hand-off's `start_url` leads here). `shop` for commerce. */
  readonly authorizeUrl: (
    provider: ProviderKind,
    request: {
      readonly redirectUri: string
      readonly state: string
      readonly shop?: string
      readonly client?: ProviderClient
      /** The profile connecting: in sandbox mode the link names its world (decision 0109). */
      readonly profileId?: string
    }
  ) => Effect.Effect<string>
  readonly exchangeCode: (
    provider: ProviderKind,
    request: { readonly code: string; readonly redirectUri: string; readonly client?: ProviderClient }
  ) => Effect.Effect<TokenSet, ProviderError>
  readonly refresh: (
    provider: ProviderKind,
    refreshToken: Redacted.Redacted<string>,
    client?: ProviderClient
  ) => Effect.Effect<TokenSet, ProviderError>
  readonly identify: (provider: ProviderKind, accessToken: Redacted.Redacted<string>) => Effect.Effect<ProviderIdentity, ProviderError>
  /** Opens the push channel: the provider posts this account's events to `callbackUrl`. */
  readonly subscribe: (session: ProviderSession, callbackUrl: string) => Effect.Effect<void, ProviderError>
  /** Stops the push channel (disconnect). */
  readonly unsubscribe: (session: ProviderSession) => Effect.Effect<void, ProviderError>
  readonly revoke: (session: ProviderSession) => Effect.Effect<void, ProviderError>
}>()("svc/ProviderOAuth") {}
