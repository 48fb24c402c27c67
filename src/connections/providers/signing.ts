/**
 * How each provider signs the callbacks it pushes (docs/sandbox-providers.md): HMAC-SHA256 over
 * the raw body under the app's client secret, in the provider's own header. The sandbox signs
 * with `signCallback`; `/hooks/{provider}` checks with `verifyCallback`.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import type { ProviderKind } from "./registry.ts"

type Scheme = "hub" | "shop" | "timestamped"

const schemeOf = (provider: ProviderKind): Scheme => {
  switch (provider) {
    case "adplatform":
    case "chat_app_a":
    case "social_dm":
    case "page_messenger":
      return "hub"
    case "commerce":
      return "shop"
    default:
      return "timestamped"
  }
}

/** A timestamped signature older or newer than this is refused (replays of captured requests). */
export const SIGNATURE_TOLERANCE_SECONDS = 300

const hmac = (secret: string, payload: string) => createHmac("sha256", secret).update(payload, "utf8")

/** The headers to send with `rawBody`; `nowSeconds` only matters for the timestamped scheme. */
export const signCallback = (
  provider: ProviderKind,
  secret: string,
  rawBody: string,
  nowSeconds: number = Math.floor(Date.now() / 1000)
): Record<string, string> => {
  switch (schemeOf(provider)) {
    case "hub":
      return { "x-hub-signature-256": `sha256=${hmac(secret, rawBody).digest("hex")}` }
    case "shop":
      return { "x-shop-hmac-sha256": hmac(secret, rawBody).digest("base64") }
    case "timestamped": {
      const timestamp = String(nowSeconds)
      return {
        "x-signature-256": `sha256=${hmac(secret, `${timestamp}.${rawBody}`).digest("hex")}`,
        "x-signature-timestamp": timestamp
      }
    }
  }
}

const sameText = (a: string, b: string) => {
  const left = Buffer.from(a, "utf8")
  const right = Buffer.from(b, "utf8")
  return left.length === right.length && timingSafeEqual(left, right)
}

/** Whether `rawBody` carries a good signature; header names lower-case, as Node gives them. */
export const verifyCallback = (
  provider: ProviderKind,
  secret: string,
  headers: Readonly<Record<string, string | undefined>>,
  rawBody: string,
  nowSeconds: number = Math.floor(Date.now() / 1000)
): boolean => {
  switch (schemeOf(provider)) {
    case "hub": {
      const given = headers["x-hub-signature-256"]
      return given !== undefined && sameText(given, `sha256=${hmac(secret, rawBody).digest("hex")}`)
    }
    case "shop": {
      const given = headers["x-shop-hmac-sha256"]
      return given !== undefined && sameText(given, hmac(secret, rawBody).digest("base64"))
    }
    case "timestamped": {
      const given = headers["x-signature-256"]
      const timestamp = headers["x-signature-timestamp"]
      if (given === undefined || timestamp === undefined || !/^\d{1,12}$/.test(timestamp)) return false
      if (Math.abs(nowSeconds - Number(timestamp)) > SIGNATURE_TOLERANCE_SECONDS) return false
      return sameText(given, `sha256=${hmac(secret, `${timestamp}.${rawBody}`).digest("hex")}`)
    }
  }
}
