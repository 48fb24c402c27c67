import { createHash } from "node:crypto"

/** JSON.parse that answers `undefined` for text that is not JSON (untrusted input). */
export const parseJsonOrUndefined = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** JSON with object keys sorted (undefined members left out), so two equal requests hash equal whatever their key order. */
export const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}

/** SHA-256 of UTF-8 text, hex. */
export const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")
