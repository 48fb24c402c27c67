/**
 * Tracing overhead (`npm run bench:tracing`, decision 0083): HTTP throughput and p99 of the
 * service with trace export on against the same service with it off, in the same run.
 *
 * Two service processes (`src/main/node.ts`), each on its own embedded PGlite in a temporary
 * directory: "off" without `OTEL_EXPORTER_OTLP_ENDPOINT` (placeholder spans only, decision 0101), "on" exporting
 * every span over OTLP/HTTP to a receiver in this process that reads and discards each batch
 * (the collector's cost is not the service's). Rounds alternate off, on, on, off... on the same
 * keep-alive load generator, so a drift of the machine lands on both alike. The path is
 * `GET /readyz` (a server span and two SQL spans per request) unless BENCH_PATH says otherwise.
 *
 * Settings (env): BENCH_CONNECTIONS (20), BENCH_DURATION_S (5 per round), BENCH_ROUNDS (4, even),
 * BENCH_WARMUP_S (3), BENCH_PATH (/readyz).
 */
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fmt, freePort, HOST, intFromEnv, load, percentile, type RunResult, startProcess, stopProcess, waitFor } from "../support.ts"

const connections = intFromEnv("BENCH_CONNECTIONS", 20, 1_000)
const duration = intFromEnv("BENCH_DURATION_S", 5, 600)
const rounds = intFromEnv("BENCH_ROUNDS", 4, 100)
const warmup = intFromEnv("BENCH_WARMUP_S", 3, 600)
const path = process.env["BENCH_PATH"] ?? "/readyz"

/** The OTLP receiver: counts spans' bytes and answers 200, as a collector would. */
const startSink = async () => {
  let batches = 0
  let bytes = 0
  const server = createServer((request, response) => {
    request.on("data", (chunk: Buffer) => (bytes += chunk.length))
    request.on("end", () => {
      batches++
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  const port = await freePort()
  await new Promise<void>((resolve) => server.listen(port, HOST, resolve))
  return { url: `http://${HOST}:${port}`, stats: () => ({ batches, bytes }), close: () => new Promise((r) => server.close(r)) }
}

const startService = async (label: string, extraEnv: Record<string, string>) => {
  const dataDir = mkdtempSync(join(tmpdir(), `bench-tracing-${label}-`))
  const port = await freePort()
  const { DATABASE_URL: _db, OTEL_EXPORTER_OTLP_ENDPOINT: _otel, ...inherited } = process.env
  const { child, output } = startProcess(["src/main/node.ts"], {
    ...inherited,
    HOST,
    PORT: String(port),
    SVC_DATA_DIR: dataDir,
    LOG_LEVEL: "Warn",
    ...extraEnv
  }, label)
  try {
    await waitFor(port, child, 120_000)
  } catch (error) {
    console.error(output())
    throw error
  }
  return { port, child, cleanUp: async () => { await stopProcess(child); rmSync(dataDir, { recursive: true, force: true }) } }
}

const sink = await startSink()
const off = await startService("off", {})
// Spans leave in batches every 200 ms, as a production exporter does (not one request per span).
const on = await startService("on", { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_BSP_SCHEDULE_DELAY: "200" })

const results: Record<"off" | "on", Array<RunResult>> = { off: [], on: [] }
try {
  console.log(`tracing overhead: GET ${path}, ${connections} connections, ${rounds} rounds of ${duration} s per side (warm-up ${warmup} s each)`)
  for (let round = 0; round < rounds; round++) {
    // off on, on off, off on...: each side goes first half of the time.
    const order = round % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const)
    for (const side of order) {
      const target = side === "off" ? off : on
      const result = await load(target.port, path, 200, connections, warmup, duration, {}, target.child.pid)
      results[side].push(result)
      console.log(`  round ${round + 1} ${side.padEnd(3)}: ${fmt(result.requests / result.seconds)} req/s, p99 ${fmt(percentile(result.latenciesMs, 0.99), 1)} ms, errors ${result.errors}`)
    }
  }
} finally {
  await Promise.all([off.cleanUp(), on.cleanUp()])
  await sink.close()
}

const pooled = (runs: ReadonlyArray<RunResult>) => {
  const requests = runs.reduce((sum, run) => sum + run.requests, 0)
  const seconds = runs.reduce((sum, run) => sum + run.seconds, 0)
  const latencies = new Float64Array(runs.reduce((sum, run) => sum + run.latenciesMs.length, 0))
  let offset = 0
  for (const run of runs) {
    latencies.set(run.latenciesMs, offset)
    offset += run.latenciesMs.length
  }
  latencies.sort()
  const cpu = runs.every((run) => run.serverCpuMs !== undefined) ? runs.reduce((sum, run) => sum + (run.serverCpuMs ?? 0), 0) : undefined
  return { rate: requests / seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), cpuPerRequestMs: cpu === undefined ? undefined : cpu / requests }
}
const [a, b] = [pooled(results.off), pooled(results.on)]
const { batches, bytes } = sink.stats()
console.log("")
console.log(`| export | req/s | p50 ms | p99 ms | server CPU ms/request |`)
console.log(`|---|---|---|---|---|`)
for (const [name, r] of [["off (baseline)", a], ["on (OTLP/HTTP)", b]] as const) {
  console.log(`| ${name} | ${fmt(r.rate)} | ${fmt(r.p50, 2)} | ${fmt(r.p99, 2)} | ${r.cpuPerRequestMs === undefined ? "n/a" : fmt(r.cpuPerRequestMs, 3)} |`)
}
console.log("")
console.log(`throughput with export on: ${fmt((b.rate / a.rate) * 100, 1)} % of off; p99 ${fmt(b.p99 / a.p99, 2)}x; the receiver took ${fmt(batches)} batches, ${fmt(bytes / 1_048_576, 1)} MiB`)
