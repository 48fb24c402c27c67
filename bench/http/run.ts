/**
 * HTTP overhead benchmark (`npm run bench:http`).
 *
 * Compares the real service (`src/main/node.ts`, embedded PGlite in a temp dir) with
 * a bare `node:http` server that answers the same bytes for `GET /healthz` and for the 404
 * envelope of `GET /api/v1/nope`: same status, headers, body shape, a fresh request id per
 * request. A third server, the Effect platform alone (bench/http/effect-router.ts), separates the
 * platform's cost from the service's own. Each runs as its own Node process; the load generator runs here, on keep-alive
 * connections to 127.0.0.1 only, one request in flight per connection.
 *
 * Settings (env): BENCH_CONNECTIONS (50), BENCH_DURATION_S (10), BENCH_WARMUP_S (5: the service's longer code path needs a longer JIT warm-up).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { createServer as createHttpServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fmt, freePort, HOST, intFromEnv, load, percentile, startProcess, stopProcess, waitFor } from "../support.ts"
import { healthBody, notFoundBody } from "./bodies.ts"

const PATHS = ["/healthz", "/api/v1/nope"] as const

// ---------------------------------------------------------------------------------------------
// The bare server (child role): `node bench/http/run.ts --bare <port> <docsBaseUrl>`.

const incomingIdPattern = /^[A-Za-z0-9._:-]{8,128}$/

const runBareServer = (port: number, docsBaseUrl: string) => {
  const server = createHttpServer((request, response) => {
    const incoming = request.headers["x-request-id"]
    const requestId = typeof incoming === "string" && incomingIdPattern.test(incoming)
      ? incoming
      : `req_${crypto.randomUUID().replaceAll("-", "")}`
    let status: number
    let body: string
    if (request.method === "GET" && request.url === "/healthz") {
      status = 200
      body = JSON.stringify(healthBody())
    } else {
      status = 404
      body = JSON.stringify(notFoundBody(requestId, docsBaseUrl))
    }
    response.writeHead(status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
      "x-request-id": requestId
    })
    response.end(body)
  })
  server.listen(port, HOST)
  process.on("SIGTERM", () => server.close(() => process.exit(0)))
  // The parent going away ends this process too.
  process.stdin.resume()
  process.stdin.on("end", () => process.exit(0))
}

interface Observed {
  readonly status: number
  readonly headers: ReadonlyArray<string>
  readonly body: string
}

/** What a response looks like with the per-request parts (request id, date) normalised. */
const observe = async (port: number, path: string): Promise<Observed> => {
  const response = await fetch(`http://${HOST}:${port}${path}`, { signal: AbortSignal.timeout(5_000) })
  const requestId = response.headers.get("x-request-id") ?? "<none>"
  const body = (await response.text()).replaceAll(requestId, "<id>")
  const headers = [...response.headers.entries()]
    .filter(([name]) => name !== "date")
    .map(([name, value]) => `${name}: ${name === "x-request-id" ? `<${value.length} chars>` : value}`)
    .sort()
  return { status: response.status, headers, body }
}


const main = async () => {
  const connections = intFromEnv("BENCH_CONNECTIONS", 50, 500)
  const durationSeconds = intFromEnv("BENCH_DURATION_S", 10, 120)
  const warmupSeconds = intFromEnv("BENCH_WARMUP_S", 5, 60)

  const servicePort = await freePort()
  const barePort = await freePort()
  const routerPort = await freePort()
  const dataDir = mkdtempSync(join(tmpdir(), "svc-bench-"))
  const baseEnv: Record<string, string | undefined> = { ...process.env, DATABASE_URL: undefined, REDIS_URL: undefined }
  const service = startProcess(
    ["src/main/node.ts"],
    { ...baseEnv, PORT: String(servicePort), HOST, SVC_DATA_DIR: join(dataDir, "db") },
    "service"
  )
  // Same docs base URL as the service's default, so both bodies have the same length.
  const bare = startProcess(["bench/http/run.ts", "--bare", String(barePort), `http://localhost:${servicePort}`], baseEnv, "bare")
  const router = startProcess(["bench/http/effect-router.ts", String(routerPort), `http://localhost:${servicePort}`], baseEnv, "router")

  try {
    await waitFor(servicePort, service.child, 120_000).catch((error: unknown) => {
      throw new Error(`service did not start: ${String(error)}\n${service.output()}`)
    })
    await waitFor(barePort, bare.child, 30_000).catch((error: unknown) => {
      throw new Error(`bare server did not start: ${String(error)}\n${bare.output()}`)
    })
    await waitFor(routerPort, router.child, 30_000).catch((error: unknown) => {
      throw new Error(`effect router did not start: ${String(error)}\n${router.output()}`)
    })

    console.log(`node ${process.versions.node}; ${connections} connections, ${warmupSeconds} s warm-up + ${durationSeconds} s per run; 127.0.0.1 only`)
    console.log("Responses compared (date dropped, request id masked):")
    const expected = new Map<string, number>()
    for (const path of PATHS) {
      const a = await observe(servicePort, path)
      const b = await observe(barePort, path)
      const c = await observe(routerPort, path)
      const same = JSON.stringify(a) === JSON.stringify(b) && JSON.stringify(a) === JSON.stringify(c)
      console.log(`  GET ${path}: ${same ? "identical" : "DIFFERENT"} (status ${a.status}, ${a.body.length} body bytes)`)
      if (!same) {
        console.log(`    service: ${JSON.stringify(a)}\n    bare:    ${JSON.stringify(b)}\n    router:  ${JSON.stringify(c)}`)
        throw new Error(`the bare server does not answer ${path} like the service`)
      }
      expected.set(path, a.status)
    }

    const rows: Array<{ path: string; server: string; rps: number; p50: number; p99: number; errors: number }> = []
    for (const path of PATHS) {
      const servers = [["service", servicePort], ["bare node:http", barePort], ["effect router only", routerPort]] as const
      for (const [server, port] of servers) {
        process.stdout.write(`  running GET ${path} against ${server} ...`)
        const result = await load(port, path, expected.get(path) ?? 200, connections, warmupSeconds, durationSeconds)
        const rps = result.requests / result.seconds
        rows.push({ path, server, rps, p50: percentile(result.latenciesMs, 0.5), p99: percentile(result.latenciesMs, 0.99), errors: result.errors })
        console.log(` ${fmt(rps)} req/s`)
      }
    }

    console.log("")
    console.log("| path | server | req/s | p50 ms | p99 ms | errors |")
    console.log("|---|---|---:|---:|---:|---:|")
    for (const row of rows) {
      console.log(`| GET ${row.path} | ${row.server} | ${fmt(row.rps)} | ${fmt(row.p50, 2)} | ${fmt(row.p99, 2)} | ${row.errors} |`)
    }
    console.log("")
    console.log("| path | service/bare req/s | service/bare p99 | service/effect-router req/s | goal |")
    console.log("|---|---:|---:|---:|---|")
    let allMet = true
    for (const path of PATHS) {
      const service = rows.find((r) => r.path === path && r.server === "service")
      const bareRow = rows.find((r) => r.path === path && r.server === "bare node:http")
      const routerRow = rows.find((r) => r.path === path && r.server === "effect router only")
      if (service === undefined || bareRow === undefined || routerRow === undefined) continue
      const ratio = service.rps / bareRow.rps
      const met = ratio >= 0.5
      allMet &&= met
      console.log(
        `| GET ${path} | ${fmt(ratio, 2)}x | ${fmt(service.p99 / bareRow.p99, 2)}x | ${fmt(service.rps / routerRow.rps, 2)}x | >= 0.50x ${met ? "met" : "NOT met"} |`
      )
    }
    const errors = rows.reduce((sum, r) => sum + r.errors, 0)
    if (errors > 0) console.log(`${errors} requests failed or answered an unexpected status`)
    process.exitCode = errors > 0 ? 1 : 0
    if (!allMet) console.log("throughput goal (service >= 0.5x bare) not met")
  } finally {
    await Promise.all([stopProcess(service.child), stopProcess(bare.child), stopProcess(router.child)])
    rmSync(dataDir, { recursive: true, force: true })
  }
}

if (process.argv[2] === "--bare") {
  runBareServer(Number(process.argv[3]), process.argv[4] ?? "http://localhost")
} else {
  await main()
}
