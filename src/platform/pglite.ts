import type { PGlite } from "@electric-sql/pglite"
import { Duplex } from "node:stream"

const SSL_REQUEST_CODE = 80877103
const CANCEL_REQUEST_CODE = 80877102

/**
 * A Duplex that speaks the PostgreSQL wire protocol to an in-process PGlite,
 * so `@effect/sql-pg` can use it exactly like a socket to a real server.
 *
 * PGlite runs one session, so the bridge frames the client's byte stream into whole
 * protocol messages and hands them to PGlite one at a time, in order.
 */
export const pgliteStream = (db: PGlite): Duplex => {
  let buffered: Buffer = Buffer.alloc(0)
  let chain: Promise<void> = Promise.resolve()

  const nextMessageLength = (buf: Buffer): number | undefined => {
    // Start-up packets (startup, SSLRequest, CancelRequest) carry no type byte: they open
    // with an int32 length, whose first byte is 0. Every other message opens with a letter.
    if (buf.length > 0 && buf[0] === 0) {
      if (buf.length < 8) return undefined
      const length = buf.readInt32BE(0)
      return buf.length >= length ? length : undefined
    }
    if (buf.length < 5) return undefined
    const length = 1 + buf.readInt32BE(1)
    return buf.length >= length ? length : undefined
  }

  const duplex: Duplex = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, callback) {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk])
      const messages: Array<Buffer> = []
      for (let length = nextMessageLength(buffered); length !== undefined; length = nextMessageLength(buffered)) {
        messages.push(buffered.subarray(0, length))
        buffered = buffered.subarray(length)
      }
      chain = chain.then(async () => {
        for (const message of messages) {
          if (message.length === 8 && message.readInt32BE(4) === SSL_REQUEST_CODE) {
            duplex.push(Buffer.from("N"))
            continue
          }
          if (message.length >= 8 && message.readInt32BE(4) === CANCEL_REQUEST_CODE) continue
          await db.execProtocolRawStream(new Uint8Array(message), {
            onRawData: (data) => {
              if (data.length > 0) duplex.push(Buffer.from(data))
            }
          })
        }
      }).catch((error: unknown) => {
        duplex.destroy(error instanceof Error ? error : new Error(String(error)))
      })
      callback()
    },
    final(callback) {
      chain.then(() => {
        duplex.push(null)
        callback()
      }, callback)
    }
  })
  // PgConnection treats the stream like a socket.
  return Object.assign(duplex, { setKeepAlive: () => duplex, setNoDelay: () => duplex })
}
