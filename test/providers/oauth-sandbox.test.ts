/**
 * The sandbox's OAuth side over real HTTP, through the service's own ProviderOAuth client:
 * consent page contract, approve and cancel, code exchange (single use), refresh, /v1/me per
 * persona, subscriptions, revocation.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { ProviderOAuth } from "../../src/connections/providers/oauth/port.ts"
import { ProviderOAuthLayer } from "../../src/connections/providers/oauth/live.ts"
import { call, TestServer } from "../support/app.ts"
import {
  driveConsent,
  redirectParams,
  SANDBOX_TOKEN_WORLD,
  sandboxControl,
  sandboxSecretOf,
  serveAppOnOwnPort
} from "../support/providers.ts"
import { worldHandle } from "../support/sandbox-world.ts"

const REDIRECT = "https://app.example/callback"

const consentAndExchange = (persona: string) =>
  Effect.gen(function*() {
    const oauth = yield* ProviderOAuth
    const startUrl = yield* oauth.authorizeUrl("adplatform", { redirectUri: REDIRECT, state: "st-1", profileId: SANDBOX_TOKEN_WORLD })
    const consent = yield* driveConsent(startUrl, { persona, decision: "approve" })
    const back = redirectParams(consent.location)
    assert.strictEqual(consent.status, 303)
    assert.strictEqual(back.state, "st-1")
    assert.isString(back.code)
    const tokens = yield* oauth.exchangeCode("adplatform", { code: back.code ?? "", redirectUri: REDIRECT })
    return { tokens, code: back.code ?? "" }
  }).pipe(Effect.provide(ProviderOAuthLayer))

layer(serveAppOnOwnPort(), { timeout: "60 seconds", excludeTestServices: true })("sandbox OAuth", (it) => {
  it.effect("the consent page: one POST form, a persona select defaulting to one_account, approve and cancel buttons", () =>
    Effect.gen(function*() {
      const oauth = yield* ProviderOAuth
      const startUrl = yield* oauth.authorizeUrl("adplatform", { redirectUri: REDIRECT, state: "s", profileId: SANDBOX_TOKEN_WORLD })
      const { url } = yield* TestServer
      assert.isTrue(startUrl.startsWith(`${url}/sandbox/adplatform/oauth/authorize?`))
      const page = yield* call(startUrl.slice(url.length))
      assert.strictEqual(page.status, 200)
      assert.include(page.headers.get("content-type") ?? "", "text/html")
      assert.strictEqual(page.text.match(/<form /g)?.length, 1)
      assert.include(page.text, `<form method="post">`)
      assert.include(page.text, `<select name="persona">`)
      assert.include(page.text, `<option value="one_account" selected>`)
      assert.include(page.text, `value="two_accounts"`)
      assert.include(page.text, `value="no_manage_ads_permission"`)
      assert.include(page.text, `name="decision" value="approve"`)
      assert.include(page.text, `name="decision" value="cancel"`)
      // The link names its sandbox world (decision 0109); one that names none, or a forged one, is refused.
      const link = new URL(startUrl)
      assert.strictEqual(link.searchParams.get("sandbox_world"), worldHandle(SANDBOX_TOKEN_WORLD))
      for (const world of [null, `${SANDBOX_TOKEN_WORLD}.${"0".repeat(32)}`]) {
        if (world === null) link.searchParams.delete("sandbox_world")
        else link.searchParams.set("sandbox_world", world)
        const refused = yield* call(link.toString().slice(url.length))
        assert.strictEqual(refused.status, 400)
        assert.notInclude(refused.text, `name="persona"`)
      }
    }).pipe(Effect.provide(ProviderOAuthLayer)))

  it.effect("cancel redirects back with error=access_denied and the state", () =>
    Effect.gen(function*() {
      const oauth = yield* ProviderOAuth
      const startUrl = yield* oauth.authorizeUrl("adplatform", { redirectUri: REDIRECT, state: "st-2", profileId: SANDBOX_TOKEN_WORLD })
      const consent = yield* driveConsent(startUrl, { decision: "cancel" })
      assert.strictEqual(consent.status, 303)
      const back = redirectParams(consent.location)
      assert.deepStrictEqual([back.error, back.errorReason, back.state, back.code], ["access_denied", "user_denied", "st-2", null])
    }).pipe(Effect.provide(ProviderOAuthLayer)))

  it.effect("approve → code → tokens → /v1/me; the code works once; refresh gives a working token", () =>
    Effect.gen(function*() {
      const oauth = yield* ProviderOAuth
      const { tokens, code } = yield* consentAndExchange("one_account")
      assert.includeMembers([...tokens.scopes], ["ads_read", "ads_management"])
      assert.isTrue(Option.isSome(tokens.expiresAt))
      const me = yield* oauth.identify("adplatform", tokens.accessToken)
      assert.strictEqual(me.accounts.length, 1)
      const again = yield* Effect.flip(oauth.exchangeCode("adplatform", { code, redirectUri: REDIRECT }))
      assert.strictEqual(again._tag, "ProviderRefused")
      const refreshed = yield* oauth.refresh("adplatform", Option.getOrThrow(tokens.refreshToken))
      assert.notStrictEqual(Redacted.value(refreshed.accessToken), Redacted.value(tokens.accessToken))
      const meAgain = yield* oauth.identify("adplatform", refreshed.accessToken)
      assert.strictEqual(meAgain.userId, me.userId)
    }).pipe(Effect.provide(ProviderOAuthLayer)))

  it.effect("personas: two_accounts reaches two accounts; no_manage_ads_permission lacks ads_management", () =>
    Effect.gen(function*() {
      const oauth = yield* ProviderOAuth
      const two = yield* consentAndExchange("two_accounts")
      assert.strictEqual((yield* oauth.identify("adplatform", two.tokens.accessToken)).accounts.length, 2)
      const readOnly = yield* consentAndExchange("no_manage_ads_permission")
      assert.notInclude([...readOnly.tokens.scopes], "ads_management")
      const me = yield* oauth.identify("adplatform", readOnly.tokens.accessToken)
      assert.notInclude([...me.scopes], "ads_management")
    }).pipe(Effect.provide(ProviderOAuthLayer)))

  it.effect("subscribe shows in _state; revoke kills the token (401 → ProviderAuthRevoked)", () =>
    Effect.gen(function*() {
      const oauth = yield* ProviderOAuth
      const { tokens } = yield* consentAndExchange("one_account")
      const me = yield* oauth.identify("adplatform", tokens.accessToken)
      const accountId = me.accounts[0]?.id ?? ""
      const session = { provider: "adplatform" as const, connectionId: "conn-1", accountId, accessToken: tokens.accessToken }
      const { url } = yield* TestServer
      // Pushes go to this service's own /hooks/<provider> only (decision 0109): another host is refused.
      const elsewhere = yield* Effect.flip(oauth.subscribe(session, "https://svc.example/hooks/adplatform"))
      assert.strictEqual(elsewhere._tag, "ProviderRefused")
      yield* oauth.subscribe(session, `${url}/hooks/adplatform`)
      const state = yield* sandboxControl("adplatform", "GET", "_state")
      assert.deepInclude(state.json.subscriptions, { account_id: accountId, callback_url: `${url}/hooks/adplatform` })
      assert.notDeepInclude(state.json.subscriptions, { account_id: accountId, callback_url: "https://svc.example/hooks/adplatform" })
      // _state names the app but never shows its secret.
      assert.deepStrictEqual(state.json.app, { client_id: "sandbox-adplatform" })
      assert.notInclude(state.text, sandboxSecretOf("adplatform"))
      yield* oauth.revoke(session)
      const dead = yield* Effect.flip(oauth.identify("adplatform", tokens.accessToken))
      assert.strictEqual(dead._tag, "ProviderAuthRevoked")
    }).pipe(Effect.provide(ProviderOAuthLayer)))

  it.effect("a bad client secret is refused; an unknown sandbox provider is 404", () =>
    Effect.gen(function*() {
      const token = yield* call("/sandbox/adplatform/oauth/token", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "grant_type=authorization_code&code=x&client_id=sandbox-adplatform&client_secret=wrong"
      })
      assert.strictEqual(token.status, 401)
      assert.strictEqual(token.json.error, "invalid_client")
      const unknown = yield* call("/sandbox/nosuch/_state")
      assert.strictEqual(unknown.status, 404)
    }))

  it.effect("expire_tokens: the access token answers 401 but the refresh token still works; token_ttl_seconds sets expires_in", () =>
    Effect.gen(function*() {
      const oauth = yield* ProviderOAuth
      const { tokens } = yield* consentAndExchange("one_account")
      const post = (body: unknown) => sandboxControl("adplatform", "POST", "_faults", body)
      yield* post({ expire_tokens: true })
      const expired = yield* Effect.flip(oauth.identify("adplatform", tokens.accessToken))
      assert.strictEqual(expired._tag, "ProviderAuthRevoked")
      yield* post({ token_ttl_seconds: 120 })
      const refreshed = yield* oauth.refresh("adplatform", Option.getOrThrow(tokens.refreshToken))
      yield* post({ token_ttl_seconds: 3600 })
      const lifetime = Option.getOrThrow(refreshed.expiresAt).getTime() - Date.now()
      assert.isTrue(lifetime > 100_000 && lifetime <= 120_000, String(lifetime))
      assert.strictEqual((yield* oauth.identify("adplatform", refreshed.accessToken)).accounts.length, 1)
      assert.strictEqual((yield* post({ token_ttl_seconds: 0 })).status, 400)
    }).pipe(Effect.provide(ProviderOAuthLayer)))

  it.effect("/docs/sandbox says how to demo with the sandbox providers", () =>
    Effect.gen(function*() {
      const page = yield* call("/docs/sandbox")
      assert.strictEqual(page.status, 200)
      assert.include(page.text, "/sandbox/adplatform/_faults")
      assert.include((yield* call("/docs")).text, `href="/docs/sandbox"`)
    }))
})
