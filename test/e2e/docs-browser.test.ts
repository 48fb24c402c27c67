/**
 * The API reference in a real browser, offline: headless Chromium loads /docs with every
 * request off the service's own origin blocked, finds `POST /api/v1/events`, opens it and sees
 * its request example; no request leaves the origin and the page's strict CSP refuses nothing.
 * A screenshot is written to a temporary directory (its path is printed).
 *
 * Skipped (not failed) when no Chromium executable is found: `CHROMIUM_PATH`, or the usual
 * system paths (`apt-get install -y chromium` on Debian). playwright-core drives it; it
 * downloads no browser of its own.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { chromium } from "playwright-core"
import { CHROMIUM_ARGS, chromiumPath, freePort, serveOnPort } from "../support/browser.ts"

const appPort = await freePort()
const appUrl = `http://127.0.0.1:${appPort}`
const ServedApp = serveOnPort(appPort)
const executablePath = chromiumPath

describe.skipIf(executablePath === undefined)("API reference in headless Chromium", () => {
  layer(ServedApp, { timeout: "120 seconds", excludeTestServices: true })("/docs offline", (it) => {
    it.effect("shows POST /api/v1/events with its example, from this origin only", () =>
      Effect.scoped(Effect.gen(function*() {
        const page = yield* Effect.promise(() => fetch(`${appUrl}/docs`))
        assert.strictEqual(page.status, 200)
        assert.include(page.headers.get("content-security-policy") ?? "", "script-src 'self'")
        const html = yield* Effect.promise(() => page.text())
        const bundle = /src="(\/docs\/assets\/[^"]+\/swagger-ui-bundle\.js)"/.exec(html)?.[1]
        assert.isDefined(bundle)
        const asset = yield* Effect.promise(() => fetch(`${appUrl}${bundle}`))
        assert.strictEqual(asset.status, 200)
        assert.include(asset.headers.get("cache-control") ?? "", "immutable")
        yield* Effect.promise(() => asset.arrayBuffer())

        const browser = yield* Effect.acquireRelease(
          Effect.promise(() => chromium.launch({ executablePath: executablePath!, headless: true, args: CHROMIUM_ARGS })),
          (opened) => Effect.promise(() => opened.close())
        )
        const context = yield* Effect.promise(() => browser.newContext({ viewport: { width: 1280, height: 900 } }))
        const tab = yield* Effect.promise(() => context.newPage())
        const blocked: Array<string> = []
        yield* Effect.promise(() =>
          tab.route("**/*", (route) => {
            const url = route.request().url()
            if (url.startsWith(`${appUrl}/`) || url.startsWith("data:")) return route.continue()
            blocked.push(url)
            return route.abort("internetdisconnected")
          })
        )
        const refused: Array<string> = []
        tab.on("console", (message) => {
          if (message.text().includes("Content Security Policy")) refused.push(message.text())
        })
        const failed: Array<string> = []
        tab.on("pageerror", (error) => failed.push(error.message))

        yield* Effect.promise(() => tab.goto(`${appUrl}/docs`, { waitUntil: "load" }))
        const operation = tab.locator(".opblock-post").filter({
          has: tab.locator('.opblock-summary-path[data-path="/api/v1/events"]')
        })
        // Swagger UI renders only the operations near the viewport: scroll until this one is drawn.
        yield* Effect.promise(() => tab.locator(".opblock").first().waitFor({ state: "visible", timeout: 30_000 }))
        yield* Effect.promise(async () => {
          for (let step = 0; step < 200 && (await operation.count()) === 0; step++) {
            await tab.mouse.wheel(0, 700)
            await tab.waitForTimeout(50)
          }
        })
        yield* Effect.promise(() => operation.first().waitFor({ state: "visible", timeout: 10_000 }))
        assert.include(yield* Effect.promise(() => operation.first().locator(".opblock-summary").innerText()), "POST")
        yield* Effect.promise(() => operation.first().locator(".opblock-summary-control").click())
        // The request example (and the operation's description) render once it is open.
        const example = operation.first().getByText("order-2026-000187").first()
        yield* Effect.promise(() => example.waitFor({ state: "visible", timeout: 30_000 }))
        yield* Effect.promise(() => example.scrollIntoViewIfNeeded())
        const guide = yield* Effect.promise(() => tab.locator(".information-container").innerText())
        assert.include(guide, "Quickstart")
        assert.include(guide, "How an OAuth app reaches a key")

        const dir = mkdtempSync(join(tmpdir(), "svc-docs-"))
        const screenshot = join(dir, "docs-events.png")
        yield* Effect.promise(() => tab.screenshot({ path: screenshot }))
        console.log(`docs screenshot: ${screenshot}`)

        assert.deepStrictEqual(blocked, [], "no request leaves the service's origin")
        assert.deepStrictEqual(refused, [], "the strict CSP refuses nothing the page needs")
        assert.deepStrictEqual(failed, [])
      })))
  })
})
