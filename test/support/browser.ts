/**
 * Headless Chromium beside the service, for the browser tests: where Chromium is, the flags that
 * keep it off the network, and the service served on a port chosen before it starts (its base URL
 * must name that port).
 *
 * Tests skip (not fail) when no Chromium executable is found: `CHROMIUM_PATH`, or the usual
 * system paths (`apt-get install -y chromium` on Debian). playwright-core drives it; it
 * downloads no browser of its own.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Layer } from "effect"
import { HttpRouter } from "effect/http"
import { existsSync } from "node:fs"
import { createServer } from "node:http"
import { AttributionWorkerSettings, defaultWorkerSettings } from "../../src/attribution/worker.ts"
import { AppRoutes } from "../../src/main/app.ts"
import { launch } from "../../src/main/launch.ts"
import { freePort } from "../cluster/support/processes.ts"
import { testSettings } from "./app.ts"

const CHROMIUM_CANDIDATES = [
  process.env["CHROMIUM_PATH"],
  "/usr/bin/chromium",
  "/usr/lib/chromium/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/google-chrome-stable",
  "/usr/bin/google-chrome"
]

export const chromiumPath = CHROMIUM_CANDIDATES.find((path): path is string => path !== undefined && path !== "" && existsSync(path))

/** Nothing in the background that would reach the network on its own. */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--no-first-run",
  "--disable-sync"
]

export { freePort }

/** The service on `port` of 127.0.0.1, its base URL naming that port; replays off (not what browser tests are about). */
export const serveOnPort = (port: number) => {
  const settings = testSettings({ baseUrl: `http://127.0.0.1:${port}` })
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
