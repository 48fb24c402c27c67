/**
 * Multi-runner setups: the sandboxes served alone (as `npm run sandbox` serves them) and the
 * service pointed at them by `SVC_SANDBOX_URL`, so it serves no `/sandbox/` of its own.
 */
import { assert, layer } from "@effect/vitest"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpRouter } from "effect/http"
import { createServer } from "node:http"
import { AppConfig } from "../../src/platform/config.ts"
import { SecretBox } from "../../src/platform/secret-box.ts"
import { ProviderOAuthLayer } from "../../src/connections/providers/oauth/live.ts"
import { ProviderOAuth } from "../../src/connections/providers/oauth/port.ts"
import { SandboxRoutes } from "../../sandbox/routes.ts"
import { call, serveApp, testSettings } from "../support/app.ts"
import { driveConsent, freePort, redirectParams } from "../support/providers.ts"
import { asOperator, keyAuth } from "../support/sandbox-world.ts"

const StandaloneSetup = Layer.unwrap(Effect.gen(function*() {
  const port = yield* freePort
  const settings = testSettings({
    providers: { ...testSettings().providers, servesSandbox: false, sandboxUrl: `http://127.0.0.1:${port}/sandbox` }
  })
  const sandboxes = HttpRouter.serve(SandboxRoutes, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provide(NodeHttpServer.layer(createServer, { port, host: "127.0.0.1" })),
    Layer.provide(SecretBox.layer),
    Layer.provide(AppConfig.layerWith(settings))
  )
  return Layer.merge(serveApp(settings), sandboxes)
}))

layer(StandaloneSetup, { timeout: "60 seconds", excludeTestServices: true })("sandboxes served alone", (it) => {
  it.effect("the service reaches them at SVC_SANDBOX_URL and serves no /sandbox/ itself", () =>
    Effect.gen(function*() {
      const settings = yield* AppConfig
      assert.isFalse(settings.providers.servesSandbox)
      assert.strictEqual((yield* call("/sandbox/adplatform/_state")).status, 404)
      const oauth = yield* ProviderOAuth
      const redirectUri = "https://app.example/callback"
      const world = crypto.randomUUID()
      const startUrl = yield* oauth.authorizeUrl("adplatform", { redirectUri, state: "alone", profileId: world })
      assert.isTrue(startUrl.startsWith(settings.providers.sandboxUrl))
      const consent = yield* driveConsent(startUrl)
      const { code } = redirectParams(consent.location)
      const tokens = yield* oauth.exchangeCode("adplatform", { code: code ?? "", redirectUri })
      const me = yield* oauth.identify("adplatform", tokens.accessToken)
      assert.strictEqual(me.accounts[0]?.id, "act_1001")
      // Served alone, without a database: test controls open to the operator token only (decision 0109).
      const control = (path: string, headers: Record<string, string> = {}) =>
        Effect.promise(() => fetch(`${settings.providers.sandboxUrl}/adplatform${path}`, { headers }).then((r) => r.status))
      assert.strictEqual(yield* control("/_state"), 401)
      assert.strictEqual(yield* control("/_state", keyAuth("svc_live_not_a_key")), 401)
      const operator = asOperator("/_state", world)
      assert.strictEqual(yield* control(operator.path, operator.headers), 200)
    }).pipe(Effect.provide(ProviderOAuthLayer)))
})
