/**
 * Login CSRF in a real browser (decision 0107): headless Chromium signs in through the MCP
 * consent screen's form (its post names this origin, carries the form token and the
 * `__Host-svc_form` cookie) and lands on the consent screen; a page on another site
 * (127.0.0.2, a different host) that auto-posts the same form with the right password and a
 * form token of its own is refused with the 403 page, and no session exists afterwards.
 *
 * Skipped (not failed) when no Chromium executable is found: `CHROMIUM_PATH`, or the usual
 * system paths (`apt-get install -y chromium` on Debian). playwright-core drives it; it
 * downloads no browser of its own.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { createHash, randomBytes } from "node:crypto"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { chromium, type Request } from "playwright-core"
import { hashPassword } from "../../src/accounts/sessions/service.ts"
import { escapeHtml } from "../../src/platform/html.ts"
import { CHROMIUM_ARGS, chromiumPath, freePort, serveOnPort } from "../support/browser.ts"

const appPort = await freePort()
const appUrl = `http://127.0.0.1:${appPort}`
const ServedApp = serveOnPort(appPort)
const executablePath = chromiumPath

const PASSWORD = "correct horse battery staple"
const REDIRECT = "https://agent.example/callback"

/** Another site's page that posts the sign-in form as soon as it loads. */
const attackPage = (fields: Record<string, string>) => `<!doctype html>
<html><head><meta charset="utf-8"><title>Win a prize</title></head><body>
<form id="f" method="post" action="${appUrl}/oauth/mcp/authorize/sign-in">
${Object.entries(fields).map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`).join("\n")}
</form>
<script>document.getElementById("f").submit()</script>
</body></html>`

/** The attacker's site on 127.0.0.2: a different host, so another site to the browser. */
const startAttackSite = (html: string) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ readonly server: Server; readonly url: string }>((resolve) => {
        const server = createServer((_request, response) => {
          response.writeHead(200, { "content-type": "text/html; charset=utf-8" })
          response.end(html)
        })
        server.listen(0, "127.0.0.2", () => {
          const { port } = server.address() as AddressInfo
          resolve({ server, url: `http://127.0.0.2:${port}/` })
        })
      })
    ),
    ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
  )

describe.skipIf(executablePath === undefined)("sign-in forms in headless Chromium", () => {
  layer(ServedApp, { timeout: "120 seconds", excludeTestServices: true })("login CSRF", (it) => {
    it.effect("the page's own post signs in; another site's auto-posted form is refused and signs nobody in", () =>
      Effect.scoped(Effect.gen(function*() {
        const sql = yield* SqlClient
        const userId = crypto.randomUUID()
        const email = `${userId}@people.example`
        yield* sql`INSERT INTO users (id, email, password_hash) VALUES (${userId}, ${email}, ${yield* hashPassword(PASSWORD)})`
        const sessions = Effect.map(
          sql<{ n: number }>`SELECT count(*)::int AS n FROM sessions WHERE user_id = ${userId}`,
          (rows) => rows[0]?.n
        )
        const registered = yield* Effect.promise(() =>
          fetch(`${appUrl}/oauth/mcp/register`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ redirect_uris: [REDIRECT], client_name: "Browser agent" })
          }).then((response) => response.json() as Promise<{ client_id: string }>)
        )
        const params = {
          response_type: "code",
          client_id: registered.client_id,
          redirect_uri: REDIRECT,
          state: "s-1",
          code_challenge: createHash("sha256").update(randomBytes(32).toString("base64url")).digest("base64url"),
          code_challenge_method: "S256"
        }
        // The attacker opens the form itself: a token that matches the attacker's cookie, not the victim's.
        const attackerForm = yield* Effect.promise(() =>
          fetch(`${appUrl}/oauth/mcp/authorize?${new URLSearchParams(params).toString()}`).then((response) => response.text())
        )
        const attackerToken = /name="form_token" value="([^"]+)"/.exec(attackerForm)?.[1] ?? ""
        assert.notStrictEqual(attackerToken, "")
        const site = yield* startAttackSite(attackPage({ ...params, email, password: PASSWORD, form_token: attackerToken }))

        const browser = yield* Effect.acquireRelease(
          Effect.promise(() => chromium.launch({ executablePath: executablePath!, headless: true, args: CHROMIUM_ARGS })),
          (opened) => Effect.promise(() => opened.close())
        )
        const context = yield* Effect.promise(() => browser.newContext())
        const tab = yield* Effect.promise(() => context.newPage())
        const posts: Array<Request> = []
        tab.on("request", (request) => {
          if (request.method() === "POST" && request.url().startsWith(`${appUrl}/oauth/mcp/authorize/sign-in`)) posts.push(request)
        })
        const sessionCookie = Effect.map(
          Effect.promise(() => context.cookies(appUrl)),
          (cookies) => cookies.find((cookie) => cookie.name === "svc_session")
        )

        // The victim has the sign-in page open in this browser (its form cookie is set) when the attack runs.
        yield* Effect.promise(() => tab.goto(`${appUrl}/oauth/mcp/authorize?${new URLSearchParams(params).toString()}`))
        const formCookie = (yield* Effect.promise(() => context.cookies(appUrl))).find((cookie) => cookie.name === "__Host-svc_form")
        assert.isDefined(formCookie, "the browser keeps the __Host- form cookie")
        assert.strictEqual(formCookie?.sameSite, "Strict")

        const attack = yield* Effect.promise(() => tab.goto(site.url, { waitUntil: "load" }))
        assert.isNotNull(attack)
        yield* Effect.promise(() => tab.waitForURL(`${appUrl}/oauth/mcp/authorize/sign-in`, { timeout: 15_000 }))
        const refusedText = yield* Effect.promise(() => tab.locator("body").innerText())
        assert.include(refusedText, "posted from another site")
        assert.strictEqual(posts.length, 1)
        const attackHeaders = yield* Effect.promise(() => posts[0]!.allHeaders())
        assert.strictEqual(attackHeaders["sec-fetch-site"], "cross-site")
        assert.isUndefined(yield* sessionCookie, "no session cookie after the attack")
        assert.strictEqual(yield* sessions, 0)

        // The person signs in on the page itself.
        yield* Effect.promise(() => tab.goto(`${appUrl}/oauth/mcp/authorize?${new URLSearchParams(params).toString()}`))
        yield* Effect.promise(() => tab.fill("#email", email))
        yield* Effect.promise(() => tab.fill("#password", PASSWORD))
        yield* Effect.promise(() => Promise.all([tab.waitForURL(`${appUrl}/oauth/mcp/authorize/sign-in`), tab.click("button[type=submit]")]))
        const consentText = yield* Effect.promise(() => tab.locator("body").innerText())
        assert.include(consentText, "Approve", consentText)
        assert.include(consentText, email)
        assert.strictEqual(posts.length, 2)
        const ownHeaders = yield* Effect.promise(() => posts[1]!.allHeaders())
        assert.strictEqual(ownHeaders["sec-fetch-site"], "same-origin")
        // The page sends no referrer, so Chromium serializes the form post's origin as null.
        console.log(`own form post: Sec-Fetch-Site ${ownHeaders["sec-fetch-site"]}, Origin ${ownHeaders["origin"]}`)
        assert.isDefined(yield* sessionCookie, "the session cookie is set")
        assert.strictEqual(yield* sessions, 1)
      })))
  })
})
