/**
 * The console's Overview at scale (`npm run bench:console`, issue 33): time to interactive in
 * headless Chromium on a profile of BENCH_TOUCHES touches (1,000,000). Figures in bench/README.md.
 *
 * On the PostgreSQL of `DATABASE_URL` (required), Chromium from the system (`apt-get install -y chromium`).
 * 1. The profile: BENCH_PROFILE_ID=<id> reuses one kept by `bench:analytics` (BENCH_KEEP=1);
 *    otherwise `bench:analytics` makes one (BENCH_TOUCHES touches, about one customer in 14,
 *    credited under the six models, rollups rebuilt) in a child process and keeps it.
 * 2. A person who owns the profile's workspace; the service started as `npm start` starts it
 *    (`src/main/node.ts`), signed in once through the sign-in form.
 * 3. BENCH_RUNS (10) loads of `/console/<profile>/overview`, each in a fresh browser context
 *    (nothing cached in the browser; the session copied over): time to interactive = from the
 *    navigation's start to the first idle moment of the page's main thread after the KPI
 *    figures, the chart and the channel table are on screen. The first load after the service
 *    started is reported apart (it waits for the bundle to be built). Beside it, the slowest
 *    `/api/v1` read of each load, and the bytes of script and style transferred.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { chromium } from "playwright-core"
import { hashPassword } from "../../src/accounts/sessions/service.ts"
import { MigrationsLayer } from "../../src/main/core.ts"
import { AppConfig } from "../../src/platform/config.ts"
import { DatabaseLayer } from "../../src/platform/database.ts"
import { CHROMIUM_ARGS, chromiumPath } from "../../test/support/chromium.ts"
import { fmt, freePort, HOST, intFromEnv, percentile, runInProcessBench, startProcess, stopProcess, useSecretsKey, waitFor } from "../support.ts"

const TOUCHES = intFromEnv("BENCH_TOUCHES", 1_000_000, 100_000_000)
const RUNS = intFromEnv("BENCH_RUNS", 10, 1_000)
const GOAL_MS = 1_000
const PASSWORD = "bench console password"
const CHROMIUM = chromiumPath

/** The profile kept by `bench:analytics` (made now unless BENCH_PROFILE_ID names one). */
const keptProfile = async (): Promise<string> => {
  const given = process.env["BENCH_PROFILE_ID"]
  if (given !== undefined && given !== "") return given
  const made = startProcess(["bench/analytics/run.ts"], {
    ...process.env,
    BENCH_TOUCHES: String(TOUCHES),
    BENCH_CUSTOMERS: String(Math.round(TOUCHES * 0.0715)),
    BENCH_READS: "1",
    BENCH_KEEP: "1"
  }, "bench:analytics")
  const code = await new Promise<number | null>((r) => made.child.once("exit", (exit) => r(exit)))
  const id = /kept profile ([0-9a-f-]{36})/.exec(made.output())?.[1]
  if (code !== 0 || id === undefined) throw new Error(`bench:analytics did not keep a profile\n${made.output()}`)
  console.log(`profile made by bench:analytics: ${id} (run again with BENCH_PROFILE_ID=${id})`)
  return id
}

const program = Effect.gen(function*() {
  const sql = yield* SqlClient
  if (CHROMIUM === undefined) return yield* Effect.die("no Chromium (apt-get install -y chromium, or CHROMIUM_PATH)")
  useSecretsKey()
  const profileId = yield* Effect.promise(keptProfile)
  const [profile] = yield* sql<{ workspace_id: string; touches: number }>`
    SELECT p.workspace_id, (SELECT count(*)::int FROM touches t WHERE t.profile_id = p.id) AS touches
    FROM profiles p WHERE p.id = ${profileId}`
  if (profile === undefined) return yield* Effect.die(`no profile ${profileId}`)
  const userId = crypto.randomUUID()
  const email = `${userId}@bench.example`
  yield* sql`INSERT INTO users (id, email, password_hash) VALUES (${userId}, ${email}, ${yield* hashPassword(PASSWORD)})`
  yield* sql`INSERT INTO workspace_memberships (workspace_id, user_id, role) VALUES (${profile.workspace_id}, ${userId}, 'owner')`

  const result = yield* Effect.promise(async () => {
    const port = await freePort()
    const service = startProcess(["src/main/node.ts"], { ...process.env, HOST, PORT: String(port), LOG_LEVEL: "Warn" }, "service")
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })
    try {
      await waitFor(port, service.child, 120_000)
      const base = `http://${HOST}:${port}`
      const url = `${base}/console/${profileId}/overview`
      // Signed in once through the form; each measured load gets the session in a fresh context.
      const signIn = await browser.newContext()
      const page = await signIn.newPage()
      await page.goto(`${base}/`)
      await page.fill("#email", email)
      await page.fill("#password", PASSWORD)
      await page.click("button[type=submit]")
      await page.waitForURL(/\/console\//, { timeout: 30_000 })
      await page.waitForSelector("#kpi-outcomes", { timeout: 60_000 })
      const storageState = await signIn.storageState()
      await signIn.close()

      const load = async () => {
        const context = await browser.newContext({ storageState })
        const tab = await context.newPage()
        // The moment the page itself first has the figures, the chart and the table (Playwright's
        // own waits add their round trips).
        await tab.addInitScript(() => {
          const seen = () =>
            document.querySelector("#kpi-outcomes") !== null && document.querySelector(".chart canvas") !== null &&
            document.querySelector("table.breakdown tbody tr") !== null
          new MutationObserver((_, observer) => {
            if (!seen()) return
            Reflect.set(window, "__contentAt", performance.now())
            observer.disconnect()
          }).observe(document, { childList: true, subtree: true })
        })
        await tab.goto(url)
        await tab.waitForSelector("#kpi-outcomes", { timeout: 60_000 })
        await tab.waitForSelector(".chart canvas", { timeout: 60_000 })
        await tab.waitForSelector("table.breakdown tbody tr", { timeout: 60_000 })
        // performance.now() counts from the navigation's start; the first idle callback after the
        // content is up is when the page answers input without waiting.
        const content = await tab.evaluate(() => Number(Reflect.get(window, "__contentAt")))
        const figures = await tab.evaluate(() =>
          new Promise<{ interactive: number; slowestApi: number; scriptBytes: number; styleBytes: number; outcomes: string; waterfall: Array<string> }>((resolve) =>
            requestIdleCallback(() => {
              const resources = performance.getEntriesByType("resource") as Array<PerformanceResourceTiming>
              const api = resources.filter((entry) => entry.name.includes("/api/v1/"))
              resolve({
                interactive: performance.now(),
                slowestApi: Math.max(0, ...api.map((entry) => entry.duration)),
                scriptBytes: resources.filter((entry) => entry.initiatorType === "script").reduce((sum, entry) => sum + entry.transferSize, 0),
                styleBytes: resources.filter((entry) => entry.initiatorType === "link").reduce((sum, entry) => sum + entry.transferSize, 0),
                outcomes: document.querySelector("#kpi-outcomes")?.getAttribute("data-value") ?? "",
                // Where the time goes: the page, then each request from its start to its end.
                waterfall: [
                  `document ${Math.round((performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming | undefined)?.responseEnd ?? 0)} ms`,
                  ...resources.map((entry) =>
                    `${new URL(entry.name).pathname.replace(/[0-9a-f-]{36}/g, ":id")} ${Math.round(entry.startTime)}-${Math.round(entry.responseEnd)} ms`)
                ]
              })
            })
          )
        )
        await context.close()
        return { ...figures, content }
      }
      const first = await load()
      const runs = []
      for (let n = 0; n < RUNS; n++) runs.push(await load())
      return { first, runs }
    } finally {
      await browser.close()
      await stopProcess(service.child)
    }
  })
  yield* sql`DELETE FROM workspace_memberships WHERE user_id = ${userId}`
  yield* sql`DELETE FROM sessions WHERE user_id = ${userId}`.pipe(Effect.ignore)
  yield* sql`DELETE FROM users WHERE id = ${userId}`.pipe(Effect.ignore)

  const sorted = (pick: (run: (typeof result.runs)[number]) => number) => Float64Array.from(result.runs.map(pick)).sort()
  const tti = sorted((run) => run.interactive)
  const api = sorted((run) => run.slowestApi)
  const content = sorted((run) => run.content)
  console.log(`bench:console — Overview of a profile with ${fmt(profile.touches)} touches (${result.first.outcomes} outcomes in its last 30 days), ${RUNS} loads in fresh browser contexts`)
  console.log(`  first load after start (the bundle built on it): ${fmt(result.first.interactive)} ms to interactive`)
  console.log(`  time to interactive: p50 ${fmt(percentile(tti, 0.5))} ms, p95 ${fmt(percentile(tti, 0.95))} ms, max ${fmt(tti[tti.length - 1] ?? 0)} ms (goal < ${fmt(GOAL_MS)} ms: ${percentile(tti, 0.95) < GOAL_MS ? "met" : "NOT met"})`)
  console.log(`  figures, chart and table in the page: p50 ${fmt(percentile(content, 0.5))} ms, p95 ${fmt(percentile(content, 0.95))} ms`)
  console.log(`  slowest /api/v1 read per load: p50 ${fmt(percentile(api, 0.5))} ms, p95 ${fmt(percentile(api, 0.95))} ms`)
  console.log(`  the last load, where the time went: ${result.runs[result.runs.length - 1]?.waterfall.join("; ")}`)
  console.log(`  transferred: script ${fmt((result.runs[0]?.scriptBytes ?? 0) / 1024, 1)} KB, style ${fmt((result.runs[0]?.styleBytes ?? 0) / 1024, 1)} KB (compressed as served)`)
  if (percentile(tti, 0.95) >= GOAL_MS) process.exitCode = 1
})

await runInProcessBench("console", "a PostgreSQL with (or the room for) a profile of a million touches", program, () =>
  MigrationsLayer.pipe(Layer.provideMerge(DatabaseLayer), Layer.provide(AppConfig.layer)))
