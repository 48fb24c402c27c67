/**
 * The service as a real process (the Node entry point, or `npm start`), and a keep-alive HTTP
 * client that tells the ways a request can fail apart (refused, reset, timed out, answered).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import { Agent, request } from "node:http"
import { fileURLToPath } from "node:url"
import { freePort } from "../cluster/support/processes.ts"

export const repoRoot = fileURLToPath(new URL("../../", import.meta.url))
const entry = fileURLToPath(new URL("../../src/main/node.ts", import.meta.url))

export const PROCESS_ADMIN_TOKEN = "process-test-operator-token-0123456789"

/** One key per test file: a restarted service opens what the first one sealed. */
export const PROCESS_SECRETS_KEY = randomBytes(32).toString("base64")

export interface ServiceProcess {
  readonly child: ChildProcess
  readonly port: number
  readonly baseUrl: string
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  readonly tail: () => string
  /** Every line of stdout and stderr kept so far (the last 400). */
  readonly output: () => ReadonlyArray<string>
}

/**
 * Starts the service with `env` on a free port: `node src/main/node.ts` under the test's (pinned)
 * Node, or `npm start` with `viaNpm`. On `DATABASE_URL` (or `NODE_ENV=production`), where the
 * service requires `SVC_SECRETS_KEY` (decision 0105), it gets `PROCESS_SECRETS_KEY` unless the
 * environment or `env` names one (`SVC_SECRETS_KEY: ""` starts it without).
 */
export const startService = async (
  env: Record<string, string>,
  options: { readonly viaNpm?: boolean; readonly port?: number } = {}
): Promise<ServiceProcess> => {
  const port = options.port ?? await freePort()
  const lines: Array<string> = []
  const merged = { ...process.env, ...env }
  const needsKey = (merged["DATABASE_URL"] ?? "") !== "" || merged["NODE_ENV"] === "production"
  const childEnv = {
    ...process.env,
    ...(needsKey && process.env["SVC_SECRETS_KEY"] === undefined ? { SVC_SECRETS_KEY: PROCESS_SECRETS_KEY } : {}),
    HOST: "127.0.0.1",
    PORT: String(port),
    SVC_ADMIN_TOKEN: PROCESS_ADMIN_TOKEN,
    LOG_LEVEL: "Info",
    ...env
  }
  const child = options.viaNpm === true
    ? spawn("npm", ["start", "--silent"], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"], env: childEnv })
    : spawn(process.execPath, [entry], { cwd: repoRoot, stdio: ["ignore", "pipe", "pipe"], env: childEnv })
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n")) if (line.trim() !== "") lines.push(line)
    if (lines.length > 400) lines.splice(0, lines.length - 400)
  }
  child.stdout?.on("data", collect)
  child.stderr?.on("data", collect)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode })
    else child.once("exit", (code, signal) => resolve({ code, signal }))
  })
  return {
    child,
    port,
    baseUrl: `http://127.0.0.1:${port}`,
    exited,
    tail: () => lines.slice(-40).join("\n"),
    output: () => [...lines]
  }
}

/** SIGTERM (then SIGKILL after `graceMs`) and wait for the exit. */
export const stopService = async (service: ServiceProcess, graceMs = 20_000) => {
  if (service.child.exitCode === null && service.child.signalCode === null) {
    service.child.kill("SIGTERM")
    const timer = setTimeout(() => service.child.kill("SIGKILL"), graceMs)
    const exit = await service.exited
    clearTimeout(timer)
    return exit
  }
  return service.exited
}

export type Outcome =
  | { readonly kind: "answered"; readonly status: number; readonly headers: Record<string, string | Array<string> | undefined>; readonly body: string }
  | { readonly kind: "refused" | "reset" | "timeout" | "other"; readonly code: string }

/** One request through `agent`; never throws. */
export const send = (
  agent: Agent,
  url: string,
  init: { readonly method?: string; readonly headers?: Record<string, string>; readonly body?: string; readonly timeoutMs?: number } = {}
): Promise<Outcome> =>
  new Promise((resolve) => {
    let settled = false
    const settle = (outcome: Outcome) => {
      if (!settled) {
        settled = true
        resolve(outcome)
      }
    }
    const req = request(url, { method: init.method ?? "GET", headers: init.headers, agent }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () =>
        settle({ kind: "answered", status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }))
      res.on("error", (error: NodeJS.ErrnoException) => settle(failure(error)))
    })
    req.setTimeout(init.timeoutMs ?? 10_000, () => {
      settle({ kind: "timeout", code: "timeout" })
      req.destroy()
    })
    req.on("error", (error: NodeJS.ErrnoException) => settle(failure(error)))
    req.end(init.body)
  })

const failure = (error: NodeJS.ErrnoException): Outcome => {
  const code = error.code ?? error.message
  if (code === "ECONNREFUSED") return { kind: "refused", code }
  if (code === "ECONNRESET" || code === "EPIPE" || error.message === "socket hang up") return { kind: "reset", code }
  return { kind: "other", code }
}

/** Polls `probe` until it answers true, or fails after `timeoutMs`. */
export const waitUntil = async (probe: () => Promise<boolean>, timeoutMs: number, what: string) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await probe()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
}
