/**
 * Requests from a chosen loopback address: the service throttles by the connected peer's
 * address (no proxy header is trusted), so a test that needs two clients connects from two
 * addresses of 127.0.0.0/8 (every one of them is this machine on Linux).
 */
import { Effect } from "effect"
import { request as httpRequest } from "node:http"
import { type HttpResult, TestServer } from "./app.ts"

/** A distinct loopback address per call site (127.0.0.2 up), so files and tests do not share budgets. */
export const loopbackAddress = (n: number) => `127.${Math.floor(n / 65536) % 256}.${Math.floor(n / 256) % 256}.${(n % 254) + 2}`

/** A fresh loopback address, unlikely to be used twice in one run. */
export const freshLoopbackAddress = () => loopbackAddress(Math.floor(Math.random() * 0xfffff))

export interface PeerRequest {
  readonly method?: string
  readonly headers?: Record<string, string>
  readonly body?: string
}

/** One real HTTP request to the test server, connected from `from`. */
export const callFrom = (from: string, path: string, init: PeerRequest = {}) =>
  Effect.gen(function*() {
    const { url } = yield* TestServer
    const target = new URL(`${url}${path}`)
    return yield* Effect.callback<HttpResult>((resume) => {
      const outgoing = httpRequest({
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: init.method ?? "GET",
        localAddress: from,
        headers: {
          ...init.headers,
          ...(init.body === undefined ? {} : { "content-length": String(Buffer.byteLength(init.body)) })
        }
      }, (response) => {
        const chunks: Array<Buffer> = []
        response.on("data", (chunk: Buffer) => chunks.push(chunk))
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          const headers = new Headers()
          for (const [name, value] of Object.entries(response.headers)) {
            if (value === undefined) continue
            for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one)
          }
          const json: unknown = (headers.get("content-type") ?? "").includes("json") && text.length > 0
            ? JSON.parse(text)
            : undefined
          resume(Effect.succeed({ status: response.statusCode ?? 0, headers, text, json }))
        })
        response.on("error", (error) => resume(Effect.die(error)))
      })
      outgoing.on("error", (error) => resume(Effect.die(error)))
      outgoing.end(init.body)
    })
  })
