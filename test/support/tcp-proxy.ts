/**
 * A loopback TCP proxy in front of PostgreSQL that a test can cut and restore, to take the
 * database away from a running service without touching the server other tests use.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net"

export interface TcpProxy {
  readonly port: number
  /** Drops every open connection and refuses new ones. */
  readonly cut: () => void
  readonly restore: () => void
  readonly close: () => Promise<void>
}

export const startTcpProxy = (target: { readonly host: string; readonly port: number }): Promise<TcpProxy> =>
  new Promise((resolve, reject) => {
    let open = true
    const sockets = new Set<Socket>()
    const track = (socket: Socket) => {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
      socket.on("error", () => socket.destroy())
    }
    const server: Server = createServer((client) => {
      track(client)
      if (!open) {
        client.destroy()
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
          open = false
          for (const socket of sockets) socket.destroy()
        },
        restore: () => {
          open = true
        },
        close: () =>
          new Promise<void>((done) => {
            for (const socket of sockets) socket.destroy()
            server.close(() => done())
          })
      })
    })
  })
