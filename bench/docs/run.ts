/**
 * How long until a person can use `/docs`: headless Chromium (a fresh context per run, so nothing
 * is cached) opens the page and waits for the first operation to be drawn and clickable, and for
 * the `POST /api/v1/events` operation. Runs alternate between the servers given, so a comparison
 * (this tree against an older one) shares the machine's load.
 *
 *   BENCH_DOCS_URLS=http://127.0.0.1:8080,http://127.0.0.1:8081 npm run bench:docs
 *
 * Settings: BENCH_DOCS_URLS (comma separated, required), BENCH_RUNS (5).
 */
import { chromium } from "playwright-core"
import { CHROMIUM_ARGS, chromiumPath } from "../../test/support/chromium.ts"
import { intFromEnv } from "../support.ts"

const urls = (process.env["BENCH_DOCS_URLS"] ?? "").split(",").filter((url) => url !== "")
if (urls.length === 0 || chromiumPath === undefined) {
  console.error("bench:docs needs BENCH_DOCS_URLS and a Chromium (CHROMIUM_PATH or apt-get install chromium)")
  process.exit(2)
}
const runs = intFromEnv("BENCH_RUNS", 5, 50)

const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: CHROMIUM_ARGS })
const timings = new Map<string, { first: Array<number>; events: Array<number> }>(urls.map((url) => [url, { first: [], events: [] }]))
for (let run = 0; run < runs; run++) {
  for (const url of urls) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
    const tab = await context.newPage()
    const started = performance.now()
    await tab.goto(`${url}/docs`, { waitUntil: "commit" })
    await tab.locator(".opblock .opblock-summary-control").first().waitFor({ state: "visible", timeout: 60_000 })
    const first = performance.now() - started
    const events = tab.locator(".opblock-post").filter({ has: tab.locator('.opblock-summary-path[data-path="/api/v1/events"]') })
    // Swagger UI draws operations near the viewport only: scroll until this one is drawn.
    for (let step = 0; step < 400 && (await events.count()) === 0; step++) await tab.mouse.wheel(0, 700)
    await events.first().waitFor({ state: "visible", timeout: 60_000 })
    const tally = timings.get(url)!
    tally.first.push(first)
    tally.events.push(performance.now() - started)
    await context.close()
  }
}
await browser.close()

const summary = (values: Array<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return `min ${sorted[0]!.toFixed(0)} ms, median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ms, max ${sorted.at(-1)!.toFixed(0)} ms`
}
for (const [url, tally] of timings) {
  console.log(`${url}/docs over ${runs} runs: first operation clickable ${summary(tally.first)}; POST /api/v1/events drawn ${summary(tally.events)}`)
}
