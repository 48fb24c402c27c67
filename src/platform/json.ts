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
    // A loop over the sorted keys, not entries filtered, sorted and mapped: it runs on every ingest.
    const record = value as Readonly<Record<string, unknown>>
    const keys = Object.keys(record).sort()
    let text = "{"
    for (const key of keys) {
      const member = record[key]
      if (member === undefined) continue
      text += `${text.length > 1 ? "," : ""}${JSON.stringify(key)}:${canonicalJson(member)}`
    }
    return `${text}}`
  }
  return JSON.stringify(value) ?? "null"
}

/** SHA-256 of UTF-8 text, hex. */
export const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")
