/**
 * The provider leg of a sync (`npm run bench:sync:provider`): one ad account with 5,000 ads and
 * 13 months of daily insights pulled through the service's own `AdPlatform` port and provider
 * HTTP client (retries, the per-connection bucket, lazy paging) from the sandbox served by
 * `npm run sandbox` in a child process. No database: this is what the sync worker reads before it
 * writes; the rows are folded into totals as they stream, never held.
 *
 * Reports rows, pages, wall time, rows/s, the peak RSS and heap seen while streaming, and from the
 * sandbox's counters how many calls its rate limit refused (goal: 0) and how many retries were
 * made (calls beyond the pages). Decision 0056.
 *
 * Settings (env): BENCH_ADS (5000), BENCH_DAYS (396: 13 months), BENCH_PAGE (500).
 */
import { Effect, Layer, Redacted, Stream } from "effect"
import { spawn } from "node:child_process"
import { randomBytes, randomUUID } from "node:crypto"
import { AdPlatformAdapter } from "../../src/connections/providers/adplatform/live.ts"
import { AdPlatform } from "../../src/connections/providers/adplatform/port.ts"
import { ProviderEndpoints, sandboxClientSecret } from "../../src/connections/providers/endpoints.ts"
import { ProviderHttp } from "../../src/connections/providers/http.ts"
import { AppConfig, DEFAULT_SANDBOX_SECRET, loadSettingsWithoutDatabase } from "../../src/platform/config.ts"
import { SecretBox } from "../../src/platform/secret-box.ts"
import { SANDBOX_WORLD_PARAM, sandboxWorlds } from "../../src/connections/providers/sandbox-world.ts"
import { fmt, freePort, HOST, intFromEnv } from "../support.ts"

const ADS = intFromEnv("BENCH_ADS", 5_000, 50_000)
const DAYS = intFromEnv("BENCH_DAYS", 396, 1_130)

// The sandbox's test controls open to the operator token with `?profile_id=` (no database here for
// an API key), and its world handles are keyed by the secrets key: this process and the sandbox
// share both (decision 0109). The bench acts in a world of its own.
process.env["SVC_SECRETS_KEY"] ??= randomBytes(32).toString("base64")
const OPERATOR_TOKEN = process.env["SVC_ADMIN_TOKEN"] ?? `bench-${randomBytes(16).toString("hex")}`
const WORLD = randomUUID()
const SANDBOX_SECRET = process.env["SVC_SANDBOX_SECRET"] ?? DEFAULT_SANDBOX_SECRET

const main = async () => {
  const port = await freePort()
  const base = `http://${HOST}:${port}/sandbox/adplatform`
  const child = spawn(process.execPath, ["sandbox/main.ts"], {
    env: { ...process.env, SVC_ADMIN_TOKEN: OPERATOR_TOKEN, SVC_SANDBOX_PORT: String(port), HOST, LOG_LEVEL: "Warn" },
    stdio: ["ignore", "ignore", "inherit"]
  })
  // The bench's world's test controls, as the operator.
  const control = `${base}/_state?profile_id=${WORLD}`
  const operator = { authorization: `Bearer ${OPERATOR_TOKEN}` }
  try {
    const deadline = Date.now() + 30_000
    while (Date.now() < deadline) {
      const up = await fetch(control, { headers: operator }).then((r) => r.ok, () => false)
      if (up) break
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    const json = (method: string, body: unknown) => ({
      method,
      headers: { ...operator, "content-type": "application/json" },
      body: JSON.stringify(body)
    })
    const generated = await fetch(control, json("PATCH", { arrive: { kind: "generated_account", id: "act_5000", ads: ADS } }))
    if (generated.status !== 201) throw new Error(`generated_account: ${generated.status} ${await generated.text()}`)
    // Consent as a person would (the default persona reaches the generated account, listed first).
    const redirectUri = "http://bench.invalid/callback"
    // No database here: a shared environment's DATABASE_URL asks nothing of this bench.
    const settings = await Effect.runPromise(loadSettingsWithoutDatabase.pipe(Effect.orDie))
    const box = SecretBox.make(Buffer.from(process.env["SVC_SECRETS_KEY"] ?? "", "base64"))
    const world = sandboxWorlds(box.keyedHash).handle(WORLD)
    const authorize = `${base}/oauth/authorize?client_id=sandbox-adplatform&redirect_uri=${encodeURIComponent(redirectUri)}&state=b` +
      `&${SANDBOX_WORLD_PARAM}=${encodeURIComponent(world)}`
    const consent = await fetch(authorize, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "persona=one_account&decision=approve"
    })
    const code = new URL(consent.headers.get("location") ?? "http://x.invalid/").searchParams.get("code") ?? ""
    const token = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        redirect_uri: redirectUri,
        client_id: "sandbox-adplatform",
        client_secret: sandboxClientSecret(SANDBOX_SECRET, "adplatform")
      }).toString()
    }).then((r) => r.json() as Promise<{ access_token: string }>)

    const until = new Date(Date.now()).toISOString().slice(0, 10)
    const since = new Date(Date.now() - (DAYS - 1) * 86_400_000).toISOString().slice(0, 10)
    const session = {
      provider: "adplatform" as const,
      connectionId: "bench-connection",
      accountId: "act_5000",
      accessToken: Redacted.make(token.access_token)
    }
    let peakRss = 0
    let peakHeap = 0
    const sample = () => {
      const memory = process.memoryUsage()
      peakRss = Math.max(peakRss, memory.rss)
      peakHeap = Math.max(peakHeap, memory.heapUsed)
    }
    const program = Effect.gen(function*() {
      const ads = yield* AdPlatform
      const structureStarted = performance.now()
      const adCount = yield* Stream.runCount(ads.ads(session))
      const structureMs = performance.now() - structureStarted
      const started = performance.now()
      let rows = 0
      let spend = 0
      yield* Stream.runForEach(ads.insights(session, { since, until }), (row) =>
        Effect.sync(() => {
          rows++
          spend += row.spend_minor
          if (rows % 5_000 === 0) sample()
        }))
      const insightsMs = performance.now() - started
      return { adCount, structureMs, rows, spend, insightsMs }
    })
    const config = AppConfig.layerWith({
      ...settings,
      providers: { ...settings.providers, mode: "sandbox", sandboxUrl: `http://${HOST}:${port}/sandbox`, servesSandbox: false }
    })
    const layer = AdPlatformAdapter.pipe(
      Layer.provide(ProviderHttp.layer),
      Layer.provide(ProviderEndpoints.layer),
      Layer.provide(config)
    )
    sample()
    const result = await Effect.runPromise(Effect.provide(program, layer))
    const state = await fetch(control, { headers: operator }).then((r) => r.json() as Promise<{ counters: { api_calls: number; rate_limited: number; faulted: number } }>)
    const pages = Math.ceil(result.rows / 500) + Math.ceil(result.adCount / 500)
    const seconds = result.insightsMs / 1000
    console.log(`bench:sync:provider — ${fmt(result.adCount)} ads, ${DAYS} days (${since}..${until})`)
    console.log(`  structure: ${fmt(result.adCount)} ads in ${fmt(result.structureMs)} ms`)
    console.log(`  insights:  ${fmt(result.rows)} rows in ${fmt(seconds, 1)} s = ${fmt(result.rows / seconds)} rows/s (spend ${fmt(result.spend / 100, 2)})`)
    console.log(`  memory:    peak RSS ${fmt(peakRss / 1_048_576)} MB, peak heap ${fmt(peakHeap / 1_048_576)} MB`)
    console.log(`  calls:     ${fmt(state.counters.api_calls)} answered by the sandbox (${fmt(pages)} pages: the rest are retries), ` +
      `${state.counters.rate_limited} refused by its rate limit`)
    process.exitCode = state.counters.rate_limited === 0 ? 0 : 1
  } finally {
    child.kill("SIGTERM")
  }
}

void main().catch((error: unknown) => {
  console.error(error)
  process.exitCode = 1
})
