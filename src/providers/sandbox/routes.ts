/**
 * The sandboxes on an HttpRouter: every method under `/sandbox/*`, outside the HttpApi (they
 * stand in for other companies' servers, so they are not in the service's OpenAPI document).
 */
import { Effect, Layer, Redacted } from "effect"
import { FetchHttpClient, HttpClient, HttpRouter } from "effect/http"
import { AppConfig } from "../../platform/config.ts"
import { makeSandboxes } from "./core.ts"
import { SANDBOX_KINDS } from "./registry.ts"

export const SandboxRoutes = Layer.unwrap(Effect.gen(function*() {
  const settings = yield* AppConfig
  const client = yield* HttpClient.HttpClient
  const sandboxes = makeSandboxes({ secret: Redacted.value(settings.providers.sandboxSecret), kinds: SANDBOX_KINDS })
  return HttpRouter.add("*", "/sandbox/*", (request) =>
    sandboxes.handle(request).pipe(Effect.provideService(HttpClient.HttpClient, client)))
})).pipe(Layer.provide(FetchHttpClient.layer))

/** The sandboxes when this process serves them (sandbox mode without `SVC_SANDBOX_URL`), else nothing. */
export const SandboxRoutesIfServed = Layer.unwrap(
  AppConfig.useSync((settings) => settings.providers.servesSandbox ? SandboxRoutes : Layer.empty)
)
