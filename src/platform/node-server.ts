/**
 * The Node HTTP server around the application, owning what the platform server leaves to us
 * (docs/decisions/0049-start-and-stop.md):
 *
 * - the port is bound only once the handler is attached, so a connection accepted at start-up
 *   is always answered (the platform layer listens when built, before the app is attached);
 * - keep-alive and header timeouts above common load balancers' idle timeouts;
 * - a malformed or oversized request head is answered in the error envelope;
 * - on a stop signal it drains: readiness answers 503, every response carries
 *   `Connection: close`, in-flight requests get the grace period, and what still runs at the
 *   deadline is interrupted, which the envelope renders as 503 `service_unavailable`.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { WebSocketServer } from "@effect/platform-node/NodeWS"
import { Clock, Effect, Exit, Scope } from "effect"
import type { HttpServerResponse } from "effect/http"
import { ServeError } from "effect/http/HttpServerError"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { Server as NetServer, type Socket } from "node:net"
import { envelopeBody, toEnvelope, ValidationError } from "../../schema/errors.ts"
import { Lifecycle } from "./lifecycle.ts"
import { newRequestId } from "./request-id.ts"

export interface NodeServeOptions {
  readonly port: number
  readonly host: string
  readonly shutdownGraceMs: number
  readonly keepAliveTimeoutMs: number
  readonly headersTimeoutMs: number
  /** `$SVC_BASE_URL`, for the `docs_url` of the envelopes answered below the application. */
  readonly docsBaseUrl: string
}

/**
 * A connection idle this long while draining is closed. Shorter races the client's next request
 * on a connection it just had an answer on: a client under load takes hundreds of milliseconds
 * to send it (with 100 keep-alive writers on a busy CPU, 250 ms reset up to half the requests
 * sent after the signal). A connection in use closes itself sooner, after its next answer
 * (`Connection: close`).
 */
const DRAIN_IDLE_CLOSE_MS = 2_000
const DRAIN_POLL_MS = 25
/** After the deadline, how long the interrupted requests get to write their 503. */
const DEADLINE_ANSWER_MS = 2_000

interface ConnectionState {
  active: number
  idleSince: number
}

/**
 * Serves `httpEffect` until the surrounding scope closes; closing it drains (see above).
 * Answers the address it listens on.
 */
export const serveNode = <E, R>(
  httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
  options: NodeServeOptions
) =>
  Effect.gen(function*() {
    const lifecycle = yield* Lifecycle
    const scope = yield* Effect.scope
    // Request fibers live here; closing it at the deadline interrupts what is still running.
    const requestScope = yield* Scope.fork(scope, "parallel")
    const handler = yield* NodeHttpServer.makeHandler(httpEffect, { scope: requestScope })
    // WebSocket upgrades (the `/rpc/ws` endpoints, decision 0082): the platform server's handler,
    // on a `ws` server created on first use and closed with the scope.
    const webSockets = yield* Effect.cached(Effect.acquireRelease(
      Effect.sync(() => new WebSocketServer({ noServer: true })),
      (wss) => Effect.callback<void>((resume) => wss.close(() => resume(Effect.void)))
    ).pipe(Scope.provide(scope)))
    const upgradeHandler = yield* NodeHttpServer.makeUpgradeHandler(webSockets, httpEffect, { scope: requestScope })

    const server = createServer({ requestTimeout: Math.max(300_000, options.headersTimeoutMs) })
    server.keepAliveTimeout = options.keepAliveTimeoutMs
    server.headersTimeout = options.headersTimeoutMs

    const connections = new Map<Socket, ConnectionState>()
    const inFlight = new Set<ServerResponse>()
    let draining = false

    server.on("connection", (socket: Socket) => {
      connections.set(socket, { active: 0, idleSince: Date.now() })
      socket.once("close", () => connections.delete(socket))
    })
    server.on("request", (request: IncomingMessage, response: ServerResponse) => {
      const connection = connections.get(request.socket)
      if (connection !== undefined) connection.active += 1
      inFlight.add(response)
      if (draining) response.setHeader("connection", "close")
      response.once("close", () => {
        inFlight.delete(response)
        if (connection !== undefined) {
          connection.active -= 1
          connection.idleSince = Date.now()
        }
      })
      handler(request, response)
    })
    server.on("upgrade", upgradeHandler)
    server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
      answerClientError(error, socket, options.docsBaseUrl)
    })

    yield* Effect.callback<void, ServeError>((resume) => {
      const onError = (cause: Error) => resume(Effect.fail(new ServeError({ cause })))
      server.once("error", onError)
      server.listen({ port: options.port, host: options.host }, () => {
        server.off("error", onError)
        resume(Effect.void)
      })
    })

    const drain = Effect.gen(function*() {
      yield* lifecycle.beginDrain
      draining = true
      for (const response of inFlight) {
        if (!response.headersSent) response.setHeader("connection", "close")
      }
      // Stop accepting without http.Server#close, which also closes idle keep-alive
      // connections at once and so resets a client whose next request is already on the wire.
      NetServer.prototype.close.call(server)
      const deadline = (yield* Clock.currentTimeMillis) + options.shutdownGraceMs
      // Connections close themselves after a response (Connection: close); one left idle is
      // closed once it has been idle long enough not to race the client's next request.
      const closeIdle = Effect.gen(function*() {
        while (connections.size > 0) {
          yield* endIdleConnections(connections)
          yield* Effect.sleep(DRAIN_POLL_MS)
        }
      })
      const remaining = Math.max(0, deadline - (yield* Clock.currentTimeMillis))
      yield* closeIdle.pipe(
        Effect.timeoutOrElse({ duration: remaining, orElse: () => Effect.void }),
        Effect.raceFirst(lifecycle.hurryRequested)
      )
      if (inFlight.size > 0) {
        yield* Effect.logWarning("shutdown deadline reached: answering 503 to the requests still running", {
          requests: inFlight.size
        })
      }
      // Interrupts the request fibers still running (and any request that arrives from now on):
      // each answers 503 service_unavailable, then its connection closes.
      yield* Scope.close(requestScope, Exit.void)
      yield* closeIdle.pipe(Effect.timeoutOrElse({ duration: DEADLINE_ANSWER_MS, orElse: () => Effect.void }))
      server.closeAllConnections()
    })
    yield* Effect.addFinalizer(() => drain)

    const address = server.address()
    return typeof address === "object" && address !== null ? address.port : options.port
  })

/**
 * Ends the connections idle for `DRAIN_IDLE_CLOSE_MS` whose client has sent nothing since. The
 * decision is taken in a `setImmediate` callback, after the event loop's I/O phase: a request
 * that reached the socket while the loop was busy is read there first (its connection is then
 * active, or has read more bytes) instead of being cut unread by a timer that fired before it.
 */
const endIdleConnections = (connections: ReadonlyMap<Socket, ConnectionState>) =>
  Effect.callback<void>((resume) => {
    const now = Date.now()
    const candidates: Array<readonly [Socket, number]> = []
    for (const [socket, connection] of connections) {
      if (connection.active === 0 && now - connection.idleSince >= DRAIN_IDLE_CLOSE_MS) candidates.push([socket, socket.bytesRead])
    }
    if (candidates.length === 0) return resume(Effect.void)
    setImmediate(() => {
      for (const [socket, bytesRead] of candidates) {
        const connection = connections.get(socket)
        if (connection !== undefined && connection.active === 0 && socket.bytesRead === bytesRead && !socket.writableEnded) socket.end()
      }
      resume(Effect.void)
    })
  })

/**
 * Node answers a request head it cannot parse (headers over its limit: 431; a malformed
 * head: 400) before any handler runs, with a bare status line. Answer in the envelope instead.
 */
const answerClientError = (error: NodeJS.ErrnoException, socket: Socket, docsBaseUrl: string) => {
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy()
    return
  }
  const [status, reason, message] =
    error.code === "HPE_HEADER_OVERFLOW"
      ? [431, "request_headers_too_large", "The request headers are larger than the server accepts (16 KB)."] as const
      : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? [408, "request_timeout", "The request was not received in time."] as const
      : [400, "malformed_request", "The request could not be parsed as HTTP/1.1."] as const
  const requestId = newRequestId()
  const envelope = toEnvelope(new ValidationError({ message, reason }))
  const body = JSON.stringify(envelopeBody({ error: { ...envelope.error, status } }, requestId, docsBaseUrl))
  const statusText = status === 431 ? "Request Header Fields Too Large" : status === 408 ? "Request Timeout" : "Bad Request"
  socket.end(
    `HTTP/1.1 ${status} ${statusText}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`
  )
}
