/**
 * The service as a process: start-up never leaves a connection hanging, SIGTERM drains under
 * load (no 500, no reset, every acknowledged write kept), `npm start` passes the signal on, and
 * a request head Node cannot take is answered in the envelope.
 */
import { describe, expect, it } from "@effect/vitest"
import { Agent } from "node:http"
import { connect } from "node:net"
import { join } from "node:path"
import { migratedDataDir, tempDir } from "../support/app.ts"
import {
  type Outcome,
  PROCESS_ADMIN_TOKEN,
  send,
  type ServiceProcess,
  startService,
  stopService,
  waitUntil
} from "../support/service-process.ts"

const databaseUrl = process.env["DATABASE_URL"]

/**
 * `env(true)`: an empty embedded directory (start-up creates and migrates it); otherwise a copy of
 * the run's migrated one (test/support/global-setup.ts), as only the start-up test is about start-up.
 */
const targets: ReadonlyArray<{ readonly name: string; readonly env: (fresh?: boolean) => Record<string, string> }> = [
  {
    name: "embedded",
    env: (fresh = false) => ({ SVC_DATA_DIR: fresh ? join(tempDir("lifecycle"), "db") : migratedDataDir("lifecycle") })
  },
  ...(databaseUrl === undefined ? [] : [{ name: "postgres", env: () => ({ DATABASE_URL: databaseUrl }) }])
]

const operator = { authorization: `Bearer ${PROCESS_ADMIN_TOKEN}`, "content-type": "application/json" }

const healthy = (service: ServiceProcess) => async () => {
  const outcome = await send(new Agent({ keepAlive: false }), `${service.baseUrl}/readyz`, { timeoutMs: 1_000 })
  return outcome.kind === "answered" && outcome.status === 200
}

const errorCode = (outcome: Outcome): string | undefined => {
  if (outcome.kind !== "answered") return undefined
  try {
    const parsed: unknown = JSON.parse(outcome.body)
    return typeof parsed === "object" && parsed !== null && "error" in parsed &&
        typeof parsed.error === "object" && parsed.error !== null && "code" in parsed.error &&
        typeof parsed.error.code === "string"
      ? parsed.error.code
      : undefined
  } catch {
    return undefined
  }
}

interface LoadResult {
  readonly outcomes: ReadonlyArray<{ readonly outcome: Outcome; readonly sentAt: number }>
  readonly acknowledged: ReadonlyArray<string>
  readonly readiness: ReadonlyArray<{ readonly outcome: Outcome; readonly sentAt: number }>
}

interface Load {
  /** Writes acknowledged so far by each worker, read while the load runs. */
  readonly acknowledgedPerWorker: ReadonlyArray<number>
  readonly finished: Promise<LoadResult>
}

/**
 * Writes (operator app registrations) from `workers` keep-alive connections plus a readiness
 * poller, until `stop()` resolves and every connection is refused.
 */
const runLoad = (service: ServiceProcess, workers: number, stopped: Promise<unknown>): Load => {
  const agent = new Agent({ keepAlive: true, maxSockets: workers })
  const outcomes: Array<{ outcome: Outcome; sentAt: number }> = []
  const readiness: Array<{ outcome: Outcome; sentAt: number }> = []
  const acknowledged: Array<string> = []
  const acknowledgedPerWorker = Array.from({ length: workers }, () => 0)
  let done = false
  void stopped.then(() => {
    done = true
  })
  const worker = async (n: number) => {
    let sequence = 0
    while (!done) {
      const sentAt = Date.now()
      const outcome = await send(agent, `${service.baseUrl}/api/v1/admin/oauth-apps`, {
        method: "POST",
        headers: operator,
        body: JSON.stringify({ name: `load ${n}-${sequence++}`, redirect_uris: ["https://partner.example/callback"] })
      })
      outcomes.push({ outcome, sentAt })
      if (outcome.kind === "answered" && outcome.status === 201) {
        acknowledged.push(JSON.parse(outcome.body).data.id)
        acknowledgedPerWorker[n]! += 1
      }
      // Pacing, not a wait: once the listener is closed, retry (as a client would) without spinning.
      if (outcome.kind === "refused") await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  const readinessAgent = new Agent({ keepAlive: true, maxSockets: 1 })
  const poller = async () => {
    while (!done) {
      const sentAt = Date.now()
      readiness.push({ outcome: await send(readinessAgent, `${service.baseUrl}/readyz`), sentAt })
      // The sampling interval of readiness, not a wait: every sample is checked afterwards.
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  const finished = Promise.all([...Array.from({ length: workers }, (_, n) => worker(n)), poller()]).then(() => {
    agent.destroy()
    readinessAgent.destroy()
    return { outcomes, acknowledged, readiness }
  })
  return { acknowledgedPerWorker, finished }
}

/**
 * The load is under way: every worker has had two writes acknowledged, so all of them are sending
 * and the agent's keep-alive connections have been reused (what the signal must find).
 */
const underWay = (load: Load) =>
  waitUntil(
    () => Promise.resolve(load.acknowledgedPerWorker.every((n) => n >= 2)),
    30_000,
    "two acknowledged writes from every load worker"
  )

describe("start-up", () => {
  for (const target of targets) {
    it(`answers or refuses every probe from spawn on (${target.name})`, { timeout: 120_000 }, async () => {
      const service = await startService(target.env(true))
      const probes: Array<Promise<Outcome>> = []
      const deadline = Date.now() + 90_000
      let up = false
      while (!up && Date.now() < deadline) {
        const probe = send(new Agent({ keepAlive: false }), `${service.baseUrl}/healthz`, { timeoutMs: 1_000 })
        probes.push(probe)
        void probe.then((outcome) => {
          if (outcome.kind === "answered" && outcome.status === 200) up = true
        })
        // The probe rate, not a wait: every probe sent from spawn on is checked afterwards.
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      const outcomes = await Promise.all(probes)
      const exit = await stopService(service)
      const timedOut = outcomes.filter((outcome) => outcome.kind === "timeout").length
      const answered = outcomes.filter((outcome) => outcome.kind === "answered")
      console.info(`start-up probes (${target.name}): ${outcomes.length} sent, ${answered.length} answered, ` +
        `${outcomes.filter((outcome) => outcome.kind === "refused").length} refused, ${timedOut} timed out`)
      expect(up, service.tail()).toBe(true)
      expect({ timedOut, probes: outcomes.length }).toEqual({ timedOut: 0, probes: outcomes.length })
      expect(answered.every((outcome) => outcome.kind === "answered" && outcome.status === 200)).toBe(true)
      expect(exit).toEqual({ code: 0, signal: null })
    })
  }
})

describe("SIGTERM", () => {
  const target = targets[targets.length - 1]!

  it(`drains under load: no 5xx, no reset, readiness 503 at once, exit 0, every acknowledged write kept (${target.name})`, {
    timeout: 180_000
  }, async () => {
    const env = target.env()
    const service = await startService(env)
    await waitUntil(healthy(service), 90_000, "the service to be ready")
    let signalledAt = Number.POSITIVE_INFINITY
    const load = runLoad(service, 8, service.exited)
    await underWay(load)
    signalledAt = Date.now()
    service.child.kill("SIGTERM")
    const exit = await service.exited
    const result = await load.finished

    const failures = result.outcomes.filter(({ outcome }) =>
      outcome.kind === "reset" || outcome.kind === "timeout" || outcome.kind === "other" ||
      (outcome.kind === "answered" && outcome.status >= 500)
    )
    const count = (kind: string) => result.outcomes.filter(({ outcome }) => outcome.kind === kind).length
    console.info(`SIGTERM under load (${target.name}): ${result.outcomes.length} requests, ${result.acknowledged.length} acknowledged, ` +
      `${count("refused")} refused after the listener closed, ${count("reset")} reset, ${failures.length} failures`)
    expect(failures.map(({ outcome }) => outcome), service.tail()).toEqual([])
    expect(exit).toEqual({ code: 0, signal: null })
    expect(result.acknowledged.length).toBeGreaterThan(10)
    // Answers to requests sent after the signal say the connection closes.
    const late = result.outcomes.filter(({ outcome, sentAt }) => outcome.kind === "answered" && sentAt > signalledAt + 100)
    for (const { outcome } of late) {
      if (outcome.kind === "answered") expect(outcome.headers["connection"]).toBe("close")
    }
    // Readiness fails from the signal on (allowing 100 ms for the signal to arrive).
    const lateReadiness = result.readiness.filter(({ outcome, sentAt }) => outcome.kind === "answered" && sentAt > signalledAt + 100)
    for (const { outcome } of lateReadiness) {
      expect(outcome.kind === "answered" ? outcome.status : 0).toBe(503)
      expect(errorCode(outcome)).toBe("service_unavailable")
    }

    // Every acknowledged write is there after a restart on the same database.
    const restarted = await startService(env)
    await waitUntil(healthy(restarted), 90_000, "the restarted service to be ready")
    const agent = new Agent({ keepAlive: true, maxSockets: 8 })
    const missing: Array<string> = []
    for (const id of result.acknowledged) {
      const outcome = await send(agent, `${restarted.baseUrl}/api/v1/admin/oauth-apps/${id}`, { headers: operator })
      if (!(outcome.kind === "answered" && outcome.status === 200)) missing.push(id)
    }
    agent.destroy()
    expect(await stopService(restarted)).toEqual({ code: 0, signal: null })
    expect(missing).toEqual([])
  })

  it("answers 503 service_unavailable with Retry-After to what still runs at the deadline, never 500", {
    timeout: 120_000
  }, async () => {
    const service = await startService({ ...target.env(), SVC_SHUTDOWN_GRACE_MS: "0" })
    await waitUntil(healthy(service), 90_000, "the service to be ready")
    const load = runLoad(service, 8, service.exited)
    await underWay(load)
    service.child.kill("SIGTERM")
    const exit = await service.exited
    const result = await load.finished
    const serverErrors = result.outcomes.flatMap(({ outcome }) => outcome.kind === "answered" && outcome.status >= 500 ? [outcome] : [])
    console.info(`grace 0 (${target.name}): ${result.outcomes.length} requests, ${serverErrors.length} answered 503 at the deadline`)
    for (const outcome of serverErrors) {
      expect({ status: outcome.status, code: errorCode(outcome), retryAfter: outcome.headers["retry-after"] })
        .toEqual({ status: 503, code: "service_unavailable", retryAfter: "1" })
    }
    expect(result.outcomes.filter(({ outcome }) => outcome.kind === "reset" || outcome.kind === "timeout")).toEqual([])
    expect(exit).toEqual({ code: 0, signal: null })
  })

  it("sent to the pid of `npm start`, stops the service", { timeout: 120_000 }, async () => {
    const service = await startService({ SVC_DATA_DIR: join(tempDir("lifecycle-npm"), "db") }, { viaNpm: true })
    await waitUntil(healthy(service), 90_000, "the service to be ready")
    service.child.kill("SIGTERM")
    await service.exited
    // The node process behind npm is gone once its port refuses connections.
    await waitUntil(async () => {
      const outcome = await send(new Agent({ keepAlive: false }), `${service.baseUrl}/healthz`, { timeoutMs: 1_000 })
      return outcome.kind === "refused"
    }, 30_000, "the port to close")
  })
})

describe("request heads Node refuses", () => {
  it("headers over the limit answer 431 in the envelope with X-Request-Id", { timeout: 120_000 }, async () => {
    const service = await startService(targets[0]!.env())
    await waitUntil(healthy(service), 90_000, "the service to be ready")
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(service.port, "127.0.0.1", () => {
        socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`)
      })
      const chunks: Array<Buffer> = []
      socket.on("data", (chunk: Buffer) => chunks.push(chunk))
      socket.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
      socket.on("error", reject)
    })
    expect(await stopService(service)).toEqual({ code: 0, signal: null })
    const [head = "", body = ""] = raw.split("\r\n\r\n")
    expect(head.split("\r\n")[0]).toBe("HTTP/1.1 431 Request Header Fields Too Large")
    const requestId = /x-request-id: (\S+)/i.exec(head)?.[1]
    const parsed = JSON.parse(body)
    expect(parsed.error).toMatchObject({ code: "validation_error", status: 431, reason: "request_headers_too_large" })
    expect(parsed.error.request_id).toBe(requestId)
  })
})
