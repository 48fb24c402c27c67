/** Node entry point: the service on a Node HTTP server (../platform/node-server.ts). */
import { NodeHttpServer } from "@effect/platform-node"
import { Runtime } from "effect"
import { serveNode } from "../platform/node-server.ts"
import { serviceMain } from "./launch.ts"

const main = serviceMain({
  platform: NodeHttpServer.layerHttpServices,
  serve: (httpEffect, settings) =>
    serveNode(httpEffect, {
      port: settings.port,
      host: settings.host,
      shutdownGraceMs: settings.shutdownGraceMs,
      keepAliveTimeoutMs: settings.keepAliveTimeoutMs,
      // Above the keep-alive timeout: a request head started just before the idle timer fires
      // is not cut by a shorter header timer.
      headersTimeoutMs: settings.keepAliveTimeoutMs + 5_000,
      docsBaseUrl: settings.baseUrl
    }),
  listenSignal: (signal, handler) => {
    process.on(signal, handler)
    return () => process.off(signal, handler)
  }
})

/** Like NodeRuntime.runMain, minus its signal handlers: stop signals drain (launch.ts), and the exit code follows the result. */
const runMain = Runtime.makeRunMain(({ fiber, teardown }) => {
  fiber.addObserver((exit) => teardown(exit, (code) => process.exit(code)))
})

runMain(main)
