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
 * Connections are pooled by the address connected to, its port and, for TLS, the server name;
 * idle sockets close after 4 s, before the usual 5 s idle limit of a receiver's server.
 */
import { Data, Duration, Effect, Layer } from "effect"
import { HttpClient, HttpClientError, HttpClientResponse } from "effect/http"
import { Agent as HttpAgent, type IncomingHttpHeaders, request as httpRequest } from "node:http"
import { Agent as HttpsAgent, request as httpsRequest } from "node:https"
import { isIP } from "node:net"
import { type AllowList, checkTarget, type ResolveCache, type TargetRefused } from "./public-host.ts"

const httpAgent = new HttpAgent({ keepAlive: true, maxSockets: 64, timeout: 4_000 })
const httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: 64, timeout: 4_000 })

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
  readonly family: 4 | 6 | undefined
}

/** The request to `destination` (`request.url` and `publicOnly` are not read again: the destination says where). */
export const sendTo = (destination: Destination, request: OutboundRequest) =>
  // No AbortSignal (declaring one makes Effect create an AbortController per request): the
  // cleanup returned below destroys the request when the fiber is interrupted.
  Effect.callback<OutboundResponse, OutboundFailed>((resume) => {
    const { url } = destination
    const secure = url.protocol === "https:"
    const hostname = url.hostname.replace(/^\[|\]$/g, "")
    const body = request.body ?? ""
    const limit = request.keepBody === false ? 0 : typeof request.keepBody === "number" ? request.keepBody : Infinity
    const outgoing = (secure ? httpsRequest : httpRequest)({
      agent: secure ? httpsAgent : httpAgent,
      host: destination.address,
      ...(destination.family === undefined ? {} : { family: destination.family }),
      port: url.port === "" ? (secure ? 443 : 80) : Number(url.port),
      path: `${url.pathname}${url.search}`,
      method: request.method,
      headers: { ...request.headers, host: url.host, "content-length": String(typeof body === "string" ? Buffer.byteLength(body) : body.byteLength) },
      ...(secure && isIP(hostname) === 0 ? { servername: hostname } : {})
    }, (response) => {
      const chunks: Array<Buffer> = []
      let kept = 0
      response.on("data", (chunk: Buffer) => {
        if (kept >= limit) return
        const part = kept + chunk.length <= limit ? chunk : chunk.subarray(0, limit - kept)
        chunks.push(part)
        kept += part.length
      })
      response.on("end", () => {
        clearTimeout(timer)
        resume(Effect.succeed({ status: response.statusCode ?? 0, headers: response.headers, body: chunks.length === 0 ? Buffer.alloc(0) : Buffer.concat(chunks) }))
      })
      response.on("error", (error) => {
        clearTimeout(timer)
        resume(Effect.fail(new OutboundFailed({ message: error.message })))
      })
    })
    const timer = setTimeout(() => {
      outgoing.destroy(new Error(`no answer within ${Duration.toSeconds(request.timeout)} s`))
    }, Duration.toMillis(request.timeout))
    outgoing.on("error", (error) => {
      clearTimeout(timer)
      resume(Effect.fail(new OutboundFailed({ message: error.message })))
    })
    outgoing.end(body)
    return Effect.sync(() => {
      clearTimeout(timer)
      outgoing.destroy()
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
  return sendTo({ url, address: url.hostname.replace(/^\[|\]$/g, ""), family: undefined }, request)
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
