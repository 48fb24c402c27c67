/**
 * The media check of a template's `header_media` (decision 0093): the URL is fetched once to learn
 * its type and size before the template goes to the platform. Only `https:` (or the sandbox's own
 * origin); the host is resolved by the connection's own lookup, which refuses private, loopback,
 * link-local, CGNAT, ULA, multicast, metadata, documentation and other reserved addresses (the
 * shared classifier, src/platform/public-address.ts), so the address checked is the one
 * connected to (no second lookup); redirects are not followed; 10 s; the body is read only up to
 * the format's limit plus one byte.
 */
import { Effect } from "effect"
import { lookup as dnsLookup } from "node:dns"
import http from "node:http"
import https from "node:https"
import { isIP, type LookupFunction } from "node:net"
import { isPublicAddress } from "../../platform/public-address.ts"

export const MEDIA_FORMATS = ["IMAGE", "VIDEO", "DOCUMENT"] as const
export type MediaFormat = typeof MEDIA_FORMATS[number]

const MB = 1024 * 1024
/** api-concepts.md Limits: JPEG/PNG 5 MB, MP4 16 MB, PDF 100 MB. */
export const MEDIA_RULES: Record<MediaFormat, { readonly types: ReadonlyArray<string>; readonly maxBytes: number }> = {
  IMAGE: { types: ["image/jpeg", "image/png"], maxBytes: 5 * MB },
  VIDEO: { types: ["video/mp4"], maxBytes: 16 * MB },
  DOCUMENT: { types: ["application/pdf"], maxBytes: 100 * MB }
}

const TIMEOUT_MS = 10_000

/** Whether an address is one a fetch must never reach: anything but a public address (src/platform/public-address.ts). */
export const isPrivateAddress = (address: string): boolean => !isPublicAddress(address)

export type MediaResult =
  | { readonly kind: "ok"; readonly contentType: string; readonly bytes: number }
  | { readonly kind: "invalid"; readonly problem: string }
  | { readonly kind: "too_large"; readonly maxBytes: number }

/** A lookup that answers only public addresses: the socket connects to what it checked. */
const guardedLookup: LookupFunction = (hostname, options, callback) =>
  dnsLookup(hostname, { all: true }, (error, addresses) => {
    if (error !== null) return callback(error, "", 0)
    const first = addresses[0]
    if (first === undefined || addresses.some((a) => isPrivateAddress(a.address))) {
      const refusal: NodeJS.ErrnoException = new Error(`${hostname} resolves to a private address`)
      refusal.code = "EPRIVATE"
      return callback(refusal, "", 0)
    }
    // Sockets that try several families ask for every address; the others for one.
    return options.all === true ? callback(null, addresses) : callback(null, first.address, first.family)
  })

/**
 * Fetches `url` and answers whether it is media of `format` within its size. `trusted` origins
 * (the sandbox's own) skip the address rule; any other must be `https:` to a public address.
 */
export const checkMedia = (url: string, format: MediaFormat, trusted: ReadonlySet<string>): Effect.Effect<MediaResult> =>
  Effect.callback<MediaResult>((resume, signal) => {
    const parsed = URL.canParse(url) ? new URL(url) : null
    if (parsed === null) return resume(Effect.succeed({ kind: "invalid", problem: "url is not a URL" }))
    const isTrusted = trusted.has(parsed.origin)
    if (!isTrusted && parsed.protocol !== "https:") return resume(Effect.succeed({ kind: "invalid", problem: "url must be https" }))
    if (!isTrusted && isIP(parsed.hostname.replace(/^\[|\]$/g, "")) !== 0 && isPrivateAddress(parsed.hostname.replace(/^\[|\]$/g, ""))) {
      return resume(Effect.succeed({ kind: "invalid", problem: "url points at a private address" }))
    }
    const rule = MEDIA_RULES[format]
    let settled = false
    const finish = (result: MediaResult) => {
      if (settled) return
      settled = true
      resume(Effect.succeed(result))
    }
    const client = parsed.protocol === "https:" ? https : http
    const request = client.get(parsed, {
      signal,
      timeout: TIMEOUT_MS,
      headers: { accept: rule.types.join(", ") },
      ...(isTrusted ? {} : { lookup: guardedLookup })
    }, (response) => {
      const status = response.statusCode ?? 0
      // Redirects are not followed: the media must be at the URL given.
      if (status < 200 || status >= 300) {
        response.resume()
        request.destroy()
        return finish({ kind: "invalid", problem: `url answered HTTP ${status}` })
      }
      const contentType = (response.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase() ?? ""
      if (!rule.types.includes(contentType)) {
        request.destroy()
        return finish({ kind: "invalid", problem: `url serves ${contentType || "no content type"}; ${format} takes ${rule.types.join(" or ")}` })
      }
      const declared = Number(response.headers["content-length"] ?? "")
      if (Number.isFinite(declared) && declared > rule.maxBytes) {
        request.destroy()
        return finish({ kind: "too_large", maxBytes: rule.maxBytes })
      }
      let bytes = 0
      response.on("data", (chunk: Buffer) => {
        bytes += chunk.length
        if (bytes > rule.maxBytes) {
          request.destroy()
          finish({ kind: "too_large", maxBytes: rule.maxBytes })
        }
      })
      response.on("end", () => finish(bytes === 0 ? { kind: "invalid", problem: "url served no bytes" } : { kind: "ok", contentType, bytes }))
      response.on("error", () => finish({ kind: "invalid", problem: "url could not be read" }))
    })
    request.on("timeout", () => {
      request.destroy()
      finish({ kind: "invalid", problem: "url did not answer within 10 seconds" })
    })
    request.on("error", (error: NodeJS.ErrnoException) =>
      finish({ kind: "invalid", problem: error.code === "EPRIVATE" ? "url resolves to a private address" : "url could not be reached" }))
  })
