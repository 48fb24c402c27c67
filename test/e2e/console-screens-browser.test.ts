/**
 * The console's Journeys, Connections and Reports screens in a real browser (issue 33): headless
 * Chromium signs in and
 * - looks a customer up by customer key (and by email) and reads the timeline; its touches, their
 *   credit under two models and the outcome are the API's journey answer, read with the same
 *   session; an unknown key says "not found", an empty one says what to type;
 * - connects the sandbox ad platform through the hand-off (the sandbox's consent page, approved by
 *   clicking), comes back to the screen connected, starts a sync and follows its progress to done;
 * - saves a report, generates it, and downloads its CSV (the API's CSV, byte for byte) and its PDF.
 * A guest without customers:read, connections:write or reports:write is offered the key lookup only,
 * no Connect, and no report operation.
 * axe-core finds no serious or critical violation on any of the three; the strict CSP reports
 * nothing on the console's pages. Screenshots go to a temporary directory (logged, not kept in git).
 *
 * The service serves its own sandbox providers at its base URL (as test/support/providers.ts
 * does), so the consent page is on 127.0.0.1 too. Skipped (not failed) without Chromium.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { SqlClient } from "effect/sql/SqlClient"
import { mkdtempSync, readFileSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { chromium, type Page } from "playwright-core"
import { AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { AppRoutes } from "../../src/main/app.ts"
import { launch } from "../../src/main/launch.ts"
import { TestServer } from "../support/app.ts"
import { CHROMIUM_ARGS, chromiumPath, freePort, seedPerson, seriousViolations, signInThroughForm } from "../support/browser.ts"
import { defineConversion, ingest } from "../support/events.ts"
import { PROVIDERS } from "../../src/console/web/providers.ts"
import { ownPortSettings } from "../support/providers.ts"
import { seedApiKey } from "../support/tenancy.ts"

const appPort = await freePort()
const appUrl = `http://127.0.0.1:${appPort}`
/** The service at its own base URL with its sandboxes under /sandbox; the fixtures write credit rows, so the attribution worker is off. */
const ServedApp = launch({
  settings: ownPortSettings(appPort),
  app: AppRoutes,
  server: (app) =>
    HttpRouter.serve(app, { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provide(NodeHttpServer.layer(createServer, { port: appPort, host: "127.0.0.1" }))
    ),
  observability: Layer.empty
}).pipe(
  Layer.provide(Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false })),
  Layer.provideMerge(Layer.succeed(TestServer)({ url: appUrl }))
)
const executablePath = chromiumPath

const ARTEFACTS = mkdtempSync(join(tmpdir(), "console-screens-"))

const p = <A>(thunk: () => Promise<A>) => Effect.promise(thunk)

interface World {
  readonly email: string
  readonly userId: string
  readonly profileId: string
  readonly workspaceId: string
}

/** A person who owns a workspace with one profile (owners hold every scope there). */
const seed = Effect.gen(function*() {
  const sql = yield* SqlClient
  const { id: userId, email } = yield* seedPerson("owner")
  const workspaceId = crypto.randomUUID()
  yield* sql`INSERT INTO workspaces (id, name) VALUES (${workspaceId}, 'Acme')`
  const profileId = crypto.randomUUID()
  yield* sql`INSERT INTO profiles (id, workspace_id, name, currency) VALUES (${profileId}, ${workspaceId}, 'Shop EU', 'EUR')`
  yield* sql`INSERT INTO workspace_memberships (workspace_id, user_id, role) VALUES (${workspaceId}, ${userId}, 'owner')`
  return { email, userId, profileId, workspaceId } satisfies World
})

/** Chromium with one context; every console message that reports a CSP refusal is kept. */
const openBrowser = Effect.gen(function*() {
  const browser = yield* Effect.acquireRelease(
    p(() => chromium.launch({ executablePath: executablePath!, headless: true, args: CHROMIUM_ARGS })),
    (opened) => p(() => opened.close())
  )
  const context = yield* p(() => browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true }))
  const page = yield* p(() => context.newPage())
  const cspReports: Array<string> = []
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) cspReports.push(`${page.url()}: ${message.text()}`)
  })
  page.on("pageerror", (error) => cspReports.push(`page error: ${error.message}`))
  const shot = (name: string) => p(() => page.screenshot({ path: join(ARTEFACTS, `${name}.png`), fullPage: true }))
  const cookieHeader = Effect.map(p(() => context.cookies(appUrl)), (cookies) =>
    cookies.filter((cookie) => cookie.name === "svc_session").map((cookie) => `${cookie.name}=${cookie.value}`).join("; "))
  return { page, cspReports, shot, cookieHeader }
})

/** The same read a REST client makes, with the browser's own session cookie. */
const apiGet = <A = unknown>(cookie: string, path: string) =>
  p(async () => {
    const response = await fetch(`${appUrl}${path}`, { headers: { cookie } })
    const text = await response.text()
    return { status: response.status, text, body: (response.headers.get("content-type") ?? "").includes("json") ? JSON.parse(text) as A : (undefined as A) }
  })

/** Signs in on `/` and waits for the console's first screen. */
const signIn = (page: Page, world: World) => signInThroughForm(page, appUrl, world.email, `${appUrl}/console/${world.profileId}/overview`)

/** Goes to a screen through the nav, as a person would (the link marks itself the current page). */
const openScreen = (page: Page, label: string, path: string) =>
  p(async () => {
    await page.click(`nav[aria-label='Screens'] a:text('${label}')`)
    await page.waitForURL(`${appUrl}${path}`)
    await page.waitForSelector(`h1:has-text('${label}')`)
  })

interface JourneyAnswer {
  readonly data: ReadonlyArray<{ readonly touch_id: string; readonly kind: string; readonly credit_share: number; readonly is_credited: boolean; readonly channel: string | null }>
  readonly meta: { readonly person: { readonly conversions: ReadonlyArray<{ readonly outcome_event_id: string; readonly conversion_key: string; readonly value_amount: string | null }> } }
}

describe.skipIf(executablePath === undefined)("the console's Journeys, Connections and Reports in headless Chromium", () => {
  layer(ServedApp, { timeout: "240 seconds", excludeTestServices: true })("console screens", (it) => {
    it.effect("Journeys: a customer's timeline is the API's journey, touch by touch with its credit under the chosen model", () =>
      Effect.scoped(Effect.gen(function*() {
        const world = yield* seed
        const sql = yield* SqlClient
        // The purchase is ingested through the events API with the customer's key and email.
        const { key } = yield* seedApiKey({ profileId: world.profileId, workspaceId: world.workspaceId }, {
          scopes: ["events:write", "conversions:read"],
          rateLimitPerMinute: 10_000
        })
        yield* defineConversion(world.profileId, "sale", ["purchase"], { countsAsCash: true })
        const customerKey = `cust-${crypto.randomUUID().slice(0, 8)}`
        const customerEmail = `${customerKey}@shoppers.example`
        const ingested = yield* ingest(key, {
          event_name: "purchase",
          idempotency_key: `order-${customerKey}`,
          occurred_at: new Date(Date.now() - 2 * 86_400_000).toISOString(),
          properties: { value: "42.50", currency: "EUR" },
          user_traits: { external_id: customerKey, email: customerEmail }
        })
        assert.strictEqual(ingested.status, 200, ingested.text)
        const { outcome_event_id: outcomeEventId, conversion_id: conversionId } = ingested.json.data
        const [customer] = yield* sql<{ id: string }>`SELECT customer_id AS id FROM outcome_events WHERE id = ${outcomeEventId}`
        // Three touches of the person before the purchase; last touch credits the paid search one, linear shares.
        const touches: Array<string> = []
        const rows = [
          { days: 6, channel: "organic_search", campaign: null },
          { days: 4, channel: "paid_search", campaign: "cmp-spring" },
          { days: 3, channel: "paid_social", campaign: "cmp-social" }
        ]
        for (const row of rows) {
          const id = crypto.randomUUID()
          touches.push(id)
          yield* sql`
            INSERT INTO touches (id, profile_id, kind, occurred_at, channel, source, medium, customer_id, campaign_external_id, campaign_name)
            VALUES (${id}, ${world.profileId}, 'web_touch', now() - ${`${row.days} days`}::interval, ${row.channel}, 'google', 'cpc',
                    ${customer!.id}, ${row.campaign}, ${row.campaign === null ? null : `Campaign ${row.campaign}`})`
        }
        // Credit rows sit in their conversion's month (migration 0073) and name their touch's time (0075).
        yield* sql`
          INSERT INTO attribution_credits (profile_id, conversion_id, converted_at, model, touch_id, touch_at, position, credit_share,
                                           is_credited, in_window)
          SELECT c.profile_id, c.id, c.occurred_at, r.model, t.id, t.occurred_at, r.position, r.share, r.credited, true
          FROM (VALUES ('last_touch', ${touches[0]!}::uuid, 0, 0, false), ('last_touch', ${touches[1]!}::uuid, 1, 0, false),
                       ('last_touch', ${touches[2]!}::uuid, 2, 1, true), ('linear', ${touches[0]!}::uuid, 0, 0.333333, true),
                       ('linear', ${touches[1]!}::uuid, 1, 0.333333, true), ('linear', ${touches[2]!}::uuid, 2, 0.333334, true))
                 AS r(model, touch_id, position, share, credited)
          JOIN conversions c ON c.id = ${conversionId}
          JOIN touches t ON t.id = r.touch_id`

        const { page, cspReports, shot, cookieHeader } = yield* openBrowser
        yield* signIn(page, world)
        yield* openScreen(page, "Journeys", `/console/${world.profileId}/journeys`)
        // The owner holds customers:read: email and phone are offered beside the customer key.
        assert.deepStrictEqual(yield* p(() => page.locator("#lookup-by option").allInnerTexts()), ["Customer key", "Email", "Phone"])

        // Empty: says what to type, asks nothing of the API.
        const asked: Array<string> = []
        page.on("request", (request) => {
          if (request.url().includes("/api/v1/customers/journey")) asked.push(request.url())
        })
        yield* p(() => page.click("#lookup-submit"))
        yield* p(() => page.waitForSelector(".error-panel:has-text('Type a customer key')"))
        assert.deepStrictEqual(asked, [])

        // Unknown key: "No customer found", the key named.
        yield* p(async () => {
          await page.fill("#lookup-value", "nobody-here")
          await page.click("#lookup-submit")
          await page.waitForSelector("#journey-not-found")
        })
        assert.include(yield* p(() => page.locator("#journey-not-found").innerText()), "nobody-here")
        assert.strictEqual(yield* p(() => page.locator(".error-panel").count()), 0)
        yield* shot("journeys-not-found")

        // By customer key, from the keyboard alone: the timeline is the API's answer.
        yield* p(async () => {
          await page.focus("#lookup-value")
          await page.keyboard.press("Control+A")
          await page.keyboard.type(customerKey)
          await page.keyboard.press("Enter")
          await page.waitForSelector("ol.timeline li.outcome")
        })
        const cookie = yield* cookieHeader
        const shownRows = p(() =>
          page.evaluate(() =>
            [...document.querySelectorAll("ol.timeline > li")].map((li) => [
              li.getAttribute("data-touch-id"),
              li.getAttribute("data-kind"),
              li.getAttribute("data-kind") === "outcome" ? li.getAttribute("data-conversion-key") : li.getAttribute("data-credit-share"),
              li.getAttribute("data-kind") === "outcome" ? li.getAttribute("data-value") : li.getAttribute("data-credited")
            ])
          )
        )
        const apiRows = Effect.fn("apiRows")(function*(model: string, selector = `customer_key=${customerKey}`) {
          const answer = yield* apiGet<JourneyAnswer>(cookie, `/api/v1/customers/journey?profile_id=${world.profileId}&${selector}&model=${model}&limit=100`)
          assert.strictEqual(answer.status, 200, answer.text)
          const conversions = new Map(answer.body.meta.person.conversions.map((c) => [c.outcome_event_id, c]))
          return {
            data: answer.body.data,
            shown: answer.body.data.map((row) =>
              row.kind === "outcome"
                ? [row.touch_id, "outcome", conversions.get(row.touch_id)?.conversion_key ?? "", conversions.get(row.touch_id)?.value_amount ?? ""]
                : [row.touch_id, row.kind, String(row.credit_share), String(row.is_credited)]
            )
          }
        })
        const lastTouch = yield* apiRows("last_touch")
        assert.deepStrictEqual(yield* shownRows, lastTouch.shown)
        // What the API answered is what was seeded: three touches then the purchase, last touch on the third.
        assert.deepStrictEqual(lastTouch.shown, [
          [touches[0], "web_touch", "0", "false"],
          [touches[1], "web_touch", "0", "false"],
          [touches[2], "web_touch", "1", "true"],
          [outcomeEventId, "outcome", "sale", "42.5"]
        ])
        const thirdTouch = yield* p(() => page.locator(`li[data-touch-id='${touches[2]}']`).innerText())
        assert.include(thirdTouch, "paid_social")
        assert.include(thirdTouch, "Campaign cmp-social")
        assert.include(thirdTouch, "100%")
        assert.include(yield* p(() => page.locator("li.outcome").innerText()), "€42.50")
        yield* shot("journeys-last-touch")

        // Another model: the same person read again, the credit follows.
        yield* p(() => page.selectOption("#journey-model", "linear"))
        yield* p(() => page.waitForSelector("ol.timeline[data-model='linear']"))
        const linear = yield* apiRows("linear")
        assert.deepStrictEqual(yield* shownRows, linear.shown)
        assert.deepStrictEqual(linear.data.filter((row) => row.kind !== "outcome").map((row) => row.credit_share), [0.333333, 0.333333, 0.333334])
        assert.include(yield* p(() => page.locator(`li[data-touch-id='${touches[0]}']`).innerText()), "33.3%")

        // By email (the owner holds customers:read): the same person.
        yield* p(async () => {
          await page.selectOption("#lookup-by", "email")
          await page.fill("#lookup-value", customerEmail.toUpperCase())
          await page.click("#lookup-submit")
          await page.waitForSelector("ol.timeline[data-model='linear']")
        })
        const byEmail = yield* apiRows("linear", `email=${encodeURIComponent(customerEmail)}`)
        assert.deepStrictEqual(byEmail.shown, linear.shown)
        assert.deepStrictEqual(yield* shownRows, linear.shown)

        assert.deepStrictEqual(yield* seriousViolations(page, "journeys"), [])
        yield* shot("journeys-linear")
        assert.deepStrictEqual(cspReports, [])
      })))

    it.effect("a guest who may read attribution but not people: the key lookup only, no Connect, no reports", () =>
      Effect.scoped(Effect.gen(function*() {
        const world = yield* seed
        const sql = yield* SqlClient
        const partner = crypto.randomUUID()
        const guestProfile = crypto.randomUUID()
        yield* sql`INSERT INTO workspaces (id, name) VALUES (${partner}, 'Partner agency')`
        yield* sql`INSERT INTO profiles (id, workspace_id, name, currency) VALUES (${guestProfile}, ${partner}, 'Client shop', 'EUR')`
        yield* sql`INSERT INTO workspace_memberships (workspace_id, user_id, role) VALUES (${partner}, ${world.userId}, 'guest')`
        yield* sql`
          INSERT INTO profile_memberships (profile_id, user_id, role, permissions)
          VALUES (${guestProfile}, ${world.userId}, 'viewer', ${["view:attribution", "view:dashboard"]})`
        const { page, cspReports, cookieHeader } = yield* openBrowser
        yield* signIn(page, world)
        const cookie = yield* cookieHeader
        const mine = yield* apiGet<{ readonly data: ReadonlyArray<{ readonly profile_id: string; readonly scopes: ReadonlyArray<string> }> }>(cookie, "/api/v1/me/profiles")
        const scopes = mine.body.data.find((profile) => profile.profile_id === guestProfile)?.scopes ?? []
        assert.include(scopes, "conversions:read")
        assert.notInclude(scopes, "customers:read")
        assert.notInclude(scopes, "connections:write")
        assert.notInclude(scopes, "reports:write")

        yield* p(() => page.goto(`${appUrl}/console/${guestProfile}/journeys`))
        yield* p(() => page.waitForSelector("#lookup-by"))
        assert.deepStrictEqual(yield* p(() => page.locator("#lookup-by option").allInnerTexts()), ["Customer key"])
        assert.include(yield* p(() => page.locator("#lookup-hint").innerText()), "customers:read")
        assert.deepStrictEqual(yield* seriousViolations(page, "journeys (guest)"), [])

        yield* p(() => page.goto(`${appUrl}/console/${guestProfile}/connections`))
        yield* p(() => page.waitForSelector("table.connections-table tr[data-provider=adplatform]"))
        // Every provider is listed with its status, none with a Connect button.
        assert.strictEqual(yield* p(() => page.locator("table.connections-table tbody tr[data-status=not_connected]").count()), PROVIDERS.length)
        assert.strictEqual(yield* p(() => page.locator("button[id^=connect-]").count()), 0)
        assert.include(yield* p(() => page.locator("section.connections").innerText()), "needs the connections:write permission")

        // Reports: nothing asked of the API, which would refuse; the screen says what is missing.
        const reportReads: Array<string> = []
        page.on("request", (request) => {
          if (new URL(request.url()).pathname.startsWith("/api/v1/reports")) reportReads.push(request.url())
        })
        yield* p(() => page.goto(`${appUrl}/console/${guestProfile}/reports`))
        yield* p(() => page.waitForSelector("section.reports p:has-text('the reports:write permission')"))
        assert.strictEqual(yield* p(() => page.locator("#report-name").count()), 0)
        assert.deepStrictEqual(reportReads, [])
        assert.deepStrictEqual(yield* seriousViolations(page, "reports (guest)"), [])
        assert.deepStrictEqual(cspReports, [])
      })))

    it.effect("Connections: connect the sandbox ad platform through the hand-off in the browser, see it connected, follow a sync to done", () =>
      Effect.scoped(Effect.gen(function*() {
        const world = yield* seed
        const { page, cspReports, shot, cookieHeader } = yield* openBrowser
        yield* signIn(page, world)
        yield* openScreen(page, "Connections", `/console/${world.profileId}/connections`)
        // Every provider kind is listed, none connected yet, each with its Connect button.
        yield* p(() => page.waitForSelector("table.connections-table tr[data-provider=calendar]"))
        const listedKinds = yield* p(() =>
          page.locator("table.connections-table tbody tr").evaluateAll((rows) =>
            rows.map((row) => [row.getAttribute("data-provider"), row.getAttribute("data-status"), row.querySelector("td")?.textContent ?? ""])
          )
        )
        assert.deepStrictEqual(listedKinds, PROVIDERS.map((provider) => [provider.kind, "not_connected", "Not connected"]))
        assert.strictEqual(yield* p(() => page.locator("table.connections-table button[id^=connect-]").count()), PROVIDERS.length)
        assert.deepStrictEqual(yield* seriousViolations(page, "connections (empty)"), [])
        yield* shot("connections-empty")

        // Connect: the page goes to the provider's consent (the sandbox's page), then back here.
        yield* p(() => Promise.all([page.waitForURL(/\/sandbox\/adplatform\//, { timeout: 15_000 }), page.click("#connect-adplatform")]))
        yield* p(() => page.waitForSelector("button[value=approve]"))
        yield* shot("connections-consent")
        yield* p(() =>
          Promise.all([
            page.waitForURL((url) => url.pathname === `/console/${world.profileId}/connections`, { timeout: 15_000 }),
            page.click("button[value=approve]")
          ])
        )
        yield* p(() => page.waitForSelector("#handoff-result[data-status=success]"))
        assert.include(yield* p(() => page.locator("#handoff-result").innerText()), "Ad platform: Connected")
        // The hand-off's parameters leave the address once read.
        yield* p(() => page.waitForURL(`${appUrl}/console/${world.profileId}/connections`))
        const connectionId = yield* p(() => page.locator("#handoff-result").getAttribute("data-connection-id"))
        yield* p(() => page.waitForSelector(`tr[data-connection-id='${connectionId}'][data-status=active]`))

        // The API says the same, read with the browser's session.
        const cookie = yield* cookieHeader
        const listed = yield* apiGet<{ readonly data: ReadonlyArray<{ readonly id: string; readonly provider: string; readonly status: string }> }>(
          cookie,
          `/api/v1/connections?profile_id=${world.profileId}`
        )
        assert.strictEqual(listed.status, 200)
        assert.deepStrictEqual(listed.body.data.map((c) => [c.id, c.provider, c.status]), [[connectionId, "adplatform", "active"]])
        assert.include(yield* p(() => page.locator(`tr[data-connection-id='${connectionId}'] td`).first().innerText()), "Connected")

        // A sync from the button: its progress shows while it runs, and polling stops at done.
        const row = `tr[data-connection-id='${connectionId}']`
        const started = Date.now()
        // A sync the connection queued on its own may be running: wait for it to end before asking for another.
        yield* p(() => page.waitForSelector(`${row} button.sync-now:not([disabled])`, { timeout: 60_000 }))
        const before = yield* p(async () => {
          const shown = page.locator(`${row} .sync-progress`)
          return (await shown.count()) === 0 ? null : await shown.getAttribute("data-job-id")
        })
        console.log(`connections: sync button usable ${Date.now() - started} ms after the connect (job shown before: ${before})`)
        const reads: Array<string> = []
        page.on("request", (request) => {
          if (new URL(request.url()).pathname.startsWith("/api/v1/connections/sync/")) reads.push(new URL(request.url()).pathname)
        })
        yield* p(() => page.click(`${row} button.sync-now`))
        yield* p(() => page.waitForSelector(`${row} .sync-progress[data-job-id]${before === null ? "" : `:not([data-job-id='${before}'])`}`))
        const jobId = yield* p(() => page.locator(`${row} .sync-progress`).getAttribute("data-job-id"))
        yield* p(() => page.waitForSelector(`${row} .sync-progress[data-job-status=done]`, { timeout: 60_000 }))
        console.log(`connections: the requested sync shown done ${Date.now() - started} ms after the connect`)
        const job = yield* apiGet<{ readonly data: { readonly status: string; readonly progress: { readonly campaigns: number; readonly ads: number } } }>(
          cookie,
          `/api/v1/connections/sync/${jobId}?profile_id=${world.profileId}`
        )
        assert.strictEqual(job.body.data.status, "done")
        // The screen read the job's progress until it ended (the POST answered it queued or running).
        assert.isAbove(reads.filter((path) => path === `/api/v1/connections/sync/${jobId}`).length, 0)
        const progress = yield* p(() => page.locator(`${row} .sync-progress`).innerText())
        assert.include(progress, "Sync done")
        if (job.body.data.progress.campaigns > 0) assert.include(progress, `${job.body.data.progress.campaigns} campaigns`)
        // Polling stopped: no read of the job after it was shown done.
        const polls: Array<string> = []
        page.on("request", (request) => {
          if (request.url().includes(`/api/v1/connections/sync/${jobId}`)) polls.push(request.url())
        })
        yield* Effect.sleep("2500 millis")
        assert.deepStrictEqual(polls, [])
        // The list was read again after the sync: its last-synced time is set.
        yield* p(() => page.waitForFunction((selector) => !(document.querySelector(selector)?.textContent ?? "").includes("never"), `${row} td:nth-of-type(2)`))

        assert.deepStrictEqual(yield* seriousViolations(page, "connections"), [])
        yield* shot("connections-synced")
        assert.deepStrictEqual(cspReports.filter((report) => !report.includes("/sandbox/")), [])
      })))

    it.effect("Connections: a consent that gives several accounts ends in a choice; the account chosen is connected", () =>
      Effect.scoped(Effect.gen(function*() {
        const world = yield* seed
        const { page, cspReports, shot, cookieHeader } = yield* openBrowser
        yield* signIn(page, world)
        yield* openScreen(page, "Connections", `/console/${world.profileId}/connections`)
        yield* p(() => Promise.all([page.waitForURL(/\/sandbox\/adplatform\//, { timeout: 15_000 }), page.click("#connect-adplatform")]))
        yield* p(() => page.waitForSelector("button[value=approve]"))
        yield* p(() => page.selectOption("select[name=persona]", "two_accounts"))
        yield* p(() =>
          Promise.all([
            page.waitForURL((url) => url.pathname === `/console/${world.profileId}/connections`, { timeout: 15_000 }),
            page.click("button[value=approve]")
          ])
        )
        yield* p(() => page.waitForSelector("#handoff-result[data-status=pending_selection]"))
        assert.include(yield* p(() => page.locator("#handoff-result").innerText()), "choose the account")
        // The picker offers the API's candidates.
        const cookie = yield* cookieHeader
        const pending = yield* apiGet<{ readonly data: ReadonlyArray<{ readonly handoff_id: string; readonly accounts: ReadonlyArray<{ readonly id: string; readonly name: string }> }> }>(
          cookie,
          `/api/v1/connections/pending/adplatform?profile_id=${world.profileId}`
        )
        assert.strictEqual(pending.status, 200, pending.text)
        assert.strictEqual(pending.body.data.length, 1)
        const accounts = pending.body.data[0]!.accounts
        assert.strictEqual(accounts.length, 2)
        yield* p(() => page.waitForSelector("#pending-picker"))
        const offered = yield* p(() => page.locator("#pending-picker label.pending-account").evaluateAll((labels) => labels.map((l) => l.getAttribute("data-account-id"))))
        assert.deepStrictEqual(offered, accounts.map((account) => account.id))
        for (const account of accounts) assert.include(yield* p(() => page.locator(`label[data-account-id='${account.id}']`).innerText()), account.name)
        // The address keeps the hand-off while the choice is open: a reload offers it again.
        assert.strictEqual(new URL(page.url()).searchParams.get("handoff_id"), pending.body.data[0]!.handoff_id)
        assert.strictEqual(new URL(page.url()).searchParams.get("status"), null)
        yield* p(async () => {
          await page.reload()
          await page.waitForSelector("#pending-picker")
        })
        assert.deepStrictEqual(yield* seriousViolations(page, "connections (choose an account)"), [])
        yield* shot("connections-choose-account")

        // The second account, chosen from the keyboard.
        yield* p(async () => {
          await page.check(`label[data-account-id='${accounts[1]!.id}'] input`)
          await page.focus("#finalize-account")
          await page.keyboard.press("Enter")
          await page.waitForSelector("#handoff-result[data-status=success]")
        })
        const connectionId = yield* p(() => page.locator("#handoff-result").getAttribute("data-connection-id"))
        assert.include(yield* p(() => page.locator("#handoff-result").innerText()), `Ad platform: Connected`)
        assert.include(yield* p(() => page.locator("#handoff-result").innerText()), accounts[1]!.id)
        assert.strictEqual(yield* p(() => page.locator("#pending-picker").count()), 0)
        yield* p(() => page.waitForURL(`${appUrl}/console/${world.profileId}/connections`))
        yield* p(() => page.waitForSelector(`tr[data-connection-id='${connectionId}'][data-status=active]`))
        // The API: that account is the connection, and nothing is pending any more.
        const listed = yield* apiGet<{ readonly data: ReadonlyArray<{ readonly id: string; readonly provider_account_id: string | null }> }>(
          cookie,
          `/api/v1/connections?profile_id=${world.profileId}`
        )
        assert.deepStrictEqual(listed.body.data.map((c) => [c.id, c.provider_account_id]), [[connectionId, accounts[1]!.id]])
        const after = yield* apiGet<{ readonly data: ReadonlyArray<unknown> }>(cookie, `/api/v1/connections/pending/adplatform?profile_id=${world.profileId}`)
        assert.deepStrictEqual(after.body.data, [])
        yield* shot("connections-account-chosen")
        assert.deepStrictEqual(cspReports.filter((report) => !report.includes("/sandbox/")), [])
      })))

    it.effect("Reports: save a report, generate it, download its CSV (the API's) and its PDF", () =>
      Effect.scoped(Effect.gen(function*() {
        const world = yield* seed
        const { page, cspReports, shot, cookieHeader } = yield* openBrowser
        yield* signIn(page, world)
        yield* openScreen(page, "Reports", `/console/${world.profileId}/reports`)
        yield* p(() => page.waitForSelector("text=No saved report yet."))

        // Saved from the form; it joins the list the API answers.
        yield* p(async () => {
          await page.fill("#report-name", "Weekly channels")
          await page.selectOption("#report-range", "last_7_days")
          await page.click("#report-save")
          await page.waitForSelector("li.report h3:text('Weekly channels')")
        })
        const cookie = yield* cookieHeader
        const saved = yield* apiGet<{ readonly data: ReadonlyArray<{ readonly id: string; readonly name: string; readonly reads: ReadonlyArray<string>; readonly range: unknown }> }>(
          cookie,
          `/api/v1/reports?profile_id=${world.profileId}`
        )
        assert.strictEqual(saved.status, 200)
        assert.deepStrictEqual(saved.body.data.map((r) => [r.name, r.reads, r.range]), [["Weekly channels", ["overview", "breakdown:channel"], "last_7_days"]])
        const reportId = saved.body.data[0]!.id
        assert.deepStrictEqual(yield* seriousViolations(page, "reports"), [])

        // Generated now: the run's downloads appear.
        yield* p(() => page.click(`li[data-report-id='${reportId}'] button.generate`))
        yield* p(() => page.waitForSelector(`li[data-report-id='${reportId}'] .run a[data-kind=csv]`))
        const runId = yield* p(() => page.locator(`li[data-report-id='${reportId}'] .run`).getAttribute("data-run-id"))
        yield* shot("reports-generated")

        // CSV: the file saved is the API's CSV for the run.
        const csv = yield* p(async () => {
          const [download] = await Promise.all([page.waitForEvent("download"), page.click(`#download-csv-${runId}`)])
          return { name: download.suggestedFilename(), text: readFileSync(await download.path(), "utf8") }
        })
        const apiCsv = yield* apiGet(cookie, `/api/v1/reports/${reportId}/runs/${runId}/csv?profile_id=${world.profileId}`)
        assert.strictEqual(apiCsv.status, 200)
        assert.match(csv.name, /^Weekly-channels-.*\.csv$/)
        assert.strictEqual(csv.text, apiCsv.text)
        assert.match(csv.text, /^section,key,metric,value\r\n/)
        assert.include(csv.text, "overview,")

        // PDF: a PDF.
        const pdf = yield* p(async () => {
          const [download] = await Promise.all([page.waitForEvent("download"), page.click(`#download-pdf-${runId}`)])
          return { name: download.suggestedFilename(), bytes: readFileSync(await download.path()) }
        })
        assert.match(pdf.name, /\.pdf$/)
        assert.strictEqual(pdf.bytes.subarray(0, 5).toString("latin1"), "%PDF-")
        assert.isAbove(pdf.bytes.length, 200)

        // The links work from the keyboard as well (Enter on the focused link).
        const keyboard = yield* p(async () => {
          await page.focus(`#download-csv-${runId}`)
          const [download] = await Promise.all([page.waitForEvent("download"), page.keyboard.press("Enter")])
          return readFileSync(await download.path(), "utf8")
        })
        assert.strictEqual(keyboard, apiCsv.text)
        assert.deepStrictEqual(yield* seriousViolations(page, "reports with a run"), [])

        // Past runs: ten scheduled runs of the past days (one failed, without files) beside the one generated here.
        const sql = yield* SqlClient
        for (let day = 1; day <= 10; day++) {
          const failed = day === 3
          const csvText = `section,key,metric,value\r\noverview,,day,${day}\r\n`
          yield* sql`
            INSERT INTO report_runs (id, report_id, profile_id, trigger, slot, status, range_start, range_end, csv, pdf_base64,
                                     csv_bytes, pdf_bytes, error, created_at, generated_at)
            VALUES (${crypto.randomUUID()}, ${reportId}, ${world.profileId}, 'scheduled', now() - ${`${day} days`}::interval,
                    ${failed ? "failed" : "generated"}, current_date - ${day + 7}::int, current_date - ${day}::int,
                    ${failed ? null : csvText}, ${failed ? null : Buffer.from("%PDF-1.4 seeded").toString("base64")},
                    ${failed ? null : Buffer.byteLength(csvText)}, ${failed ? null : 15}, ${failed ? "read_failed" : null},
                    now() - ${`${day} days`}::interval, now() - ${failed ? null : `${day} days`}::interval)`
        }
        const allRuns = yield* apiGet<{ readonly data: ReadonlyArray<{ readonly id: string; readonly csv: { readonly url: string } | null }>; readonly pagination: { readonly has_next: boolean } }>(
          cookie,
          `/api/v1/reports/${reportId}/runs?profile_id=${world.profileId}&limit=100`
        )
        assert.strictEqual(allRuns.status, 200, allRuns.text)
        assert.strictEqual(allRuns.body.data.length, 11)
        assert.strictEqual(allRuns.body.data[0]!.id, runId)
        const runIds = allRuns.body.data.map((run) => run.id)
        const shownRuns = p(() => page.locator(`li[data-report-id='${reportId}'] .run`).evaluateAll((runs) => runs.map((run) => run.getAttribute("data-run-id"))))
        // A new visit lists the past runs newest first, ten of them; the rest on request.
        yield* p(async () => {
          await page.reload()
          await page.waitForSelector(`li[data-report-id='${reportId}'] button.older-runs`)
        })
        assert.deepStrictEqual(yield* shownRuns, runIds.slice(0, 10))
        const failedRun = allRuns.body.data.find((run) => run.csv === null)!
        const failedText = yield* p(() => page.locator(`.run[data-run-id='${failedRun.id}']`).innerText())
        assert.include(failedText, "Failed")
        assert.include(failedText, "read_failed")
        assert.include(failedText, "No CSV")
        assert.include(yield* p(() => page.locator(`.run[data-run-id='${runIds[1]}']`).innerText()), "scheduled")
        yield* p(async () => {
          await page.click(`li[data-report-id='${reportId}'] button.older-runs`)
          await page.waitForSelector(`.run[data-run-id='${runIds[10]}']`)
        })
        assert.deepStrictEqual(yield* shownRuns, runIds)
        assert.strictEqual(yield* p(() => page.locator(`li[data-report-id='${reportId}'] button.older-runs`).count()), 0)
        // The oldest run's files are the API's.
        const oldest = runIds[10]!
        const oldestCsv = yield* p(async () => {
          const [download] = await Promise.all([page.waitForEvent("download"), page.click(`#download-csv-${oldest}`)])
          return readFileSync(await download.path(), "utf8")
        })
        const apiOldest = yield* apiGet(cookie, `/api/v1/reports/${reportId}/runs/${oldest}/csv?profile_id=${world.profileId}`)
        assert.strictEqual(oldestCsv, apiOldest.text)
        assert.include(oldestCsv, "overview,,day,10")
        const oldestPdf = yield* p(async () => {
          const [download] = await Promise.all([page.waitForEvent("download"), page.click(`#download-pdf-${oldest}`)])
          return readFileSync(await download.path())
        })
        assert.strictEqual(oldestPdf.toString("latin1"), "%PDF-1.4 seeded")
        assert.deepStrictEqual(yield* seriousViolations(page, "reports with past runs"), [])
        yield* shot("reports-past-runs")
        console.log(`console screens: screenshots in ${ARTEFACTS}`)
        assert.deepStrictEqual(cspReports, [])
      })))
  })
})
