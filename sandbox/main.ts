/**
 * `npm run sandbox`: the sandbox providers alone, on `SVC_SANDBOX_PORT` (default 8090), for
 * setups where several service runners share one set of simulated providers (point them at it
 * with `SVC_SANDBOX_URL=http://<host>:8090/sandbox`). Reads `SVC_SANDBOX_SECRET`,
 * `SVC_SECRETS_KEY` (world handles, decision 0109), `SVC_BASE_URL` (the service whose
 * `/hooks/<provider>` pushes go to) and `SVC_ADMIN_TOKEN` like the service; with `DATABASE_URL`
 * the profiles' API keys open their worlds' test controls too, else the operator token only.
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Config, Effect, Layer, Option, Redacted } from "effect"
import { HttpRouter } from "effect/http"
import { createServer } from "node:http"
import { AppConfig, DEFAULT_SANDBOX_SECRET, loadSettings } from "../src/platform/config.ts"
import { CredentialStoreLayer } from "../src/accounts/credentials/service.ts"
import { CliDatabaseLayer } from "../src/platform/database.ts"
import { SecretBox } from "../src/platform/secret-box.ts"
import { SandboxRoutes } from "./routes.ts"

const main = Effect.gen(function*() {
  const port = yield* Config.Port("SVC_SANDBOX_PORT").pipe(Config.withDefault(8090))
  const host = yield* Config.String("HOST").pipe(Config.withDefault("0.0.0.0"))
  const secret = yield* Config.Redacted("SVC_SANDBOX_SECRET").pipe(Config.withDefault(Redacted.make(DEFAULT_SANDBOX_SECRET)))
  // With DATABASE_URL the profiles' API keys are checked there, and SVC_SECRETS_KEY (the service's:
  // world handles are keyed by it) is required as it is for the service.
  const settings = yield* loadSettings
  yield* Effect.logInfo(`Sandbox providers on http://${host}:${port}/sandbox/<provider>/`)
  const config = AppConfig.layerWith({ ...settings, providers: { ...settings.providers, sandboxSecret: secret } })
  // API keys are checked against the service's database when there is a shared one.
  const credentials = Option.isSome(settings.databaseUrl)
    ? CredentialStoreLayer.pipe(Layer.provide(CliDatabaseLayer))
    : Layer.empty
  return yield* Layer.launch(
    HttpRouter.serve(SandboxRoutes, { disableLogger: true }).pipe(
      Layer.provide(NodeHttpServer.layer(createServer, { port, host })),
      Layer.provide(Layer.mergeAll(SecretBox.layer, credentials)),
      Layer.provide(config)
    )
  )
})

NodeRuntime.runMain(main)
