/**
 * One runner of the two-runner test, as its own OS process: settings from the environment
 * (`PORT`, `SVC_CLUSTER_MODE=socket`, `SVC_RUNNER_PORT`, `DATABASE_URL`, `SVC_RPC_TOKEN`, ...),
 * database + migrations, the socket cluster and `/rpc` on an HTTP server on `PORT`.
 */
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { AppConfig } from "../../../src/platform/config.ts"
import { serverLayer } from "./app.ts"

const main = Layer.unwrap(
  AppConfig.useSync((settings) => serverLayer({ host: settings.host, port: settings.port }))
).pipe(
  Layer.provide(AppConfig.layer),
  Layer.launch,
  Effect.tapCause((cause) => Effect.logError("runner failed", cause))
)

NodeRuntime.runMain(main)
