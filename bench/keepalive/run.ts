/**
 * Keep-alive resets across three runners (decision 0049).
 *
 * A client that keeps a pooled connection and reuses it without checking it first (as a load
 * balancer or a load generator does) is reset when the server closes that idle connection just
 * as the next request is sent. This starts three socket runners on DATABASE_URL, once with
 * Node's default keep-alive timeout (5 s, the baseline) and once with the service's default,
 * and drives each with raw HTTP/1.1 clients whose gaps between requests straddle the moment
 * Node closes an idle connection (5 s plus its 1 s buffer), next to
 * a steady stream of requests. It prints requests, resets and failures per setting.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/svc npm run bench:keepalive
 *
 * Settings: BENCH_DURATION_S (40), BENCH_IDLE_CLIENTS (60 per runner), BENCH_BUSY_CLIENTS (4 per runner).
 */
import { connect, type Socket } from "node:net"
import { type RunnerProcess, startRunner, stopRunner } from "../../test/cluster/support/processes.ts"

const databaseUrl = process.env["DATABASE_URL"]
if (databaseUrl === undefined) {
  console.error("bench:keepalive needs DATABASE_URL (three runners share one PostgreSQL)")
  process.exit(2)
}
const durationMs = Number(process.env["BENCH_DURATION_S"] ?? "40") * 1000
const idleClients = Number(process.env["BENCH_IDLE_CLIENTS"] ?? "60")
const busyClients = Number(process.env["BENCH_BUSY_CLIENTS"] ?? "4")

interface Tally {
  requests: number
  ok: number
  resets: number
  other: number
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * One pooled connection: sends `GET /healthz`, reads the answer, waits `gap()`, and sends the
 * next request on the same socket without looking at it first. A request that gets no answer
 * because the server closed or reset the socket is a reset; the client then reconnects.
 */
const client = async (port: number, gap: () => number, until: number, tally: Tally) => {
  let socket: Socket | undefined
  while (Date.now() < until) {
    if (socket === undefined || socket.destroyed) socket = await open(port)
    tally.requests += 1
    const answer = await exchange(socket)
    if (answer === "ok") tally.ok += 1
    else if (answer === "reset") {
      tally.resets += 1
      socket.destroy()
      socket = undefined
    } else {
      tally.other += 1
      socket.destroy()
      socket = undefined
    }
    await sleep(gap())
  }
  socket?.destroy()
}

const open = (port: number) =>
  new Promise<Socket>((resolve, reject) => {
    const socket = connect(port, "127.0.0.1", () => resolve(socket))
    socket.once("error", reject)
  })

const exchange = (socket: Socket) =>
  new Promise<"ok" | "reset" | "other">((resolve) => {
    let received = ""
    const done = (answer: "ok" | "reset" | "other") => {
      socket.off("data", onData)
      socket.off("error", onError)
      socket.off("close", onClose)
      resolve(answer)
    }
    const onData = (chunk: Buffer) => {
      received += chunk.toString("latin1")
      const headEnd = received.indexOf("\r\n\r\n")
      if (headEnd === -1) return
      const length = Number(/content-length: (\d+)/i.exec(received.slice(0, headEnd))?.[1] ?? "0")
      if (received.length >= headEnd + 4 + length) done(received.startsWith("HTTP/1.1 200") ? "ok" : "other")
    }
    const onError = () => done("reset")
    const onClose = () => done("reset")
    socket.on("data", onData)
    socket.once("error", onError)
    socket.once("close", onClose)
    socket.write("GET /healthz HTTP/1.1\r\nHost: bench\r\n\r\n")
  })

const measure = async (label: string, env: Record<string, string>) => {
  const runners: Array<RunnerProcess> = []
  for (let n = 0; n < 3; n++) {
    runners.push(await startRunner({ name: `runner-${n}`, databaseUrl, token: "bench-keepalive-rpc-token-0123456789", env: { LOG_LEVEL: "Warn", ...env } }))
  }
  for (const runner of runners) {
    const deadline = Date.now() + 90_000
    while (Date.now() < deadline) {
      const ready = await fetch(`${runner.baseUrl}/readyz`).then((response) => response.ok, () => false)
      if (ready) break
      await sleep(200)
    }
  }
  const tally: Tally = { requests: 0, ok: 0, resets: 0, other: 0 }
  const until = Date.now() + durationMs
  const ports = runners.map((runner) => Number(new URL(runner.baseUrl).port))
  await Promise.all(ports.flatMap((port) => [
    // Node closes an idle connection at keepAliveTimeout plus its 1 s keepAliveTimeoutBuffer: gaps
    // of 5.9-6.1 s reuse it right around the moment Node's default closes it.
    ...Array.from({ length: idleClients }, () => client(port, () => 5_900 + Math.random() * 200, until, tally)),
    ...Array.from({ length: busyClients }, () => client(port, () => Math.random() * 5, until, tally))
  ]))
  for (const runner of runners) await stopRunner(runner, 30_000)
  const perThousand = tally.requests === 0 ? 0 : (tally.resets * 1000) / tally.requests
  console.log(
    `${label.padEnd(34)} requests ${String(tally.requests).padStart(7)}  ok ${String(tally.ok).padStart(7)}  ` +
      `resets ${String(tally.resets).padStart(4)} (${perThousand.toFixed(2)} per 1000)  other ${tally.other}`
  )
  return tally
}

console.log(`3 runners, ${idleClients} idle-gap + ${busyClients} busy clients per runner, ${durationMs / 1000} s per setting`)
const baseline = await measure("keep-alive 5 s (Node's default)", { SVC_KEEPALIVE_TIMEOUT_MS: "5000" })
const service = await measure("keep-alive 75 s (service default)", {})
console.log(`resets: ${service.resets} with the service's default, ${baseline.resets} with Node's default`)
process.exit(service.resets === 0 && service.other === 0 ? 0 : 1)
