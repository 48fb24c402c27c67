/**
 * What the provider tests share: a consent run through a sandbox's real consent page and token
 * endpoint, a small local HTTP receiver to subscribe as a callback (it records raw bodies and
 * headers, to check signatures with the documented scheme), and a provider client pointed at
 * the sandboxes the test server serves.
 */
import { Effect, Layer, Redacted } from "effect"
import { FetchHttpClient } from "effect/http"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { DEFAULT_SANDBOX_SECRET } from "../../src/platform/config.ts"
import { ProviderEndpoints, sandboxClientId, sandboxClientSecret } from "../../src/providers/endpoints.ts"
import { DEFAULT_PROVIDER_HTTP, ProviderHttp } from "../../src/providers/http.ts"
import type { ProviderSession } from "../../src/providers/oauth/port.ts"
import type { ProviderKind } from "../../src/providers/registry.ts"
import { call, TestServer } from "../support/app.ts"

export const appSecret = (provider: ProviderKind) => sandboxClientSecret(DEFAULT_SANDBOX_SECRET, provider)

const REDIRECT = "http://127.0.0.1:9/callback"

export const json = (method: string, path: string, body?: unknown, token?: string) =>
  call(path, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })

/** Approves the consent page as `persona` and exchanges the code: the grant's access token. */
export const consent = (provider: ProviderKind, options: { readonly persona?: string; readonly shop?: string } = {}) =>
  Effect.gen(function*() {
    const query = new URLSearchParams({ client_id: sandboxClientId(provider), redirect_uri: REDIRECT, state: "st" })
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

export interface Received {
  readonly headers: IncomingHttpHeaders
  readonly body: string
}

/** A callback receiver on 127.0.0.1:0 for the test's scope; answers 200 to every POST. */
export const receiver = Effect.acquireRelease(
  Effect.callback<{ readonly url: string; readonly received: Array<Received>; readonly close: () => void }>((resume) => {
    const received: Array<Received> = []
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        received.push({ headers: request.headers, body: Buffer.concat(chunks).toString("utf8") })
        response.writeHead(200).end()
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({ url: `http://127.0.0.1:${port}/hooks`, received, close: () => server.close() }))
    })
  }),
  (server) => Effect.sync(() => server.close())
)

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
      })
    })),
    Layer.provide(FetchHttpClient.layer)
  )
))

export const session = (provider: ProviderKind, accountId: string, accessToken: string): ProviderSession => ({
  provider,
  connectionId: `test-${provider}-${accountId}`,
  accountId,
  accessToken: Redacted.make(accessToken)
})

/**
 * Runs `viaPort` while the sandbox answers its first attempt 500 and the retry 200. The
 * `error_rate` fault draws from a seeded sequence restarted each time it is set; at 0.2 the
 * first call of the sequence passes and the second fails, which the first half shows over plain
 * HTTP (`probePath`), so the port's call, made second, must have been retried to succeed.
 */
export const withOne500 = <A, E, R>(
  provider: ProviderKind,
  token: string,
  probePath: string,
  viaPort: Effect.Effect<A, E, R>
) =>
  Effect.gen(function*() {
    const faults = (body: unknown) => json("POST", `/sandbox/${provider}/_faults`, body)
    const probe = () => json("GET", `/sandbox/${provider}${probePath}`, undefined, token)
    yield* faults({ error_rate: 0.2 })
    const sequence = [(yield* probe()).status, (yield* probe()).status]
    yield* faults({ error_rate: 0.2 })
    const first = (yield* probe()).status
    const result = yield* Effect.ensuring(viaPort, faults({ error_rate: 0 }))
    return { sequence, first, result }
  })
