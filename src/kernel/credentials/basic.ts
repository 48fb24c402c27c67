import { isStorableText } from "../../../schema/common.ts"

/**
 * An OAuth client's id and secret from `Authorization: Basic <base64>` (the value after
 * `Basic`): RFC 6749 section 2.3.1 form-encodes each half before joining them with `:`.
 * Undefined for anything malformed, a bad percent-escape or a NUL included, so every caller
 * answers it as a missing credential.
 */
export const parseBasicCredentials = (
  encoded: string
): { readonly clientId: string; readonly secret: string } | undefined => {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return undefined
  const decoded = Buffer.from(encoded, "base64").toString("utf8")
  const colon = decoded.indexOf(":")
  if (colon <= 0) return undefined
  const clientId = formDecode(decoded.slice(0, colon))
  const secret = formDecode(decoded.slice(colon + 1))
  if (clientId === undefined || secret === undefined) return undefined
  return isStorableText(clientId) && isStorableText(secret) ? { clientId, secret } : undefined
}

/** RFC 6749 appendix B: `+` is a space, then percent-decoding; undefined for a malformed escape. */
export const formDecode = (value: string): string | undefined => {
  try {
    return decodeURIComponent(value.replaceAll("+", " "))
  } catch {
    return undefined
  }
}
