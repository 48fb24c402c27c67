/**
 * Where Chromium is and the flags that keep it off the network: one list for the browser tests
 * and the benches (bench/console, bench/docs), importing nothing of the service.
 * `CHROMIUM_PATH`, else the usual system paths (`apt-get install -y chromium` on Debian).
 */
import { existsSync } from "node:fs"

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
