/**
 * The one outbound client's transport (decision 0158): the answer's body bounded, a request the
 * transport refuses failed (never a defect), an interrupted request aborted on the wire, and a
 * request still waiting for a connection given up at its time limit. The checked address, the Host
 * header, redirects and a silent endpoint are in test/unit/webhook-public-host.test.ts.
 */
import { assert, describe, it } from "@effect/vitest"
import { Duration, Effect, Exit, Fiber } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { type Destination, sendTo } from "../../src/platform/outbound-http.ts"

/** A server on 127.0.0.1 running `handle`; counts requests and connections closed by the client. */
const server = (handle: (request: IncomingMessage, response: ServerResponse) => void) =>
  Effect.acquireRelease(
    Effect.callback<{ port: number; requests: () => number; closed: () => number; stop: () => void }>((resume) => {
      let requests = 0
      let closed = 0
      const http = createServer((request, response) => {
        requests++
        handle(request, response)
      })
      http.on("connection", (socket) => socket.on("close", () => closed++))
      http.listen(0, "127.0.0.1", () => {
        const address = http.address()
        resume(Effect.succeed({
          port: typeof address === "object" && address !== null ? address.port : 0,
          requests: () => requests,
          closed: () => closed,
          stop: () => http.closeAllConnections()
        }))
      })
    }),
    (running) => Effect.sync(() => running.stop())
  )

const at = (port: number, path = "/"): Destination => ({ url: new URL(`http://hook.invalid:${port}${path}`), address: "127.0.0.1" })

/** Polls `check` until it holds or `ms` pass. */
const eventually = (check: () => boolean, ms: number) =>
  Effect.gen(function*() {
    const deadline = Date.now() + ms
    while (!check() && Date.now() < deadline) yield* Effect.sleep(Duration.millis(10))
    return check()
  })

describe("outbound client transport", () => {
  it.live("the answer's body is kept up to keepBody bytes, the rest read and dropped; keepBody false keeps none", () =>
    Effect.scoped(Effect.gen(function*() {
      const big = "x".repeat(100_000)
      const running = yield* server((request, response) => {
        request.resume()
        request.on("end", () => response.writeHead(201, { "x-answer": "yes" }).end(big))
      })
      const request = { method: "POST", url: "", headers: { "content-type": "application/json" }, body: "{}", timeout: Duration.seconds(5) }
      const bounded = yield* sendTo(at(running.port), { ...request, keepBody: 100 })
      assert.strictEqual(bounded.status, 201)
      assert.strictEqual(bounded.headers["x-answer"], "yes")
      assert.strictEqual(bounded.body.toString(), big.slice(0, 100))
      const dropped = yield* sendTo(at(running.port), { ...request, keepBody: false })
      assert.strictEqual(dropped.status, 201)
      assert.strictEqual(dropped.body.length, 0)
      const whole = yield* sendTo(at(running.port), request)
      assert.strictEqual(whole.body.length, big.length)
    })))

  it.live("a request the transport refuses (a hop-by-hop header) fails as OutboundFailed and sends nothing", () =>
    Effect.scoped(Effect.gen(function*() {
      const running = yield* server((_, response) => response.end())
      const exit = yield* Effect.exit(sendTo(at(running.port), {
        method: "POST",
        url: "",
        headers: { "transfer-encoding": "chunked" },
        body: "{}",
        timeout: Duration.seconds(5)
      }))
      assert.isTrue(Exit.isFailure(exit))
      assert.isTrue(Exit.hasFails(exit) && !Exit.hasDies(exit), "a failure, not a defect")
      assert.strictEqual(running.requests(), 0)
    })))

  it.live("an interrupted request is aborted: its connection is closed, not left waiting for the answer", () =>
    Effect.scoped(Effect.gen(function*() {
      const running = yield* server(() => {})
      const fiber = yield* Effect.forkChild(sendTo(at(running.port), { method: "POST", url: "", headers: {}, body: "{}", timeout: Duration.seconds(30) }))
      assert.isTrue(yield* eventually(() => running.requests() === 1, 5_000))
      yield* Fiber.interrupt(fiber)
      assert.isTrue(yield* eventually(() => running.closed() === 1, 5_000), "the connection was closed")
    })))

  it.live("a request still waiting for a connection (the pool's 64 busy) fails at its time limit and is never sent after it", () =>
    Effect.scoped(Effect.gen(function*() {
      const running = yield* server(() => {})
      const send = (k: number, ms: number) =>
        sendTo(at(running.port, `/r${k}`), { method: "POST", url: "", headers: {}, body: "{}", timeout: Duration.millis(ms) })
      // Sixty-four requests hold every connection for 1.5 s; six more wait behind them with 200 ms each.
      const holding = yield* Effect.forkChild(Effect.forEach(Array.from({ length: 64 }, (_, k) => k), (k) => Effect.exit(send(k, 1_500)), { concurrency: "unbounded" }))
      assert.isTrue(yield* eventually(() => running.requests() === 64, 5_000))
      const started = Date.now()
      const waiting = yield* Effect.forEach(Array.from({ length: 6 }, (_, k) => 64 + k), (k) => Effect.exit(send(k, 200)), { concurrency: "unbounded" })
      assert.isTrue(waiting.every(Exit.isFailure))
      assert.isBelow(Date.now() - started, 1_000, "failed at their own limit, not when a connection freed")
      assert.isTrue((yield* Fiber.join(holding)).every(Exit.isFailure))
      // The held connections are closed by their aborts; the six then start on six new ones, each
      // closed as its request is aborted before a byte is written.
      assert.isTrue(yield* eventually(() => running.closed() === 70, 5_000), `${running.closed()} connections closed`)
      assert.strictEqual(running.requests(), 64)
    })))
})
