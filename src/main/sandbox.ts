/**
 * `npm run sandbox`: the sandbox providers alone, on `SVC_SANDBOX_PORT` (default 8090), for
 * setups where several service runners share one set of simulated providers (point them at it
 * with `SVC_SANDBOX_URL=http://<host>:8090/sandbox`). Reads `SVC_SANDBOX_SECRET` like the service.
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Config, Effect, Layer, Redacted } from "effect"
import { HttpRouter } from "effect/http"
import { createServer } from "node:http"
import { AppConfig, DEFAULT_SANDBOX_SECRET, loadSettingsWithoutDatabase } from "../platform/config.ts"
import { SandboxRoutes } from "../providers/sandbox/routes.ts"

const main = Effect.gen(function*() {
  const port = yield* Config.Port("SVC_SANDBOX_PORT").pipe(Config.withDefault(8090))
  const host = yield* Config.String("HOST").pipe(Config.withDefault("0.0.0.0"))
  const secret = yield* Config.Redacted("SVC_SANDBOX_SECRET").pipe(Config.withDefault(Redacted.make(DEFAULT_SANDBOX_SECRET)))
  // No database and nothing sealed here: a shared environment's DATABASE_URL asks for no secrets key.
  const settings = yield* loadSettingsWithoutDatabase
  yield* Effect.logInfo(`Sandbox providers on http://${host}:${port}/sandbox/<provider>/`)
  return yield* Layer.launch(
    HttpRouter.serve(SandboxRoutes, { disableLogger: true }).pipe(
      Layer.provide(NodeHttpServer.layer(createServer, { port, host })),
      Layer.provide(AppConfig.layerWith({ ...settings, providers: { ...settings.providers, sandboxSecret: secret } }))
    )
  )
})

NodeRuntime.runMain(main)
