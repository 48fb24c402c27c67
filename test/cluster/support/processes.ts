import { randomBytes } from "node:crypto"
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"

const SHARED_SECRETS_KEY = randomBytes(32).toString("base64")

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url))
/** The service itself: each runner is the real Node entry point. */
const runnerEntry = fileURLToPath(new URL("../../../src/main/node.ts", import.meta.url))

/** Operator token of the runners started here. */
export const RUNNER_ADMIN_TOKEN = "cluster-test-operator-token-0123456789"

/** A port the OS says is free right now. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

export interface RunnerProcess {
  readonly name: string
  readonly child: ChildProcess
  /** `http://127.0.0.1:<PORT>/rpc` */
  readonly rpcUrl: string
  /** `http://127.0.0.1:<PORT>`: the HTTP API of this runner. */
  readonly baseUrl: string
  /** The runner address other runners use, `127.0.0.1:<SVC_RUNNER_PORT>`. */
  readonly address: string
  readonly exited: Promise<number | null>
  /** The last lines the process wrote (stdout and stderr). */
  readonly tail: () => string
}

export interface RunnerOptions {
  readonly name: string
  readonly databaseUrl: string
  readonly token: string
  readonly env?: Record<string, string>
}

/** Starts the service as one socket runner, under the same Node binary as the test (the pinned one). */
export const startRunner = async (options: RunnerOptions): Promise<RunnerProcess> => {
  const [httpPort, runnerPort] = [await freePort(), await freePort()]
  const lines: Array<string> = []
  const child = spawn(process.execPath, [runnerEntry], {
    cwd: repoRoot,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      HOST: "127.0.0.1",
      PORT: String(httpPort),
      DATABASE_URL: options.databaseUrl,
      SVC_RPC_TOKEN: options.token,
      SVC_ADMIN_TOKEN: RUNNER_ADMIN_TOKEN,
      SVC_CLUSTER_MODE: "socket",
      // Runners of one deployment share the key of the secrets stored encrypted.
      SVC_SECRETS_KEY: SHARED_SECRETS_KEY,
      SVC_RUNNER_HOST: "127.0.0.1",
      SVC_RUNNER_PORT: String(runnerPort),
      LOG_LEVEL: "Info",
      ...options.env
    }
  })
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString("utf8").split("\n")) {
      if (line.trim() !== "") lines.push(line)
    }
    if (lines.length > 400) lines.splice(0, lines.length - 400)
  }
  child.stdout?.on("data", collect)
  child.stderr?.on("data", collect)
  const exited = new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode)
    else child.once("exit", (code) => resolve(code))
  })
  return {
    name: options.name,
    child,
    rpcUrl: `http://127.0.0.1:${httpPort}/rpc`,
    baseUrl: `http://127.0.0.1:${httpPort}`,
    address: `127.0.0.1:${runnerPort}`,
    exited,
    tail: () => `--- ${options.name} (last lines) ---\n${lines.slice(-40).join("\n")}`
  }
}

/** SIGTERM, then SIGKILL if the process has not exited within `graceMs`. */
export const stopRunner = async (runner: RunnerProcess, graceMs = 5_000): Promise<void> => {
  if (runner.child.exitCode !== null || runner.child.signalCode !== null) return
  runner.child.kill("SIGTERM")
  const timer = setTimeout(() => runner.child.kill("SIGKILL"), graceMs)
  await runner.exited
  clearTimeout(timer)
}
