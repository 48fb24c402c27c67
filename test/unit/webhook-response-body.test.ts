/** What the webhook attempt log keeps of an endpoint's answer (decision 0134). */
import { assert, describe, it } from "@effect/vitest"
import { MAX_RESPONSE_BODY_LENGTH } from "../../src/webhooks/delivery/repo.ts"
import { responseBodyText } from "../../src/webhooks/delivery/service.ts"

const bytes = (text: string) => new TextEncoder().encode(text)

describe("webhook attempt response body", () => {
  it("empty is null; text is kept as it came", () => {
    assert.isNull(responseBodyText(new Uint8Array(0)))
    assert.strictEqual(responseBodyText(bytes('{"ok":true}')), '{"ok":true}')
  })

  it("at most 1000 characters, counted as the table counts them (code points)", () => {
    assert.strictEqual(MAX_RESPONSE_BODY_LENGTH, 1000)
    const long = "é😀".repeat(800)
    const kept = responseBodyText(bytes(long))!
    assert.strictEqual([...kept].length, 1000)
    assert.isTrue(long.startsWith(kept))
  })

  it("NUL dropped (a text column refuses it); a sequence cut by the byte limit becomes U+FFFD", () => {
    assert.strictEqual(responseBodyText(bytes("a\u0000b")), "ab")
    assert.strictEqual(responseBodyText(bytes("x😀").subarray(0, 3)), "x\uFFFD")
    assert.isNull(responseBodyText(bytes("\u0000")))
  })
})
