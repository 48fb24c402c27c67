/**
 * A loopback TCP proxy in front of PostgreSQL that a test can cut and restore, to take the
 * database away from a running service without touching the server other tests use. It can
 * also play a server that is replaying its log after a restart: every new connection is
 * answered, after its startup message, with the FATAL ErrorResponse SQLSTATE 57P03 ("the
 * database system is starting up") that PostgreSQL sends in that window.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net"

export interface TcpProxy {
  readonly port: number
  /** Drops every open connection and refuses new ones. */
  readonly cut: () => void
  /** Drops every open connection and answers new ones with SQLSTATE 57P03, as a restarting server does. */
  readonly startingUp: () => void
  /** Back to forwarding new connections. */
  readonly restore: () => void
  /** Connections answered 57P03 so far. */
  readonly startingUpAnswers: () => number
  readonly close: () => Promise<void>
}

/** SSLRequest's code in place of a protocol version: answered 'N' (no TLS), then the startup message follows. */
const SSL_REQUEST = 80877103
const GSS_REQUEST = 80877104

/** A protocol ErrorResponse ('E'): fields S, V, C, M, each a NUL-terminated string, then a final NUL. */
export const errorResponse = (fields: { readonly severity: string; readonly code: string; readonly message: string }) => {
  const body = Buffer.concat([
    ...[["S", fields.severity], ["V", fields.severity], ["C", fields.code], ["M", fields.message]].map(([tag, value]) =>
      Buffer.from(`${tag}${value}\0`, "utf8")
    ),
    Buffer.from([0])
  ])
  const header = Buffer.alloc(5)
  header.write("E", 0, "ascii")
  header.writeInt32BE(body.length + 4, 1)
  return Buffer.concat([header, body])
}

const STARTING_UP = errorResponse({ severity: "FATAL", code: "57P03", message: "the database system is starting up" })

/** Reads the client's (untyped, length-prefixed) startup packets and answers the startup message with 57P03. */
const answerStartingUp = (client: Socket, counted: () => void) => {
  let buffered = Buffer.alloc(0)
  client.on("data", (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk])
    while (buffered.length >= 8) {
      const length = buffered.readInt32BE(0)
      if (buffered.length < length) return
      const code = buffered.readInt32BE(4)
      buffered = buffered.subarray(length)
      if (code === SSL_REQUEST || code === GSS_REQUEST) {
        client.write("N")
        continue
      }
      counted()
      client.end(STARTING_UP)
      return
    }
  })
}

export const startTcpProxy = (target: { readonly host: string; readonly port: number }): Promise<TcpProxy> =>
  new Promise((resolve, reject) => {
    let mode: "open" | "cut" | "starting-up" = "open"
    let answered = 0
    const sockets = new Set<Socket>()
    const track = (socket: Socket) => {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
      socket.on("error", () => socket.destroy())
    }
    const dropAll = () => {
      for (const socket of sockets) socket.destroy()
    }
    const server: Server = createServer((client) => {
      track(client)
      if (mode === "cut") {
        client.destroy()
        return
      }
      if (mode === "starting-up") {
        answerStartingUp(client, () => answered++)
        return
      }
      const upstream = createConnection(target)
      track(upstream)
      client.pipe(upstream)
      upstream.pipe(client)
      client.on("close", () => upstream.destroy())
      upstream.on("close", () => client.destroy())
    })
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      if (address === null || typeof address === "string") return reject(new Error("no port"))
      resolve({
        port: address.port,
        cut: () => {
          mode = "cut"
          dropAll()
        },
        startingUp: () => {
          mode = "starting-up"
          dropAll()
        },
        restore: () => {
          mode = "open"
        },
        startingUpAnswers: () => answered,
        close: () =>
          new Promise<void>((done) => {
            dropAll()
            server.close(() => done())
          })
      })
    })
  })
