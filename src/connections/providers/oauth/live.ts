/**
 * `ProviderOAuth` over HTTP, as docs/sandbox-providers.md describes the providers' OAuth side:
 * `/oauth/authorize`, `/oauth/token`, `/v1/me`, `/v1/accounts/<id>/subscriptions`, `/oauth/revoke`.
 */
import { Clock, Effect, Layer, Option, Redacted, Schema } from "effect"
import { ProviderEndpoints } from "../endpoints.ts"
import { ProviderUnavailable } from "../errors.ts"
import { ProviderHttp } from "../http.ts"
import type { ProviderKind } from "../registry.ts"
import { SANDBOX_WORLD_PARAM } from "../sandbox-world.ts"
import { type ProviderClient, ProviderOAuth, type TokenSet } from "./port.ts"

const TokenResponse = Schema.Struct({
  access_token: Schema.String,
  refresh_token: Schema.optional(Schema.NullOr(Schema.String)),
  expires_in: Schema.optional(Schema.NullOr(Schema.Number)),
  scope: Schema.optional(Schema.NullOr(Schema.String))
})

const MeResponse = Schema.Struct({
  user_id: Schema.String,
  scopes: Schema.Array(Schema.String),
  accounts: Schema.Array(Schema.Struct({
    id: Schema.String,
    name: Schema.String,
    currency: Schema.optional(Schema.NullOr(Schema.String)),
    timezone: Schema.optional(Schema.NullOr(Schema.String))
  }))
})

/** Decodes a provider answer; a shape the service cannot read is the provider failing, not the caller. */
export const decodeAnswer = <S extends Schema.Top & { readonly DecodingServices: never }>(
  schema: S,
  facts: { readonly provider: ProviderKind; readonly operation: string }
) =>
(body: unknown): Effect.Effect<S["Type"], ProviderUnavailable> =>
  Schema.decodeUnknownEffect(schema)(body).pipe(
    Effect.mapError((issue) =>
      new ProviderUnavailable({ ...facts, status: 200, detail: `unexpected answer: ${String(issue)}`.slice(0, 500) })
    )
  )

export const ProviderOAuthAdapter = Layer.effect(ProviderOAuth)(Effect.gen(function*() {
  const endpoints = yield* ProviderEndpoints
  const http = yield* ProviderHttp

  /** The app's credentials: the merchant's own when given, else the deployment's app for the provider. */
  const clientOf = (provider: ProviderKind, client: ProviderClient | undefined) => {
    const endpoint = endpoints.endpoint(provider)
    return client ?? { clientId: endpoint.clientId, clientSecret: endpoint.clientSecret, scopes: [] }
  }

  const tokenSet = (provider: ProviderKind, operation: string, form: Record<string, string>, client: ProviderClient | undefined) =>
    Effect.gen(function*() {
      const app = clientOf(provider, client)
      const body = yield* http.call({
        provider,
        operation,
        method: "POST",
        path: "/oauth/token",
        form: { ...form, client_id: app.clientId, client_secret: Redacted.value(app.clientSecret) }
      })
      const answer = yield* decodeAnswer(TokenResponse, { provider, operation })(body)
      const now = yield* Clock.currentTimeMillis
      return {
        accessToken: Redacted.make(answer.access_token),
        refreshToken: Option.map(Option.fromNullishOr(answer.refresh_token), Redacted.make),
        expiresAt: Option.map(Option.fromNullishOr(answer.expires_in), (seconds) => new Date(now + seconds * 1000)),
        scopes: (answer.scope ?? "").split(" ").filter((scope) => scope.length > 0)
      } satisfies TokenSet
    })

  return {
    authorizeUrl: (provider, request) =>
      Effect.sync(() => {
        const endpoint = endpoints.endpoint(provider)
        const app = clientOf(provider, request.client)
        const url = new URL(`${endpoint.baseUrl}/oauth/authorize`)
        url.searchParams.set("client_id", app.clientId)
        if (app.scopes.length > 0) url.searchParams.set("scope", app.scopes.join(" "))
        url.searchParams.set("redirect_uri", request.redirectUri)
        url.searchParams.set("state", request.state)
        url.searchParams.set("response_type", "code")
        if (request.shop !== undefined) url.searchParams.set("shop", request.shop)
        const worlds = endpoints.sandboxWorlds
        if (Option.isSome(worlds) && request.profileId !== undefined) {
          url.searchParams.set(SANDBOX_WORLD_PARAM, worlds.value.handle(request.profileId))
        }
        return url.toString()
      }),
    exchangeCode: (provider, request) =>
      tokenSet(provider, `${provider}.exchangeCode`, {
        grant_type: "authorization_code",
        code: request.code,
        redirect_uri: request.redirectUri
      }, request.client),
    refresh: (provider, refreshToken, client) =>
      tokenSet(provider, `${provider}.refresh`, {
        grant_type: "refresh_token",
        refresh_token: Redacted.value(refreshToken)
      }, client),
    identify: (provider, accessToken) =>
      http.call({ provider, operation: `${provider}.identify`, method: "GET", path: "/v1/me", accessToken }).pipe(
        Effect.flatMap(decodeAnswer(MeResponse, { provider, operation: `${provider}.identify` })),
        Effect.map((me) => ({
          userId: me.user_id,
          scopes: me.scopes,
          accounts: me.accounts.map((account) => ({
            id: account.id,
            name: account.name,
            currency: account.currency ?? null,
            timezone: account.timezone ?? null
          }))
        }))
      ),
    subscribe: (session, callbackUrl) =>
      http.call({
        provider: session.provider,
        operation: `${session.provider}.subscribe`,
        connectionId: session.connectionId,
        method: "POST",
        path: `/v1/accounts/${encodeURIComponent(session.accountId)}/subscriptions`,
        accessToken: session.accessToken,
        json: { callback_url: callbackUrl }
      }).pipe(Effect.asVoid),
    unsubscribe: (session) =>
      http.call({
        provider: session.provider,
        operation: `${session.provider}.unsubscribe`,
        connectionId: session.connectionId,
        method: "DELETE",
        path: `/v1/accounts/${encodeURIComponent(session.accountId)}/subscriptions`,
        accessToken: session.accessToken
      }).pipe(Effect.asVoid),
    revoke: (session) =>
      http.call({
        provider: session.provider,
        operation: `${session.provider}.revoke`,
        connectionId: session.connectionId,
        method: "POST",
        path: "/oauth/revoke",
        accessToken: session.accessToken,
        form: { token: Redacted.value(session.accessToken) }
      }).pipe(Effect.asVoid)
  }
}))

/** The OAuth side with the HTTP client and the endpoints it needs (AppConfig from below). */
export const ProviderOAuthLayer = ProviderOAuthAdapter.pipe(
  Layer.provide(ProviderHttp.layer),
  Layer.provide(ProviderEndpoints.layer)
)
