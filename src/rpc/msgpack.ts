/**
 * MessagePack `RpcSerialization` for Effect 4 RPC (Effect 4.1 ships none; decision 0082).
 *
 * The envelope (`RpcMessage` requests, chunks, exits) is packed with msgpackr as plain
 * MessagePack (`useRecords: false`: no msgpackr-only record extension, so any MessagePack peer
 * can read it). The payload holes are filled by the JSON codec of each schema, exactly as
 * the JSON endpoints do, so a call answers the same value on either serialisation: a `Date`
 * travels as its ISO string, a `bigint` as its decimal string, a `Uint8Array` as base64, as
 * their schemas encode them.
 *
 * Framing: MessagePack values are self-delimiting, so the decoder accepts concatenated
 * messages and keeps an incomplete tail for the next chunk (WebSocket frames and HTTP bodies
 * may split or join messages).
 */
import { Data, Layer } from "effect"
import { RpcSerialization } from "effect/rpc"
import { Packr, Unpackr } from "msgpackr"

/** An incomplete tail above this is refused rather than buffered without end. */
const maxBufferSize = 16 * 1024 * 1024

export class MsgPackDecodeError extends Data.TaggedError("MsgPackDecodeError")<{ readonly cause: unknown }> {}

const isIncomplete = (error: unknown): error is { readonly incomplete: true; readonly lastPosition?: number; readonly values?: Array<unknown> } =>
  typeof error === "object" && error !== null && "incomplete" in error && error.incomplete === true

const options = { useRecords: false, mapsAsObjects: true, moreTypes: false } as const

const textEncoder = new TextEncoder()

export const msgpack: RpcSerialization.RpcSerialization["Service"] = RpcSerialization.RpcSerialization.of({
  contentType: "application/msgpack",
  includesFraming: true,
  // the JSON endpoints' codec: same encoded values on both serialisations
  codecFor: RpcSerialization.json.codecFor,
  makeUnsafe: () => {
    const packr = new Packr(options)
    const unpackr = new Unpackr(options)
    let incomplete: Uint8Array | undefined
    return {
      decode: (data) => {
        let bytes = typeof data === "string" ? textEncoder.encode(data) : data
        if (incomplete !== undefined) {
          const joined = new Uint8Array(incomplete.length + bytes.length)
          joined.set(incomplete)
          joined.set(bytes, incomplete.length)
          bytes = joined
          incomplete = undefined
        }
        if (bytes.length === 0) return []
        const values: Array<unknown> = []
        let end = 0
        const result = unpackMultipleSafe(unpackr, bytes, (value, _start, stop) => {
          values.push(value)
          end = stop ?? bytes.length
        })
        if (result !== undefined) {
          if (!isIncomplete(result)) throw new MsgPackDecodeError({ cause: result })
          const tail = bytes.subarray(end)
          if (tail.length > maxBufferSize) throw new RpcSerialization.MaxBufferSizeExceeded({ maxBufferSize })
          // copied: the transport may reuse the chunk's memory
          incomplete = tail.slice()
        }
        return values
      },
      encode: (response) => {
        if (!Array.isArray(response)) return packr.pack(response)
        if (response.length === 0) return undefined
        const parts = response.map((message) => packr.pack(message))
        const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0))
        let offset = 0
        for (const part of parts) {
          out.set(part, offset)
          offset += part.length
        }
        return out
      }
    }
  }
})

/** msgpackr throws on an incomplete tail; this returns the thrown value instead (no try in Effect code). */
const unpackMultipleSafe = (
  unpackr: Unpackr,
  bytes: Uint8Array,
  each: (value: unknown, start?: number, end?: number) => void
): unknown => {
  try {
    unpackr.unpackMultiple(bytes, each)
    return undefined
  } catch (error) {
    return error === undefined ? new Error("msgpack decode failed") : error
  }
}

export const layerMsgPack: Layer.Layer<RpcSerialization.RpcSerialization> = Layer.succeed(RpcSerialization.RpcSerialization)(msgpack)
