/** The MessagePack RpcSerialization (src/rpc/msgpack.ts): framing across chunks, and the payload types. */
import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { RpcSerialization } from "effect/rpc"
import { pack } from "msgpackr"
import { msgpack, MsgPackDecodeError } from "../../src/rpc/msgpack.ts"

const request = (id: string, payload: unknown) => ({ _tag: "Request", id, tag: "EventsIngest", payload, headers: [["authorization", "Bearer x"]] })

const bytesOf = (encoded: Uint8Array | string | undefined): Uint8Array => {
  assert.instanceOf(encoded, Uint8Array)
  return encoded instanceof Uint8Array ? encoded : new Uint8Array()
}

describe("MessagePack RpcSerialization", () => {
  it("declares itself framed, with its content type", () => {
    assert.strictEqual(msgpack.contentType, "application/msgpack")
    assert.isTrue(msgpack.includesFraming)
  })

  it("decodes concatenated messages, and a message split at every byte across chunks", () => {
    const parser = msgpack.makeUnsafe()
    const messages = [request("1", { a: 1 }), { _tag: "Ping" }, request("2", { text: "é€😀", list: [1, 2.5, null, true] })]
    const joined = bytesOf(parser.encode(messages))
    assert.deepStrictEqual(msgpack.makeUnsafe().decode(joined), messages)
    for (let cut = 1; cut < joined.length; cut++) {
      const reader = msgpack.makeUnsafe()
      const head = reader.decode(joined.subarray(0, cut))
      const tail = reader.decode(joined.subarray(cut))
      assert.deepStrictEqual([...head, ...tail], messages, `cut at ${cut}`)
    }
    // byte by byte
    const reader = msgpack.makeUnsafe()
    const seen: Array<unknown> = []
    for (let i = 0; i < joined.length; i++) seen.push(...reader.decode(joined.subarray(i, i + 1)))
    assert.deepStrictEqual(seen, messages)
  })

  it("encodes one message alone, and nothing for an empty batch", () => {
    const parser = msgpack.makeUnsafe()
    assert.isUndefined(parser.encode([]))
    assert.deepStrictEqual(msgpack.makeUnsafe().decode(bytesOf(parser.encode({ _tag: "Pong" }))), [{ _tag: "Pong" }])
  })

  it("carries Date, bigint and Uint8Array payloads as their schemas encode them, and back", () => {
    const Payload = Schema.Struct({ at: Schema.Date, n: Schema.BigInt, bytes: Schema.Uint8Array, amount: Schema.Number })
    const codec = msgpack.codecFor(Payload)
    const value = { at: new Date("2026-03-01T10:00:00.123Z"), n: 2n ** 70n, bytes: new Uint8Array([0, 1, 254, 255]), amount: -0.5 }
    const encoded = Schema.encodeUnknownSync(codec)(value)
    const parser = msgpack.makeUnsafe()
    const [back] = msgpack.makeUnsafe().decode(bytesOf(parser.encode(request("1", encoded))))
    const payload = typeof back === "object" && back !== null && "payload" in back ? back.payload : undefined
    const decoded = Schema.decodeUnknownSync(codec)(payload)
    assert.strictEqual(decoded.at.toISOString(), value.at.toISOString())
    assert.strictEqual(decoded.n, value.n)
    assert.deepStrictEqual([...decoded.bytes], [...value.bytes])
    assert.strictEqual(decoded.amount, -0.5)
    // the same hole encoding as the JSON serialisation: the same answers on both endpoints
    assert.deepStrictEqual(encoded, Schema.encodeUnknownSync(RpcSerialization.json.codecFor(Payload))(value))
  })

  it("refuses bytes that are not MessagePack with a decode error", () => {
    const parser = msgpack.makeUnsafe()
    // fixext 1 of an extension type nobody registered
    assert.throws(() => parser.decode(new Uint8Array([0xd4, 0x05, 0x00])), MsgPackDecodeError)
    assert.deepStrictEqual(msgpack.makeUnsafe().decode(pack({ ok: true })), [{ ok: true }])
  })
})
