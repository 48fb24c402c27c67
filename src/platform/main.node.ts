/** Node entry point: merges the layers and launches. */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { createServer } from "node:http"
import { HttpApp } from "../http/app.ts"
import { AppConfig } from "./config.ts"
import { CoreLive } from "./services.ts"
import { settingsOrExit } from "./startup.ts"
import { LoggingLive } from "./logging.ts"
import { TelemetryLive } from "./telemetry.ts"

const main = Effect.gen(function*() {
  const settings = yield* settingsOrExit
  const server = HttpRouter.serve(HttpApp, { disableLogger: true }).pipe(
    Layer.provide(CoreLive),
    Layer.provide(NodeHttpServer.layer(createServer, { port: settings.port, host: settings.host })),
    Layer.provide([TelemetryLive, LoggingLive]),
    Layer.provide(AppConfig.layerWith(settings))
  )
  return yield* Layer.launch(server)
})

NodeRuntime.runMain(main)
