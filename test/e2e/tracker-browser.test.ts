/**
 * The tracker in a real browser: the service runs on one port, a tiny static site on another
 * (a different origin, listed in the profile's allowed origins) inlines the snippet; headless
 * Chromium loads a paid-search landing page and navigates SPA-style once, and both touches
 * arrive with the same anonymous id, the paid-search channel and the gclid click-id kind.
 *
 * Skipped (not failed) when no Chromium executable is found: `CHROMIUM_PATH`, or the usual
 * system paths (`apt-get install -y chromium` on Debian). playwright-core drives it; it
 * downloads no browser of its own.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { chromium } from "playwright-core"
import { CHROMIUM_ARGS, chromiumPath, freePort, serveOnPort } from "../support/browser.ts"
import { eventually } from "../support/eventually.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

/** A desktop Chrome agent: the default headless agent says "HeadlessChrome", which the collector drops as a bot. */
const DESKTOP_CHROME =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"

const appPort = await freePort()
const appUrl = `http://127.0.0.1:${appPort}`
const ServedApp = serveOnPort(appPort)
const executablePath = chromiumPath

const page = (snippet: string) => `<!doctype html>
<html>
  <head><meta charset="utf-8"><title>Shop</title><script>${snippet}</script></head>
  <body>
    <h1>Landing</h1>
    <a id="pricing" href="/pricing">Pricing</a>
    <script>
      document.getElementById("pricing").addEventListener("click", function (event) {
        event.preventDefault();
        history.pushState({}, "", "/pricing");
        document.querySelector("h1").textContent = "Pricing";
      });
    </script>
  </body>
</html>`

/** A static site on its own port serving one page with the snippet inlined, whatever the path. */
const startSite = (snippet: string) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ readonly server: Server; readonly origin: string }>((resolve) => {
        const server = createServer((_request, response) => {
          response.writeHead(200, { "content-type": "text/html; charset=utf-8" })
          response.end(page(snippet))
        })
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as AddressInfo
          resolve({ server, origin: `http://127.0.0.1:${port}` })
        })
      })
    ),
    ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
  )

const api = (path: string, key: string, init: { readonly method?: string; readonly body?: unknown } = {}) =>
  Effect.promise(async () => {
    const response = await fetch(`${appUrl}${path}`, {
      method: init.method ?? "GET",
      headers: {
        authorization: `Bearer ${key}`,
        ...(init.body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
    })
    return { status: response.status, text: await response.text() }
  })

interface WebTouch {
  readonly anonymous_id: string
  readonly session_id: string | null
  readonly channel: string
  readonly source: string
  readonly medium: string
  readonly click_id_kind: string | null
  readonly path: string
  readonly url: string
  readonly browser: string | null
}

describe.skipIf(executablePath === undefined)("tracker in headless Chromium", () => {
  layer(ServedApp, { timeout: "120 seconds", excludeTestServices: true })("a landing page and one SPA navigation", (it) => {
    it.effect("both page views arrive: one anonymous id, paid_search, gclid", () =>
      Effect.scoped(Effect.gen(function*() {
        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["tracking:write"], rateLimitPerMinute: 1000 })
        assert.strictEqual((yield* api("/api/v1/tracking/keys", key, { method: "POST" })).status, 201)
        const snippet = yield* api("/api/v1/tracking/snippet", key)
        assert.strictEqual(snippet.status, 200)

        const site = yield* startSite(snippet.text)
        const settings = yield* api("/api/v1/tracking/settings", key, { method: "PATCH", body: { allowed_origins: [site.origin] } })
        assert.strictEqual(settings.status, 200)

        const browser = yield* Effect.acquireRelease(
          Effect.promise(() => chromium.launch({ executablePath: executablePath!, headless: true, args: CHROMIUM_ARGS })),
          (opened) => Effect.promise(() => opened.close())
        )
        const context = yield* Effect.promise(() => browser.newContext({ userAgent: DESKTOP_CHROME }))
        const tab = yield* Effect.promise(() => context.newPage())
        // The page makes no request to anyone but its own site and the collector.
        const requested: Array<string> = []
        tab.on("request", (request) => requested.push(request.url()))
        yield* Effect.promise(() => tab.goto(`${site.origin}/?utm_source=google&utm_medium=cpc&gclid=abc`))
        yield* Effect.promise(() => tab.click("#pricing"))
        yield* Effect.promise(() => tab.waitForURL(`${site.origin}/pricing`))

        const sql = yield* SqlClient
        const touches = yield* eventually(
          sql<WebTouch>`
            SELECT anonymous_id, session_id, channel, source, medium, click_id_kind, path, url, browser
            FROM touches WHERE profile_id = ${profile.profileId} ORDER BY occurred_at, received_at`,
          (rows) => rows.length >= 2,
          { what: "both page views to be stored", within: "20 seconds", every: "200 millis" }
        )
        assert.lengthOf(touches, 2, "both page views arrived")
        const [landing, pricing] = touches
        assert.deepStrictEqual(touches.map((touch) => touch.path).sort(), ["/", "/pricing"])
        assert.strictEqual(landing?.anonymous_id, pricing?.anonymous_id)
        assert.strictEqual(landing?.session_id, pricing?.session_id)
        for (const touch of touches) {
          assert.strictEqual(touch.channel, "paid_search")
          assert.strictEqual(touch.source, "google")
          assert.strictEqual(touch.medium, "cpc")
          assert.strictEqual(touch.click_id_kind, "gclid")
          assert.notInclude(touch.url, "gclid")
          assert.strictEqual(touch.browser, "Chrome")
        }

        // The anonymous id lives in the site's own cookie.
        const cookies = yield* Effect.promise(() => context.cookies(site.origin))
        const aid = cookies.find((cookie) => cookie.name === "svc_aid")
        assert.strictEqual(aid?.value, landing?.anonymous_id)
        assert.strictEqual(aid?.sameSite, "Lax")

        const foreign = requested.filter((url) => !url.startsWith(site.origin) && !url.startsWith(appUrl))
        assert.deepStrictEqual(foreign, [])
      })))
  })
})
