/**
 * What the crm, commerce and cardgw tests share: a consent run through a sandbox's real consent
 * page and token endpoint (with a commerce `shop`), a provider client pointed at the sandboxes the
 * test server serves, and a 500 the port must retry. Callbacks are caught by
 * test/support/providers.ts `callbackCatcher`.
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { OutboundHttpLayer } from "../../src/platform/outbound-http.ts"
import { ProviderEndpoints, sandboxClientId } from "../../src/connections/providers/endpoints.ts"
import { DEFAULT_PROVIDER_HTTP, ProviderHttp } from "../../src/connections/providers/http.ts"
import type { ProviderSession } from "../../src/connections/providers/oauth/port.ts"
import type { ProviderKind } from "../../src/connections/providers/registry.ts"
import { call, TestServer } from "../support/app.ts"
import { sandboxSecretOf } from "../support/providers.ts"
import { asOperator, worldHandle } from "../support/sandbox-world.ts"

/** The sandbox world these tests of the sandbox itself act in: a profile id of their own (decision 0109). */
export const WORLD = crypto.randomUUID()

/** The app secret each sandbox signs its callbacks with (under the default `SVC_SANDBOX_SECRET`). */
export const appSecret = (provider: ProviderKind) => sandboxSecretOf(provider)

const REDIRECT = "http://127.0.0.1:9/callback"

export const json = (method: string, path: string, body?: unknown, token?: string) =>
  /\/_(state|faults)$/.test(path) && token === undefined ? control(method, path, body) : call(path, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

/** A test-control call (`_state`, `_faults`) on this file's world, as the operator. */
export const control = (method: string, path: string, body?: unknown) => {
  const operator = asOperator(path, WORLD)
  return call(operator.path, {
    method,
    headers: { ...operator.headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
}

/** Approves the consent page as `persona` and exchanges the code: the grant's access token. */
export const consent = (provider: ProviderKind, options: { readonly persona?: string; readonly shop?: string } = {}) =>
  Effect.gen(function*() {
    const query = new URLSearchParams({ client_id: sandboxClientId(provider), redirect_uri: REDIRECT, state: "st", sandbox_world: worldHandle(WORLD) })
    if (options.shop !== undefined) query.set("shop", options.shop)
    const path = `/sandbox/${provider}/oauth/authorize?${query}`
    const page = yield* call(path)
    if (page.status !== 200 || !page.text.includes(`name="persona"`)) return yield* Effect.die(`consent page: ${page.status} ${page.text}`)
    const approved = yield* call(path, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ persona: options.persona ?? "one_account", decision: "approve" }).toString()
    })
    const location = approved.headers.get("location")
    const code = location === null ? null : new URL(location).searchParams.get("code")
    if (approved.status !== 303 || code === null) return yield* Effect.die(`consent: ${approved.status} ${approved.text}`)
    const token = yield* call(`/sandbox/${provider}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        redirect_uri: REDIRECT,
        client_id: sandboxClientId(provider),
        client_secret: appSecret(provider)
      }).toString()
    })
    if (token.status !== 200) return yield* Effect.die(`token: ${token.status} ${token.text}`)
    return token.json.access_token as string
  })

/** Retries quickly, so a fault's retry shows within a test's time. */
export const TEST_PROVIDER_HTTP = { ...DEFAULT_PROVIDER_HTTP, baseDelayMs: 20, maxDelayMs: 200, attemptTimeoutMs: 5_000 }

/** The provider client aimed at the sandboxes this test server serves. */
export const providerHttpLayer = Layer.unwrap(Effect.map(TestServer, ({ url }) =>
  ProviderHttp.layerWith(TEST_PROVIDER_HTTP).pipe(
    Layer.provide(Layer.succeed(ProviderEndpoints)({
      offered: () => true,
      endpoint: (provider) => ({
        baseUrl: `${url}/sandbox/${provider}`,
        clientId: sandboxClientId(provider),
        clientSecret: Redacted.make(appSecret(provider))
      }),
      sandboxWorlds: Option.none()
    })),
    Layer.provide(OutboundHttpLayer)
  )
))

export const session = (provider: ProviderKind, accountId: string, accessToken: string): ProviderSession => ({
  provider,
  connectionId: `test-${provider}-${accountId}`,
  accountId,
  accessToken: Redacted.make(accessToken)
})

/** Runs `viaPort` while the sandbox answers the next call 500 (`fail_next`): the port must retry to succeed. */
export const withOne500 = <A, E, R>(provider: ProviderKind, viaPort: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const set = yield* json("POST", `/sandbox/${provider}/_faults`, { fail_next: 1 })
    if (set.status !== 200) return yield* Effect.die(`_faults: ${set.status} ${set.text}`)
    const result = yield* viaPort
    const left = (yield* json("POST", `/sandbox/${provider}/_faults`, {})).json.fail_next as number
    return { result, left }
  })
