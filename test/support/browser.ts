/**
 * Headless Chromium beside the service, for the browser tests: where Chromium is, the flags that
 * keep it off the network, the service served on a port chosen before it starts (its base URL
 * must name that port), a person who signs in, the sign-in form, and axe-core's check.
 *
 * Tests skip (not fail) when no Chromium executable is found: `CHROMIUM_PATH`, or the usual
 * system paths (`apt-get install -y chromium` on Debian). playwright-core drives it; it
 * downloads no browser of its own.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { SqlClient } from "effect/sql/SqlClient"
import { readFileSync } from "node:fs"
import { createServer } from "node:http"
import { createRequire } from "node:module"
import type { Page } from "playwright-core"
import { hashPassword } from "../../src/accounts/sessions/service.ts"
import { AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { AppRoutes } from "../../src/main/app.ts"
import type { AppSettings } from "../../src/platform/config.ts"
import { launch } from "../../src/main/launch.ts"
import { freePort } from "../cluster/support/processes.ts"
import { testSettings } from "./app.ts"

export { CHROMIUM_ARGS, chromiumPath } from "./chromium.ts"

export { freePort }

/**
 * The service on `port` of 127.0.0.1, its base URL naming that port; replays off (not what browser
 * tests are about). `overrides` change the test settings (e.g. `webhookAllowHosts` for a receiver on loopback).
 */
export const serveOnPort = (port: number, overrides: Partial<AppSettings> = {}) => {
  const settings = testSettings({ ...overrides, baseUrl: `http://127.0.0.1:${port}` })
  return launch({
    settings,
    app: AppRoutes,
    server: (app) =>
      HttpRouter.serve(app, { disableLogger: true, disableListenLog: true }).pipe(
        Layer.provide(NodeHttpServer.layer(createServer, { port, host: "127.0.0.1" }))
      ),
    // The default logger, as before.
    observability: Layer.empty
  }).pipe(
    Layer.provide(Layer.succeed(AttributionWorkerSettings)({ ...defaultWorkerSettings, enabled: false }))
  )
}

/** The password every person the console tests seed signs in with. */
export const PASSWORD = "correct horse battery staple"

/** A person who can sign in (`PASSWORD`), under a fresh email naming `role`. */
export const seedPerson = (role = "person") =>
  Effect.gen(function*() {
    const sql = yield* SqlClient
    const id = crypto.randomUUID()
    const email = `${role}-${id}@people.example`
    yield* sql`INSERT INTO users (id, email, password_hash) VALUES (${id}, ${email}, ${yield* hashPassword(PASSWORD)})`
    return { id, email }
  })

/** Signs in through the form on `/` and waits for the console to open at `landing`. */
export const signInThroughForm = (page: Page, appUrl: string, email: string, landing: string | RegExp = /\/console\/[0-9a-f-]{36}\/overview/) =>
  Effect.promise(async () => {
    await page.goto(`${appUrl}/`)
    await page.waitForSelector("#email")
    await page.fill("#email", email)
    await page.fill("#password", PASSWORD)
    await page.click("button[type=submit]")
    await page.waitForURL(landing, { timeout: 15_000 })
  })

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

interface Violation {
  readonly id: string
  readonly impact: string | null
  readonly nodes: number
}

/** axe-core's serious and critical violations on the page (evaluated through the DevTools protocol, which the CSP does not govern); all are logged. */
export const seriousViolations = (page: Page, where: string) =>
  Effect.gen(function*() {
    const violations = yield* Effect.promise(async () => {
      await page.evaluate(axeSource)
      return await page.evaluate<ReadonlyArray<Violation>>(
        "axe.run(document).then((result) => result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length })))"
      )
    })
    console.log(`axe on ${where}: ${JSON.stringify(violations)}`)
    return violations.filter((v) => v.impact === "serious" || v.impact === "critical")
  })
