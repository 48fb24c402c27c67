/**
 * The service reachable at its own base URL, as the sandbox providers need it: the sandbox
 * pushes callbacks to `${baseUrl}/hooks/<provider>` and the provider client calls
 * `${baseUrl}/sandbox/...`, so the app is served on a port picked beforehand with `baseUrl` and
 * `providers.sandboxUrl` pointing at it. Plus driving a consent screen like a person would.
 */
import { Effect, Layer } from "effect"
import { createServer } from "node:net"
import { HttpApp } from "../../src/main/app.ts"
import type { AppSettings } from "../../src/platform/config.ts"
import { sandboxClientSecret } from "../../src/providers/endpoints.ts"
import type { ProviderKind } from "../../src/providers/registry.ts"
import { DEFAULT_SANDBOX_SECRET } from "../../src/platform/config.ts"
import { serveApp, testSettings } from "./app.ts"

/** A port free right now on 127.0.0.1 (the OS picks it; the listener closes before the app binds it). */
export const freePort: Effect.Effect<number> = Effect.callback<number>((resume) => {
  const server = createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Settings for an app served at `http://127.0.0.1:<port>` with its sandboxes under `/sandbox`. */
export const ownPortSettings = (port: number, overrides: Partial<AppSettings> = {}): AppSettings => {
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
  overrides: Partial<AppSettings> = {},
  app: Parameters<typeof serveApp>[1] = HttpApp
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
