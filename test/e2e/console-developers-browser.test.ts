/**
 * The console's Developers screen in a real browser (issue 33, decision 0126): headless Chromium
 * signs in as a workspace owner, mints an API key (its secret shown once, in a dialog), uses it
 * against /api/v1, revokes it and sees the API refuse it; adds a webhook endpoint pointing at a
 * receiver this test runs, sees the delivery of a real event and its attempt, resends it and the
 * receiver gets the same webhook-id again, signed with the secret the dialog showed. The Requests
 * section lists a call made with a key, found by its `X-Request-Id` (decision 0130). A read-only
 * member (analyst) sees the endpoints but no Create, Revoke or Resend, and the API refuses their
 * writes with 403 `insufficient_scope`; a guest without `connections:read` has no Developers entry.
 * axe-core finds no serious or critical violation; the strict CSP reports nothing.
 * Screenshots go to .artifacts/console-developers/ (git-ignored).
 *
 * Skipped (not failed) when no Chromium executable is found (see test/support/browser.ts).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { createHmac } from "node:crypto"
import { mkdirSync } from "node:fs"
import { createServer } from "node:http"
import { chromium, type Page } from "playwright-core"
import { CHROMIUM_ARGS, chromiumPath, freePort, seedPerson, serveOnPort, seriousViolations, signInThroughForm } from "../support/browser.ts"
import { defineConversion } from "../support/events.ts"
import { seedApiKey } from "../support/tenancy.ts"

const appPort = await freePort()
const appUrl = `http://127.0.0.1:${appPort}`
/** The receiver's loopback address let through the public-host rule (`SVC_WEBHOOK_ALLOW_HOSTS`, local development only), as test/api/webhooks.test.ts does. */
const ServedApp = serveOnPort(appPort, { webhookAllowHosts: ["127.0.0.1"] })

const ARTEFACTS = new URL("../../.artifacts/console-developers/", import.meta.url)

const p = <A>(thunk: () => Promise<A>) => Effect.promise(thunk)

/** Polls `check` until it answers true, failing with `what` after `withinMs` (no fixed sleep stands in for a condition). */
const until = (what: string, check: Effect.Effect<boolean>, withinMs = 20_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + withinMs
    while (!(yield* check)) {
      assert.isBelow(Date.now(), deadline, what)
      yield* Effect.sleep("250 millis")
    }
  })

interface World {
  readonly workspaceId: string
  readonly profileId: string
  readonly owner: string
  readonly analyst: string
  /** A guest of another workspace's profile with `view:campaigns` only: no keys, no connections scopes. */
  readonly guestProfile: string
}

const seed = Effect.gen(function*() {
  const sql = yield* SqlClient
  const workspaceId = crypto.randomUUID()
  const profileId = crypto.randomUUID()
  yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'Acme')`
  yield* sql`INSERT INTO profiles (id, workspace_id, name, currency) VALUES (${profileId}, ${workspaceId}, 'Shop EU', 'EUR')`
  const owner = yield* seedPerson("owner")
  const analyst = yield* seedPerson("analyst")
  yield* sql`INSERT INTO workspace_memberships (workspace_id, user_id, role) VALUES (${workspaceId}, ${owner.id}, 'owner')`
  yield* sql`INSERT INTO workspace_memberships (workspace_id, user_id, role) VALUES (${workspaceId}, ${analyst.id}, 'analyst')`
  const partner = crypto.randomUUID()
  const guestProfile = crypto.randomUUID()
  yield* sql`INSERT INTO workspaces (id, name) VALUES (${partner}, 'Partner agency')`
  yield* sql`INSERT INTO profiles (id, workspace_id, name, currency) VALUES (${guestProfile}, ${partner}, 'Client campaigns', 'EUR')`
  yield* sql`INSERT INTO workspace_memberships (workspace_id, user_id, role) VALUES (${partner}, ${analyst.id}, 'guest')`
  yield* sql`INSERT INTO profile_memberships (profile_id, user_id, role, permissions) VALUES (${guestProfile}, ${analyst.id}, 'viewer', ${["view:campaigns"]})`
  return { workspaceId, profileId, owner: owner.email, analyst: analyst.email, guestProfile } satisfies World
})

const openBrowser = Effect.gen(function*() {
  const browser = yield* Effect.acquireRelease(
    p(() => chromium.launch({ executablePath: chromiumPath!, headless: true, args: CHROMIUM_ARGS })),
    (opened) => p(() => opened.close())
  )
  const context = yield* p(() => browser.newContext({ viewport: { width: 1280, height: 900 } }))
  // The Copy button writes the clipboard; the test reads it back.
  yield* p(() => context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: appUrl }))
  const page = yield* p(() => context.newPage())
  const cspReports: Array<string> = []
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) cspReports.push(message.text())
  })
  page.on("pageerror", (error) => cspReports.push(`page error: ${error.message}`))
  mkdirSync(ARTEFACTS, { recursive: true })
  const shot = (name: string) => p(() => page.screenshot({ path: new URL(`${name}.png`, ARTEFACTS).pathname, fullPage: true }))
  /** The browser's session, as a REST client would send it: the cookie, and the CSRF token the console keeps. */
  const session = Effect.gen(function*() {
    const cookies = yield* p(() => context.cookies(appUrl))
    const cookie = cookies.filter((c) => c.name === "svc_session").map((c) => `${c.name}=${c.value}`).join("; ")
    const csrf = yield* p(() => page.evaluate(() => window.localStorage.getItem("svc.console.csrf") ?? ""))
    return { cookie, csrf }
  })
  return { page, cspReports, shot, session }
})

const signIn = (page: Page, email: string) => signInThroughForm(page, appUrl, email)

const developersPath = (profileId: string) => `/console/${profileId}/developers`

const api = (path: string, init: { readonly method?: string; readonly headers?: Record<string, string>; readonly body?: unknown } = {}) =>
  p(async () => {
    const response = await fetch(`${appUrl}${path}`, {
      method: init.method ?? "GET",
      headers: { ...(init.body === undefined ? {} : { "content-type": "application/json" }), ...init.headers },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
    })
    const text = await response.text()
    return { status: response.status, text, json: text === "" ? undefined : JSON.parse(text) }
  })

interface Hook {
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly raw: string
}

/** What the receiver answers: markup in JSON, to see it shown as text. */
const RECEIVER_ANSWER = '{"received":true,"note":"<b>thanks</b>"}'

/** A subscriber's endpoint on loopback: records every request and answers 200 with RECEIVER_ANSWER. */
const receiver = Effect.acquireRelease(
  Effect.callback<{ url: string; hooks: Array<Hook>; close: () => void }>((resume) => {
    const hooks: Array<Hook> = []
    const server = createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        const headers: Record<string, string | undefined> = {}
        for (const [name, value] of Object.entries(request.headers)) headers[name] = Array.isArray(value) ? value.join(",") : value
        hooks.push({ headers, raw: Buffer.concat(chunks).toString("utf8") })
        response.writeHead(200, { "content-type": "application/json" }).end(RECEIVER_ANSWER)
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resume(Effect.succeed({ url: `http://127.0.0.1:${port}/hooks`, hooks, close: () => server.close() }))
    })
  }),
  (server) => Effect.sync(() => server.close())
)

/** Standard Webhooks' v1 signature of a delivery under a `whsec_` secret. */
const signature = (secret: string, hook: Hook) =>
  `v1,${createHmac("sha256", Buffer.from(secret.slice("whsec_".length), "base64"))
    .update(`${hook.headers["webhook-id"]}.${hook.headers["webhook-timestamp"]}.${hook.raw}`).digest("base64")}`

describe.skipIf(chromiumPath === undefined)("the console's Developers screen in headless Chromium", () => {
  layer(ServedApp, { timeout: "240 seconds", excludeTestServices: true })("developers", (it) => {
    it.effect("an owner mints a key shown once, uses it, revokes it and the API refuses it", () =>
      Effect.scoped(Effect.gen(function*() {
        const world = yield* seed
        const { page, cspReports, shot } = yield* openBrowser
        yield* signIn(page, world.owner)

        // The nav entry leads to the screen, marked as the current page.
        yield* p(() => page.click("nav[aria-label='Screens'] a:text('Developers')"))
        yield* p(() => page.waitForURL(`${appUrl}${developersPath(world.profileId)}`))
        yield* p(() => page.waitForSelector("#keys-table"))
        assert.strictEqual(yield* p(() => page.locator("nav[aria-label='Screens'] a[aria-current=page]").innerText()), "Developers")
        assert.strictEqual(yield* p(() => page.locator("#keys-table tbody tr[data-key-id]").count()), 0)
        // The form offers the person's scopes on the profile, the documented defaults ticked.
        const ticked = yield* p(() => page.locator("input[name=scope]:checked").evaluateAll((boxes) => boxes.map((box) => (box as HTMLInputElement).value)))
        assert.deepStrictEqual(ticked, ["analytics:read", "campaigns:read", "conversions:read", "realtime:read"])

        // A key with one more scope, from the keyboard alone: the secret in a dialog, once, with the warning and a copy button.
        yield* p(async () => {
          await page.focus("#key-name")
          await page.keyboard.type("BI export")
          await page.focus("input[name=scope][value='events:write']")
          await page.keyboard.press("Space")
          await page.focus("#create-key-submit")
          await page.keyboard.press("Enter")
          await page.waitForSelector("#secret-dialog[open]")
        })
        const secret = yield* p(() => page.locator("#secret-value").inputValue())
        assert.match(secret, /^svc_live_\S{20,}$/)
        assert.include(yield* p(() => page.locator("#secret-warning").innerText()), "API key now: it is shown only this once")
        // The dialog holds the focus (on the secret, selected for copying); Tab goes on to Copy, with its ring.
        assert.strictEqual(yield* p(() => page.evaluate(() => document.activeElement?.id)), "secret-value")
        yield* p(() => page.keyboard.press("Tab"))
        const copyFocus = yield* p(() =>
          page.evaluate(() => {
            const element = document.activeElement as HTMLElement
            const style = window.getComputedStyle(element)
            return { id: element.id, ring: style.outlineStyle !== "none" && style.outlineWidth !== "0px" }
          })
        )
        assert.deepStrictEqual(copyFocus, { id: "copy-secret", ring: true })
        yield* p(async () => {
          await page.keyboard.press("Enter")
          await page.waitForSelector("#copy-status:has-text('Copied')")
        })
        assert.strictEqual(yield* p(() => page.evaluate(() => navigator.clipboard.readText())), secret)
        assert.deepStrictEqual(yield* seriousViolations(page, "the secret dialog"), [])
        yield* shot("01-key-secret-shown-once")
        yield* p(async () => {
          await page.keyboard.press("Tab")
          await page.keyboard.press("Enter")
          await page.waitForSelector("#secret-dialog", { state: "detached" })
        })
        // Gone from the page for good: nothing in the document carries it any more.
        assert.notInclude(yield* p(() => page.content()), secret)
        yield* p(() => page.waitForSelector("#keys-table tbody tr[data-status=active]"))
        const row = yield* p(() => page.locator("#keys-table tbody tr[data-status=active]").innerText())
        assert.include(row, "BI export")

        // The key works against the API as any REST client uses it, with the scopes the form chose.
        const asKey = { authorization: `Bearer ${secret}` }
        const me = yield* api("/api/v1/me", { headers: asKey })
        assert.strictEqual(me.status, 200, me.text)
        assert.strictEqual(me.json.data.kind, "api_key")
        assert.strictEqual(me.json.data.key.profile_id, world.profileId)
        assert.deepStrictEqual([...me.json.data.key.scopes].sort(), ["analytics:read", "campaigns:read", "conversions:read", "events:write", "realtime:read"])
        const keyId = me.json.data.key.id as string
        assert.include(row, secret.slice(0, 13), "the table shows the key's display prefix")
        const overview = yield* api(`/api/v1/overview?days=7`, { headers: asKey })
        assert.strictEqual(overview.status, 200, overview.text)

        // Revoke asks first; Escape cancels with nothing changed and the focus back on the button.
        const revokeButton = `tr[data-key-id='${keyId}'] button.revoke-key`
        yield* p(async () => {
          await page.focus(revokeButton)
          await page.keyboard.press("Enter")
          await page.waitForSelector("#confirm-dialog[open]")
          await page.keyboard.press("Escape")
          await page.waitForSelector("#confirm-dialog", { state: "detached" })
        })
        yield* p(() => page.waitForFunction(() => document.activeElement?.classList.contains("revoke-key") === true, undefined, { timeout: 5000 }))
        assert.strictEqual((yield* api("/api/v1/me", { headers: asKey })).status, 200)
        yield* p(async () => {
          await page.click(revokeButton)
          await page.waitForSelector("#confirm-dialog[open]")
        })
        yield* shot("02-revoke-confirm")
        yield* p(async () => {
          await page.click("#confirm-action")
          await page.waitForSelector(`tr[data-key-id='${keyId}'][data-status=revoked]`)
        })
        assert.include(yield* p(() => page.locator("#keys-notice").innerText()), "revoked")
        assert.strictEqual(yield* p(() => page.locator(revokeButton).count()), 0, "a revoked key offers no Revoke")
        // Its button gone, the keyboard carries on from the section's heading (not the top of the document).
        yield* p(() => page.waitForFunction(() => document.activeElement?.id === "api-keys-title", undefined, { timeout: 5000 }))
        // The API refuses the revoked key (within the credential cache's 10 seconds).
        yield* until("the revoked key is refused", Effect.map(api("/api/v1/me", { headers: asKey }), (answer) => answer.status === 401))
        const refused = yield* api("/api/v1/overview?days=7", { headers: asKey })
        assert.strictEqual(refused.status, 401)
        assert.strictEqual(refused.json.error.code, "unauthorized")

        assert.deepStrictEqual(yield* seriousViolations(page, "developers (owner)"), [])
        yield* shot("03-keys-after-revoke")
        assert.deepStrictEqual(cspReports, [])
      })))

    it.effect("an endpoint added in the console receives a real event; its attempt is listed; Resend sends the same webhook-id again", () =>
      Effect.scoped(Effect.gen(function*() {
        const world = yield* seed
        const hooks = yield* receiver
        yield* defineConversion(world.profileId, "sale", ["purchase"], { countsAsCash: true })
        const { key: writer } = yield* seedApiKey({ workspaceId: world.workspaceId, profileId: world.profileId }, { scopes: ["events:write", "connections:read"] })
        const { page, cspReports, shot } = yield* openBrowser
        yield* signIn(page, world.owner)
        yield* p(() => page.goto(`${appUrl}${developersPath(world.profileId)}`))
        yield* p(() => page.waitForSelector("#endpoints-table"))

        // A refused URL: the API's message and request id, nothing added.
        yield* p(async () => {
          await page.fill("#endpoint-url", "https://10.0.0.8/hook")
          await page.click("#create-endpoint-submit")
          await page.waitForSelector("#create-endpoint .error-panel")
        })
        const refusedPanel = yield* p(() => page.locator("#create-endpoint .error-panel").innerText())
        assert.include(refusedPanel, "validation_error")
        assert.match(refusedPanel, /Request id [0-9a-zA-Z_-]{8,}/)
        assert.strictEqual(yield* p(() => page.locator("#endpoints-table tbody tr[data-subscription-id]").count()), 0)
        assert.strictEqual(yield* p(() => page.locator("#secret-dialog").count()), 0)

        // The receiver's URL with the default event types: the signing secret shown once.
        yield* p(async () => {
          await page.fill("#endpoint-url", hooks.url)
          await page.click("#create-endpoint-submit")
          await page.waitForSelector("#secret-dialog[open]")
        })
        const secret = yield* p(() => page.locator("#secret-value").inputValue())
        assert.match(secret, /^whsec_[A-Za-z0-9+/]+=*$/)
        yield* shot("04-endpoint-secret")
        yield* p(() => page.click("#secret-done"))
        yield* p(() => page.waitForSelector(`#endpoints-table tbody tr[data-subscription-id]`))
        assert.include(yield* p(() => page.locator("#endpoints-table tbody").innerText()), "outcome.recorded")
        // The new endpoint is the one shown: its (empty) delivery log.
        yield* p(() => page.waitForSelector("#deliveries-table"))

        // A real event: an outcome ingested with a key; the receiver gets it, signed with the secret shown.
        const ingested = yield* api("/api/v1/events", {
          method: "POST",
          headers: { authorization: `Bearer ${writer}` },
          body: { event_name: "purchase", properties: { value: "12.50", currency: "EUR" }, user_traits: { external_id: "c-1" } }
        })
        assert.strictEqual(ingested.status, 200, ingested.text)
        yield* until("the receiver gets the outcome", Effect.sync(() => hooks.hooks.length >= 1))
        const first = hooks.hooks[0]!
        assert.strictEqual(JSON.parse(first.raw).type, "outcome.recorded")
        assert.include(first.headers["webhook-signature"] ?? "", signature(secret, first))

        // Listed with its status, HTTP code and time once refreshed; its attempt under "Attempts".
        const succeededRow = "#deliveries-table tbody tr[data-delivery-id][data-status=succeeded]"
        yield* until("the delivery is listed as succeeded", Effect.gen(function*() {
          yield* p(() => page.click("#refresh-deliveries"))
          yield* p(() => page.waitForSelector("#deliveries-table"))
          return (yield* p(() => page.locator(succeededRow).count())) === 1
        }))
        const cells = yield* p(() => page.locator(`${succeededRow} td`).allInnerTexts())
        assert.deepStrictEqual(cells.slice(0, 3), ["succeeded", "200", "1"])
        assert.match(cells[3] ?? "", /UTC$/)
        yield* p(async () => {
          await page.click(`${succeededRow} button.show-attempts`)
          await page.waitForSelector(".attempts li[data-status-code='200']")
        })
        assert.include(yield* p(() => page.locator(".attempts li").first().innerText()), "HTTP 200")
        // The endpoint's answer beside its status, as text (its markup not rendered), as the API logs it.
        assert.strictEqual(yield* p(() => page.locator(".attempts li .attempt-body pre").first().innerText()), RECEIVER_ANSWER)
        assert.strictEqual(yield* p(() => page.locator(".attempts li .attempt-body b").count()), 0)
        const deliveryId = yield* p(() => page.locator(succeededRow).getAttribute("data-delivery-id"))
        const logged = yield* api(`/api/v1/webhooks/deliveries/${deliveryId}/attempts`, { headers: { authorization: `Bearer ${writer}` } })
        assert.strictEqual(logged.status, 200, logged.text)
        assert.deepStrictEqual(logged.json.data.map((a: { status_code: number; response_body: string | null }) => [a.status_code, a.response_body]), [[200, RECEIVER_ANSWER]])
        yield* shot("05-delivery-attempts")

        // Resend: a second delivery of the same event, same webhook-id, fresh signature.
        yield* p(() => page.click(`${succeededRow} button.resend`))
        yield* p(() => page.waitForSelector("#deliveries-notice:has-text('Resent')"))
        yield* until("the receiver gets the resent delivery", Effect.sync(() => hooks.hooks.length >= 2))
        const second = hooks.hooks[1]!
        assert.strictEqual(second.headers["webhook-id"], first.headers["webhook-id"])
        assert.strictEqual(second.raw, first.raw)
        assert.include(second.headers["webhook-signature"] ?? "", signature(secret, second))
        yield* until("both deliveries are listed", Effect.gen(function*() {
          yield* p(() => page.click("#refresh-deliveries"))
          yield* p(() => page.waitForSelector("#deliveries-table"))
          return (yield* p(() => page.locator(succeededRow).count())) === 2
        }))
        assert.deepStrictEqual(yield* seriousViolations(page, "developers (webhooks)"), [])
        yield* shot("06-resent")
        assert.deepStrictEqual(cspReports, [])
      })))

    it.effect("the Requests section lists a call made with a key, by its X-Request-Id, without its query string; filtered by status class", () =>
      Effect.scoped(Effect.gen(function*() {
        const world = yield* seed
        const { key } = yield* seedApiKey({ workspaceId: world.workspaceId, profileId: world.profileId }, { scopes: ["connections:read"] })
        const answer = yield* p(() => fetch(`${appUrl}/api/v1/webhooks/subscriptions?limit=7`, { headers: { authorization: `Bearer ${key}` } }))
        assert.strictEqual(answer.status, 200)
        const requestId = answer.headers.get("x-request-id") ?? ""
        assert.notStrictEqual(requestId, "")

        const { page, cspReports, shot } = yield* openBrowser
        yield* signIn(page, world.owner)
        yield* p(() => page.goto(`${appUrl}${developersPath(world.profileId)}`))
        yield* p(() => page.waitForSelector("#requests h2:has-text('Requests')"))
        const row = `#requests tr[data-request-id='${requestId}']`
        // The recorder writes about every second: Refresh until the call is there.
        yield* until("the key's call in the Requests section", Effect.gen(function*() {
          if ((yield* p(() => page.locator(row).count())) > 0) return true
          yield* p(() => page.click("#requests-refresh"))
          yield* p(() => page.waitForSelector("#requests .loading", { state: "detached" }))
          return (yield* p(() => page.locator(row).count())) > 0
        }))
        const cells = yield* p(() => page.locator(`${row} td, ${row} th`).allInnerTexts())
        assert.deepStrictEqual(cells.slice(0, 4), ["GET", "/api/v1/webhooks/subscriptions", "200", requestId])
        assert.match(cells[4] ?? "", /^\d+ ms$/)
        assert.strictEqual(cells[5], "API key")
        assert.notInclude(yield* p(() => page.locator("#requests").innerText()), "limit=7")
        assert.deepStrictEqual(yield* seriousViolations(page, "developers (requests)"), [])
        yield* shot("08-requests")

        // 4xx hides the 200; All shows it again.
        yield* p(async () => {
          await page.selectOption("#request-status", "4xx")
          await page.waitForSelector(row, { state: "detached" })
          await page.waitForSelector("#requests .loading", { state: "detached" })
        })
        assert.include(yield* p(() => page.locator("#requests").innerText()), "No requests with status 4xx")
        yield* p(async () => {
          await page.selectOption("#request-status", "")
          await page.waitForSelector(row)
        })
        assert.deepStrictEqual(cspReports, [])
      })))

    it.effect("a read-only member sees keys' and endpoints' place but no Create, Revoke or Resend; the API refuses their writes", () =>
      Effect.scoped(Effect.gen(function*() {
        const world = yield* seed
        const sql = yield* SqlClient
        // An endpoint and a delivery in its log, made with a key (the member cannot make them).
        const { key: manager } = yield* seedApiKey({ workspaceId: world.workspaceId, profileId: world.profileId }, { scopes: ["connections:write", "connections:read"] })
        const hooks = yield* receiver
        const subscribed = yield* api("/api/v1/webhooks/subscriptions", { method: "POST", headers: { authorization: `Bearer ${manager}` }, body: { url: hooks.url } })
        assert.strictEqual(subscribed.status, 201, subscribed.text)
        const eventId = crypto.randomUUID()
        const payload = {
          id: eventId,
          type: "outcome.recorded",
          created_at: new Date().toISOString(),
          data: { provider: "crm", outcome_type: "purchase", occurred_at: new Date().toISOString(), customer_key: "c-9", value: "1.00", currency: "EUR", outcome_event_id: crypto.randomUUID(), conversion_id: null },
          delivery: { profile_id: world.profileId, provisioned_by_app_id: null, healthcare_family: false, customer_id: null }
        }
        yield* sql`INSERT INTO outbox (id, profile_id, topic, payload) VALUES (${eventId}, ${world.profileId}, 'outcome.recorded', ${JSON.stringify(payload)}::jsonb)`
        yield* until("the receiver gets the event", Effect.sync(() => hooks.hooks.length >= 1))

        const { page, cspReports, shot, session } = yield* openBrowser
        yield* signIn(page, world.analyst)
        yield* p(() => page.goto(`${appUrl}${developersPath(world.profileId)}`))
        yield* p(() => page.waitForSelector("#endpoints-table tbody tr[data-subscription-id]"))
        assert.include(yield* p(() => page.locator("#api-keys").innerText()), "owners and admins")
        yield* p(async () => {
          await page.click("button.show-deliveries")
          await page.waitForSelector("#deliveries-table tbody tr[data-delivery-id]")
        })
        const offered = yield* p(() =>
          page.evaluate(() => ({
            keysTable: document.querySelector("#keys-table") !== null,
            createKey: document.querySelector("#create-key") !== null,
            revoke: document.querySelectorAll("button.revoke-key").length,
            createEndpoint: document.querySelector("#create-endpoint") !== null,
            resend: document.querySelectorAll("button.resend").length,
            attempts: document.querySelectorAll("button.show-attempts").length
          }))
        )
        assert.deepStrictEqual(offered, { keysTable: false, createKey: false, revoke: 0, createEndpoint: false, resend: 0, attempts: 1 })
        assert.deepStrictEqual(yield* seriousViolations(page, "developers (read-only member)"), [])
        yield* shot("07-read-only-member")

        // The API refuses the member's writes whatever the console offers: 403 insufficient_scope.
        const { cookie, csrf } = yield* session
        assert.notStrictEqual(csrf, "")
        const asMember = { cookie, "x-csrf-token": csrf }
        const mint = yield* api(`/api/v1/workspaces/${world.workspaceId}/api-keys`, {
          method: "POST",
          headers: asMember,
          body: { profile_id: world.profileId, name: "sneaky" }
        })
        assert.strictEqual(mint.status, 403, mint.text)
        assert.strictEqual(mint.json.error.code, "insufficient_scope")
        const hook = yield* api(`/api/v1/webhooks/subscriptions?profile_id=${world.profileId}`, {
          method: "POST",
          headers: asMember,
          body: { url: hooks.url }
        })
        assert.strictEqual(hook.status, 403, hook.text)
        assert.strictEqual(hook.json.error.code, "insufficient_scope")
        const keys = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM api_keys WHERE workspace_id = ${world.workspaceId}`
        assert.strictEqual(keys[0]?.n, 1, "only the seeded key")

        // A guest without connections:read and without a managing role: no Developers entry; the address says so.
        yield* p(() => page.goto(`${appUrl}/console/${world.guestProfile}/campaigns`))
        yield* p(() => page.waitForSelector("nav[aria-label='Screens'] a:text('Campaigns')"))
        assert.deepStrictEqual(yield* p(() => page.locator("nav[aria-label='Screens'] a").allInnerTexts()), ["Overview", "Campaigns"])
        yield* p(() => page.goto(`${appUrl}${developersPath(world.guestProfile)}`))
        yield* p(() => page.waitForSelector("h1:has-text('Developers')"))
        assert.include(yield* p(() => page.locator("main").innerText()), "neither API keys nor webhooks")
        assert.strictEqual(yield* p(() => page.locator("#api-keys, #webhooks, #requests").count()), 0)
        assert.deepStrictEqual(cspReports, [])
      })))
  })
})
