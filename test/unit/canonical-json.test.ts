import { assert, describe, it } from "@effect/vitest"
import { canonicalJson, sha256 } from "../../src/platform/json.ts"

// The first form of canonicalJson: stored request hashes were computed with it, so every later
// form must give the same text, or a repeated request would read as a different one (409).
const firstForm = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(firstForm).join(",")}]`
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${firstForm(v)}`).join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}

describe("canonicalJson", () => {
  it("sorts keys, leaves out undefined members, and gives the text the stored request hashes were made with", () => {
    assert.strictEqual(canonicalJson({ b: 1, a: [undefined, { d: undefined, c: "é" }], z: undefined }), "{\"a\":[null,{\"c\":\"é\"}],\"b\":1}")
    assert.strictEqual(canonicalJson({}), "{}")
    assert.strictEqual(canonicalJson({ only: undefined }), "{}")
    let seed = 11
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed / 2147483648
    }
    const pick = <A>(values: ReadonlyArray<A>): A => values[Math.floor(random() * values.length)]!
    const value = (depth: number): unknown => {
      const roll = random()
      if (depth < 3 && roll < 0.35) {
        return Object.fromEntries(Array.from({ length: Math.floor(random() * 5) }, () => [pick(["a", "B", "b", "é", "a\"", "10", "2", "", "Z"]), value(depth + 1)]))
      }
      if (depth < 3 && roll < 0.5) return Array.from({ length: Math.floor(random() * 3) }, () => value(depth + 1))
      return pick([undefined, null, 0, -1.5, "x", "line\nbreak", true, false, 12345678901234])
    }
    for (let round = 0; round < 2000; round++) {
      const input = value(0)
      assert.strictEqual(canonicalJson(input), firstForm(input), JSON.stringify(input))
    }
    // A request hash of the ingest's shape, pinned: it must not move across releases.
    assert.strictEqual(
      sha256(canonicalJson({ event_name: "purchase", value: "12.5", currency: "EUR", click_ids: { gclid: "g1" }, email: null, crm_contact_id: undefined })),
      sha256("{\"click_ids\":{\"gclid\":\"g1\"},\"currency\":\"EUR\",\"email\":null,\"event_name\":\"purchase\",\"value\":\"12.5\"}")
    )
  })
})
