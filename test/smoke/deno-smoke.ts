/**
 * Smoke test of the service on Deno (`npm run deno:smoke`, run by the pinned Node).
 * Starts `deno task start` on a free port, on embedded PGlite and, when DATABASE_URL is set,
 * on that PostgreSQL; checks liveness, readiness, the 404 envelope, the console shell with its
 * bundle (built by esbuild under Deno) and the OpenAPI document.
 * Prints one line per check, then `N passed, M failed`; exits 1 on any failure.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

const root = resolve(import.meta.dirname, "../..")
const denoBin = join(root, "node_modules/.bin/deno")
const STARTUP_TIMEOUT_MS = 120_000
const REQUEST_TIMEOUT_MS = 10_000
const STOP_TIMEOUT_MS = 15_000

interface Target {
  readonly name: "embedded" | "postgres"
  readonly env: Record<string, string>
}

let passed = 0
let failed = 0
const running = new Set<ChildProcess>()

const record = (target: Target, name: string, ok: boolean, detail: string) => {
  if (ok) passed++
  else failed++
  console.log(`${ok ? "ok  " : "FAIL"} [deno/${target.name}] ${name}${detail ? ` — ${detail}` : ""}`)
}

const freePort = () =>
  new Promise<number>((resolvePort, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => (port > 0 ? resolvePort(port) : reject(new Error("no port assigned"))))
    })
  })

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

const get = (port: number, path: string) =>
  fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })

/** Kills the whole process group (deno task and the deno run it started). */
const killGroup = (child: ChildProcess, signal: NodeJS.Signals) => {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    // Already gone.
  }
}

const stop = async (child: ChildProcess) => {
  const exited = new Promise<void>((r) => {
    if (child.exitCode !== null || child.signalCode !== null) r()
    else child.once("exit", () => r())
  })
  killGroup(child, "SIGTERM")
  const timer = setTimeout(() => killGroup(child, "SIGKILL"), STOP_TIMEOUT_MS)
  await exited
  clearTimeout(timer)
  // The group may outlive its leader by a moment.
  try {
    if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL")
  } catch {
    // Nothing left.
  }
  running.delete(child)
}

process.on("exit", () => {
  for (const child of running) killGroup(child, "SIGKILL")
})
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    for (const child of running) killGroup(child, "SIGKILL")
    process.exit(130)
  })
}

const waitForHealth = async (port: number, child: ChildProcess): Promise<string | undefined> => {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      return `process exited early (code ${child.exitCode}, signal ${child.signalCode})`
    }
    try {
      const response = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2_000) })
      await response.arrayBuffer()
      if (response.status === 200) return undefined
    } catch {
      // Not listening yet.
    }
    // The poll interval of a wait on a condition (a 200, or the process gone) with a deadline.
    await sleep(250)
  }
  return `no 200 from /healthz within ${STARTUP_TIMEOUT_MS / 1000} s`
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

type Check = (port: number) => Promise<string | undefined>

const checks = (target: Target): ReadonlyArray<readonly [string, Check]> => [
  ["GET /healthz answers 200", async (port) => {
    const response = await get(port, "/healthz")
    const body: unknown = await response.json()
    if (response.status !== 200) return `status ${response.status}`
    if (!isRecord(body) || body["status"] !== "ok") return `body ${JSON.stringify(body)}`
    return undefined
  }],
  ["GET /readyz answers 200", async (port) => {
    const response = await get(port, "/readyz")
    const body: unknown = await response.json()
    if (response.status !== 200) return `status ${response.status}: ${JSON.stringify(body)}`
    const database = isRecord(body) ? body["database"] : undefined
    if (!isRecord(database) || database["mode"] !== target.name) {
      return `expected database mode ${target.name}: ${JSON.stringify(body)}`
    }
    return undefined
  }],
  ["GET /api/v1/nope answers the 404 envelope", async (port) => {
    const response = await get(port, "/api/v1/nope")
    const text = await response.text()
    const header = response.headers.get("x-request-id")
    if (response.status !== 404) return `status ${response.status}`
    if (!(response.headers.get("content-type") ?? "").startsWith("application/json")) return "content-type is not JSON"
    if (!header) return "no X-Request-Id header"
    const body: unknown = JSON.parse(text)
    const error = isRecord(body) ? body["error"] : undefined
    if (!isRecord(error)) return `no error object: ${text}`
    if (error["code"] !== "not_found") return `code ${String(error["code"])}`
    if (error["status"] !== 404) return `status field ${String(error["status"])}`
    if (typeof error["message"] !== "string") return "no message"
    if (error["request_id"] !== header) return `request_id ${String(error["request_id"])} != header ${header}`
    return undefined
  }],
  ["GET / answers the console shell and its bundle (esbuild under Deno, decision 0123)", async (port) => {
    const response = await get(port, "/")
    const html = await response.text()
    if (response.status !== 200) return `status ${response.status}`
    if (!(response.headers.get("content-security-policy") ?? "").includes("script-src 'self'")) return "no strict CSP"
    const script = /src="(\/console\/assets\/[0-9a-f]+\/console\.js)"/.exec(html)?.[1]
    if (script === undefined) return `no bundle in the shell: ${html.slice(0, 200)}`
    const bundle = await get(port, script)
    const code = await bundle.text()
    if (bundle.status !== 200) return `bundle status ${bundle.status}`
    if (code.length < 10_000) return `bundle of ${code.length} bytes`
    return undefined
  }],
  ["GET /api/v1/openapi.json answers OpenAPI 3.1", async (port) => {
    const response = await get(port, "/api/v1/openapi.json")
    const body: unknown = await response.json()
    if (response.status !== 200) return `status ${response.status}`
    const version = isRecord(body) ? body["openapi"] : undefined
    if (typeof version !== "string" || !version.startsWith("3.1")) return `openapi ${String(version)}`
    return undefined
  }]
]

const runTarget = async (target: Target) => {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-deno-smoke-"))
  const port = await freePort()
  const output: Array<string> = []
  const failedBefore = failed
  const child = spawn(denoBin, ["task", "start"], {
    cwd: root,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...target.env, PORT: String(port), HOST: "127.0.0.1", SVC_DATA_DIR: join(dataDir, "db"), NO_COLOR: "1" }
  })
  running.add(child)
  const collect = (chunk: Buffer) => {
    output.push(chunk.toString("utf8"))
    if (output.length > 400) output.shift()
  }
  child.stdout?.on("data", collect)
  child.stderr?.on("data", collect)
  try {
    const started = Date.now()
    const startupProblem = await waitForHealth(port, child)
    record(target, `starts and listens on 127.0.0.1:${port}`, startupProblem === undefined, startupProblem ?? `${Date.now() - started} ms`)
    if (startupProblem !== undefined) {
      console.log(`--- service output (${target.name}) ---\n${output.join("").slice(-8_000)}\n---`)
      return
    }
    for (const [name, check] of checks(target)) {
      const problem = await check(port).catch((error: unknown) => `request failed: ${String(error)}`)
      record(target, name, problem === undefined, problem ?? "")
    }
  } finally {
    await stop(child)
    rmSync(dataDir, { recursive: true, force: true })
  }
  if (failed > failedBefore) console.log(`--- service output (${target.name}) ---\n${output.join("").slice(-8_000)}\n---`)
}

const baseEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && key !== "DATABASE_URL" && key !== "REDIS_URL") env[key] = value
  }
  return env
}

const targets: Array<Target> = [{ name: "embedded", env: baseEnv() }]
const databaseUrl = process.env["DATABASE_URL"]
if (databaseUrl) {
  const redisUrl = process.env["REDIS_URL"]
  // On DATABASE_URL the service refuses to start without a secrets key (decision 0105): one per run.
  const secretsKey = process.env["SVC_SECRETS_KEY"] || randomBytes(32).toString("base64")
  targets.push({
    name: "postgres",
    env: { ...baseEnv(), DATABASE_URL: databaseUrl, SVC_SECRETS_KEY: secretsKey, ...(redisUrl ? { REDIS_URL: redisUrl } : {}) }
  })
} else {
  console.log("DATABASE_URL is not set: checking the embedded database only")
}

for (const target of targets) {
  await runTarget(target)
}
console.log(`${passed} passed, ${failed} failed`)
process.exitCode = failed > 0 ? 1 : 0
