import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { HttpServerResponse } from "effect/http"
import { PublishedDocument } from "../http/published-document.ts"
import { VERSION } from "../platform/version.ts"
import { Health } from "./service.ts"
import { groupApi } from "../http/group-api.ts"
import { OpsApi } from "./api.ts"

const startedAt = Date.now()

export const OpsHandlers = HttpApiBuilder.group(groupApi(OpsApi), "ops", (handlers) =>
  Effect.gen(function*() {
    const health = yield* Health
    const document = yield* PublishedDocument
    return handlers.handleAll({
      healthz: () => Effect.succeed({ status: "ok" as const }),
      readyz: () =>
        Effect.map(health.ready, (report) => ({
          status: "ready" as const,
          database: { mode: report.mode, reachable: true },
          migrations: report.migrations
        })),
      openapi: () => Effect.succeed(HttpServerResponse.text(document.json(), { contentType: "application/json" })),
      status: () =>
        Effect.map(health.readiness, (report) => ({
          data: {
            version: VERSION,
            runtime: runtimeName(),
            uptime_seconds: Math.floor((Date.now() - startedAt) / 1000),
            database: { mode: report.mode, location: report.location, reachable: true, migrations: report.migrations }
          }
        }))
    })
  })).pipe(Layer.provide(Health.layer))

const runtimeName = () =>
  "Deno" in globalThis ? `deno` : `node ${process.versions.node}`
