/**
 * The service reachable at its own base URL, as the sandbox providers need it: the sandbox
 * pushes callbacks to `${baseUrl}/hooks/<provider>` and the provider client calls
 * `${baseUrl}/sandbox/...`, so the app is served on a port picked beforehand with `baseUrl` and
 * `providers.sandboxUrl` pointing at it. Plus driving a consent screen like a person would.
 */
import { assert } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { createServer as createHttpServer } from "node:http"
import { createServer } from "node:net"
import { AppRoutes } from "../../src/main/app.ts"
import type { Handoff } from "../../schema/connections.ts"
import type { AppSettings } from "../../src/platform/config.ts"
import { sandboxClientSecret } from "../../src/connections/providers/endpoints.ts"
import type { ProviderKind } from "../../src/connections/providers/registry.ts"
import { DEFAULT_SANDBOX_SECRET } from "../../src/platform/config.ts"
import { call, serveApp, TestServer, testSettings } from "./app.ts"
import { asOperator, worldHandle } from "./sandbox-world.ts"

/** A port free right now on 127.0.0.1 (the OS picks it; the listener closes before the app binds it). */
export const freePort: Effect.Effect<number> = Effect.callback<number>((resume) => {
  const server = createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Overrides of the test settings, where `providers` may name only the fields it changes. */
export type OwnPortOverrides = Partial<Omit<AppSettings, "providers">> & { readonly providers?: Partial<AppSettings["providers"]> }

/**
 * Opens every port of `http://127.0.0.1` to sandbox pushes (decision 0109: by default they go only
 * to the service's own `/hooks/<provider>`), for tests that catch pushes with `callbackCatcher`.
 */
export const LOOPBACK_CALLBACKS = { sandboxCallbackOrigins: ["http://127.0.0.1"] } as const satisfies Partial<AppSettings["providers"]>

/** Settings for an app served at `http://127.0.0.1:<port>` with its sandboxes under `/sandbox`. */
export const ownPortSettings = (port: number, overrides: OwnPortOverrides = {}): AppSettings => {
  const base = testSettings()
  const baseUrl = `http://127.0.0.1:${port}`
  return {
    ...base,
    port,
    baseUrl,
    ...overrides,
    providers: { ...base.providers, sandboxUrl: `${baseUrl}/sandbox`, servesSandbox: true, ...overrides.providers }
  }
}

/** The real app on a pre-picked port; `TestServer.url` is its base URL. */
export const serveAppOnOwnPort = (
  overrides: OwnPortOverrides = {},
  app: Parameters<typeof serveApp>[1] = AppRoutes
) => Layer.unwrap(Effect.map(freePort, (port) => serveApp(ownPortSettings(port, overrides), app)))

/** The client secret a sandbox app has under the default `SVC_SANDBOX_SECRET`: what signs its callbacks. */
export const sandboxSecretOf = (provider: ProviderKind, root: string = DEFAULT_SANDBOX_SECRET) =>
  sandboxClientSecret(root, provider)

export interface ConsentResult {
  /** The consent form's response status (303 when it redirects back). */
  readonly status: number
  /** Where the provider sends the person back (not followed). */
  readonly location: string | null
  /** The consent page's address (after following `start_url`'s redirects). */
  readonly consentUrl: string
  readonly consentHtml: string
}

/**
 * Plays the person at a consent screen: opens `startUrl` (following redirects to the
 * provider's page), posts its form with `persona` and `decision`, and answers the redirect back
 * without following it.
 */
export const driveConsent = (
  startUrl: string,
  choice: { readonly persona?: string; readonly decision?: "approve" | "cancel" } = {}
) =>
  Effect.promise(async (): Promise<ConsentResult> => {
    const page = await fetch(startUrl, { redirect: "follow" })
    const consentHtml = await page.text()
    const form = new URLSearchParams({ persona: choice.persona ?? "one_account", decision: choice.decision ?? "approve" })
    const posted = await fetch(page.url, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: form.toString()
    })
    await posted.text()
    return { status: posted.status, location: posted.headers.get("location"), consentUrl: page.url, consentHtml }
  })

export interface HandoffRun {
  /** The hand-off as minted. */
  readonly handoff: Handoff
  readonly consent: ConsentResult
  /** The service's callback answer (302 back to `return_url`, or a page). */
  readonly callback: { readonly status: number; readonly location: string | null; readonly text: string }
}

/**
 * Runs a connect hand-off as a person would: mints it with `key` (return to the test server's
 * `/done` unless told), plays the provider's consent, and hands the provider's redirect to the
 * service's callback without following the service's own redirect.
 */
export const runHandoff = (
  key: string,
  provider: string,
  options: {
    readonly shop?: string
    readonly persona?: string
    readonly decision?: "approve" | "cancel"
    readonly returnUrl?: string
  } = {}
) =>
  Effect.gen(function*() {
    const { url } = yield* TestServer
    const minted = yield* call(`/api/v1/connections/${provider}/handoff`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        return_url: options.returnUrl ?? `${url}/done`,
        ...(options.shop === undefined ? {} : { shop: options.shop })
      })
    })
    assert.strictEqual(minted.status, 201, minted.text)
    const handoff: Handoff = minted.json.data
    const consent = yield* driveConsent(handoff.start_url, {
      ...(options.persona === undefined ? {} : { persona: options.persona }),
      decision: options.decision ?? "approve"
    })
    assert.strictEqual(consent.status, 303, consent.consentHtml)
    const callback = yield* Effect.promise(async () => {
      const response = await fetch(consent.location ?? "", { redirect: "manual" })
      const text = await response.text()
      return { status: response.status, location: response.headers.get("location"), text }
    })
    return { handoff, consent, callback } satisfies HandoffRun
  })

/**
 * Connects `provider` (commerce: the store `shop`) to the key's profile through a hand-off and
 * the sandbox consent; asserts it succeeded and answers the connection id and the run.
 */
export const connectProvider = (key: string, provider: string, options: { readonly shop?: string; readonly persona?: string } = {}) =>
  Effect.gen(function*() {
    const run = yield* runHandoff(key, provider, options)
    assert.strictEqual(run.callback.status, 302)
    const poll = yield* call(`/api/v1/connections/handoffs/${run.handoff.handoff_id}`, {
      headers: { authorization: `Bearer ${key}` }
    })
    assert.strictEqual(poll.json.data.status, "success", poll.text)
    return { connectionId: poll.json.data.result.connection_id as string, ...run }
  })

/** The code and state in a provider's redirect back (or its error). */
export const redirectParams = (location: string | null) => {
  const url = new URL(location ?? "http://invalid.example/")
  return {
    code: url.searchParams.get("code"),
    state: url.searchParams.get("state"),
    error: url.searchParams.get("error"),
    errorReason: url.searchParams.get("error_reason")
  }
}

/** The world `sandboxToken` consents in unless told: a profile id of this test file's own (decision 0109). */
export const SANDBOX_TOKEN_WORLD = crypto.randomUUID()

/**
 * A test-control call (`_state`, `_faults`) on a sandbox world as the operator (`?profile_id=`),
 * for tests of the sandbox itself: `SANDBOX_TOKEN_WORLD` unless told.
 */
export const sandboxControl = (
  provider: ProviderKind,
  method: string,
  control: "_state" | "_faults",
  body?: unknown,
  world: string = SANDBOX_TOKEN_WORLD
) => {
  const operator = asOperator(`/sandbox/${provider}/${control}`, world)
  return call(operator.path, {
    method,
    headers: { ...operator.headers, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
}

/** A grant's tokens straight from a sandbox (consent as `persona`, then the code exchange), for tests of the sandbox itself. */
export const sandboxToken = (baseUrl: string, provider: ProviderKind, persona = "one_account", world: string = SANDBOX_TOKEN_WORLD) =>
  Effect.gen(function*() {
    const redirectUri = "https://app.example/callback"
    const authorize = new URL(`${baseUrl}/sandbox/${provider}/oauth/authorize`)
    authorize.searchParams.set("sandbox_world", worldHandle(world))
    authorize.searchParams.set("client_id", `sandbox-${provider}`)
    authorize.searchParams.set("redirect_uri", redirectUri)
    authorize.searchParams.set("state", "test")
    const consent = yield* driveConsent(authorize.toString(), { persona, decision: "approve" })
    const { code } = redirectParams(consent.location)
    const answer = yield* Effect.promise(() =>
      fetch(`${baseUrl}/sandbox/${provider}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code: code ?? "",
          redirect_uri: redirectUri,
          client_id: `sandbox-${provider}`,
          client_secret: sandboxSecretOf(provider)
        }).toString()
      }).then((response) => response.json() as Promise<{ access_token: string; refresh_token: string; scope: string }>)
    )
    return answer
  })

export interface CapturedCallback {
  readonly path: string
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: string
}

/** A real HTTP server that records what is posted to it (a subscriber's callback URL), closed with the scope. */
export const callbackCatcher = Effect.acquireRelease(
  Effect.callback<{ readonly url: string; readonly received: Array<CapturedCallback>; readonly close: () => void }>((resume) => {
    const received: Array<CapturedCallback> = []
    const server = createHttpServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const headers: Record<string, string | undefined> = {}
        for (const [name, value] of Object.entries(request.headers)) headers[name] = Array.isArray(value) ? value.join(",") : value
        received.push({ path: request.url ?? "", headers, body: Buffer.concat(chunks).toString("utf8") })
        response.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, received, close: () => server.close() }))
    })
  }),
  (catcher) => Effect.sync(() => catcher.close())
)
