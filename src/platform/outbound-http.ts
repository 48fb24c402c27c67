/**
 * The one outbound HTTP client (issue 31 item 7): every request the service makes to another
 * server (a provider's API, a webhook subscriber) goes through these kept-alive connections,
 * each request within a time limit for its whole exchange, redirects never followed.
 *
 * - `send`: one request; the answer's body kept, or read and dropped (`keepBody: false`).
 *   With `publicOnly` the URL is held to the public-host rule (./public-host.ts): its host is
 *   resolved and classified and the request connects to the address that was checked (the host
 *   name only in `Host` and TLS SNI), so a reused socket always leads to a checked address.
 * - `OutboundHttpLayer`: the same client as an `HttpClient` (the provider ports' ProviderHttp).
 *
 * Connections are pooled by the address connected to, its port, the scheme and, for TLS, the
 * server name (undici pools: decision 0158); idle connections close after 4 s, before the usual
 * 5 s idle limit of a receiver's server.
 */
import { Data, Duration, Effect, Layer } from "effect"
import { HttpClient, HttpClientError, HttpClientResponse } from "effect/http"
import type { IncomingHttpHeaders } from "node:http"
import { isIP } from "node:net"
import { type Dispatcher, Pool } from "undici"
import { type AllowList, checkTarget, type ResolveCache, type TargetRefused } from "./public-host.ts"

/** Connections to one destination at most (node:http's agent had the same limit per host and port). */
const CONNECTIONS = 64
const IDLE_MS = 4_000
/** A pool unused this long is closed when the next pool is made; at most MAX_POOLS are kept. */
const POOL_UNUSED_MS = 60_000
const MAX_POOLS = 1_000

interface Kept {
  readonly pool: Pool
  used: number
}
const pools = new Map<string, Kept>()

const sweep = (now: number) => {
  for (const [key, kept] of pools) {
    if (now - kept.used < POOL_UNUSED_MS && pools.size < MAX_POOLS) continue
    pools.delete(key)
    void kept.pool.close().catch(() => undefined)
  }
}

const poolFor = (secure: boolean, address: string, port: number, servername: string | undefined): Pool => {
  const key = `${secure ? "https" : "http"}|${address}|${port}|${servername ?? ""}`
  const now = Date.now()
  const found = pools.get(key)
  if (found !== undefined) {
    found.used = now
    return found.pool
  }
  sweep(now)
  const host = isIP(address) === 6 ? `[${address}]` : address
  const pool = new Pool(`${secure ? "https" : "http"}://${host}:${port}`, {
    connections: CONNECTIONS,
    pipelining: 1,
    keepAliveTimeout: IDLE_MS,
    keepAliveMaxTimeout: IDLE_MS,
    // The exchange's own limit (below) bounds a request; these only keep undici from a shorter one.
    headersTimeout: 0,
    bodyTimeout: 0,
    ...(servername === undefined ? {} : { connect: { servername } })
  })
  pools.set(key, { pool, used: now })
  return pool
}

/** The public-host rule's settings (a webhook delivery's). */
export interface PublicOnly {
  readonly allow: AllowList
  readonly dnsServers: ReadonlyArray<string>
  readonly cache?: ResolveCache | undefined
}

export interface OutboundRequest {
  readonly method: string
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body?: string | Uint8Array | undefined
  /** The whole exchange: connecting, sending, the answer and its body. */
  readonly timeout: Duration.Duration
  /** Hold the URL to the public-host rule and connect to the address it checked. */
  readonly publicOnly?: PublicOnly | undefined
  /**
   * False: the answer's body is read and dropped (default true). A number: at most that many
   * bytes of it are kept, the rest read and dropped.
   */
  readonly keepBody?: boolean | number | undefined
}

export interface OutboundResponse {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  /** Empty when `keepBody` was false; at most `keepBody` bytes when it was a number. */
  readonly body: Buffer
}

export class OutboundFailed extends Data.TaggedError("OutboundFailed")<{ readonly message: string }> {}

/** Where the request connects: the checked address under the rule (a `CheckedTarget`), else the URL's host. */
export interface Destination {
  readonly url: URL
  readonly address: string
}

/** Headers the transport sets itself from the destination and the body. */
const OWN_HEADERS = new Set(["host", "content-length"])

/** The request to `destination` (`request.url` and `publicOnly` are not read again: the destination says where). */
export const sendTo = (destination: Destination, request: OutboundRequest) =>
  // No AbortSignal (declaring one makes Effect create an AbortController per request): the
  // cleanup returned below aborts the request when the fiber is interrupted.
  Effect.callback<OutboundResponse, OutboundFailed>((resume) => {
    const { url } = destination
    const secure = url.protocol === "https:"
    const hostname = url.hostname.replace(/^\[|\]$/g, "")
    const limit = request.keepBody === false ? 0 : typeof request.keepBody === "number" ? request.keepBody : Infinity
    const headers: Record<string, string> = { host: url.host }
    for (const name in request.headers) if (!OWN_HEADERS.has(name.toLowerCase())) headers[name] = request.headers[name]!
    let controller: Dispatcher.DispatchController | undefined
    let ended = false
    const end = (effect: Effect.Effect<OutboundResponse, OutboundFailed>) => {
      if (ended) return
      ended = true
      clearTimeout(timer)
      resume(effect)
    }
    // Aborted when it starts, if it was given up before (a request waiting for a connection).
    let gaveUp: Error | undefined
    const giveUp = (reason: Error) => {
      gaveUp = reason
      controller?.abort(reason)
    }
    const chunks: Array<Buffer> = []
    let kept = 0
    let status = 0
    let answerHeaders: IncomingHttpHeaders = {}
    const handler: Dispatcher.DispatchHandler = {
      onRequestStart: (started) => {
        controller = started
        if (gaveUp !== undefined) started.abort(gaveUp)
      },
      onResponseStart: (_, statusCode, responseHeaders) => {
        status = statusCode
        answerHeaders = responseHeaders
      },
      onResponseData: (_, chunk) => {
        if (kept >= limit) return
        const part = kept + chunk.length <= limit ? chunk : chunk.subarray(0, limit - kept)
        chunks.push(part)
        kept += part.length
      },
      onResponseEnd: () =>
        end(Effect.succeed({ status, headers: answerHeaders, body: chunks.length === 0 ? Buffer.alloc(0) : Buffer.concat(chunks) })),
      onResponseError: (_, error) => end(Effect.fail(new OutboundFailed({ message: error.message })))
    }
    const timer = setTimeout(() => {
      const reason = new Error(`no answer within ${Duration.toSeconds(request.timeout)} s`)
      giveUp(reason)
      end(Effect.fail(new OutboundFailed({ message: reason.message })))
    }, Duration.toMillis(request.timeout))
    const port = url.port === "" ? (secure ? 443 : 80) : Number(url.port)
    const servername = secure && isIP(hostname) === 0 ? hostname : undefined
    try {
      poolFor(secure, destination.address, port, servername).dispatch({
        path: `${url.pathname}${url.search}`,
        method: request.method,
        headers,
        body: request.body === undefined || request.body === "" ? null : request.body
      }, handler)
    } catch (error) {
      // A request undici refuses before it starts (a header it does not allow): failed, nothing sent.
      end(Effect.fail(new OutboundFailed({ message: error instanceof Error ? error.message : String(error) })))
    }
    return Effect.sync(() => {
      ended = true
      clearTimeout(timer)
      giveUp(new Error("interrupted"))
    })
  })

/** One request; a 3xx is answered as it came (never followed). */
export const send = (request: OutboundRequest): Effect.Effect<OutboundResponse, OutboundFailed | TargetRefused> => {
  if (request.publicOnly !== undefined) {
    const { allow, cache, dnsServers } = request.publicOnly
    return Effect.flatMap(checkTarget(request.url, allow, dnsServers, cache), (target) => sendTo(target, request))
  }
  if (!URL.canParse(request.url)) return Effect.fail(new OutboundFailed({ message: `not a URL: ${request.url}` }))
  const url = new URL(request.url)
  return sendTo({ url, address: url.hostname.replace(/^\[|\]$/g, "") }, request)
}

/** What an `HttpClient` request is given at most, when its caller sets no shorter limit. */
const CLIENT_TIMEOUT = Duration.seconds(60)

/** `send` as an Effect `HttpClient` (bodies: none, text or bytes). */
export const outboundHttpClient: HttpClient.HttpClient = HttpClient.make((request, url) => {
  const transport = (description: string) =>
    new HttpClientError.HttpClientError({ reason: new HttpClientError.TransportError({ request, description }) })
  const body = request.body
  const payload = body._tag === "Empty"
    ? undefined
    : body._tag === "Uint8Array"
    ? body.body
    : body._tag === "Raw" && (typeof body.body === "string" || body.body instanceof Uint8Array)
    ? body.body
    : null
  if (payload === null) return Effect.fail(transport(`a ${body._tag} body is not sent by the outbound client`))
  return send({ method: request.method, url: url.toString(), headers: request.headers, body: payload, timeout: CLIENT_TIMEOUT }).pipe(
    Effect.mapError((error) => transport(error.message)),
    Effect.map((answer) => {
      const headers = new Headers()
      for (const [name, value] of Object.entries(answer.headers)) {
        if (Array.isArray(value)) for (const one of value) headers.append(name, one)
        else if (value !== undefined) headers.set(name, value)
      }
      // A web Response cannot carry a body with these statuses.
      const empty = answer.status === 204 || answer.status === 205 || answer.status === 304
      return HttpClientResponse.fromWeb(request, new Response(empty ? null : new Uint8Array(answer.body), { status: answer.status, headers }))
    })
  )
})

/** The outbound client as the `HttpClient` service. */
export const OutboundHttpLayer = Layer.succeed(HttpClient.HttpClient)(outboundHttpClient)
