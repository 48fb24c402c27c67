/**
 * Where providers answer (sandbox and live mode, "not offered" when live mode has no settings
 * for one) and the callback signatures each provider kind uses.
 */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Redacted } from "effect"
import { createHmac } from "node:crypto"
import { AppConfig } from "../../src/platform/config.ts"
import { ProviderEndpoints, sandboxClientSecret } from "../../src/connections/providers/endpoints.ts"
import { signCallback, verifyCallback } from "../../src/connections/providers/signing.ts"
import { testSettings } from "../support/app.ts"

const endpointsWith = (mode: "sandbox" | "live", env: Record<string, string> = {}) =>
  Effect.gen(function*() {
    return yield* ProviderEndpoints
  }).pipe(
    Effect.provide(ProviderEndpoints.layer),
    Effect.provideService(AppConfig, testSettings({
      providers: { ...testSettings().providers, mode, sandboxUrl: "http://127.0.0.1:9/sandbox" }
    })),
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env))
  )

describe("provider endpoints", () => {
  it.effect("sandbox mode: every kind offered under sandboxUrl, client secret = hex HMAC-SHA256(sandbox secret, provider)", () =>
    Effect.gen(function*() {
      const endpoints = yield* endpointsWith("sandbox")
      assert.isTrue(endpoints.offered("crm"))
      const adplatform = endpoints.endpoint("adplatform")
      assert.strictEqual(adplatform.baseUrl, "http://127.0.0.1:9/sandbox/adplatform")
      assert.strictEqual(adplatform.clientId, "sandbox-adplatform")
      const expected = createHmac("sha256", "svc-sandbox-secret").update("adplatform").digest("hex")
      assert.strictEqual(Redacted.value(adplatform.clientSecret), expected)
      assert.strictEqual(sandboxClientSecret("svc-sandbox-secret", "adplatform"), expected)
    }))

  it.effect("live mode: only the kinds with SVC_PROVIDER_<KIND>_URL, _CLIENT_ID and _CLIENT_SECRET are offered", () =>
    Effect.gen(function*() {
      const endpoints = yield* endpointsWith("live", {
        SVC_PROVIDER_ADPLATFORM_URL: "https://graph.example/",
        SVC_PROVIDER_ADPLATFORM_CLIENT_ID: "app-1",
        SVC_PROVIDER_ADPLATFORM_CLIENT_SECRET: "s3cret",
        SVC_PROVIDER_CRM_URL: "https://crm.example"
      })
      assert.isTrue(endpoints.offered("adplatform"))
      assert.isFalse(endpoints.offered("crm"))
      assert.isFalse(endpoints.offered("email"))
      assert.strictEqual(endpoints.endpoint("adplatform").baseUrl, "https://graph.example")
      assert.strictEqual(endpoints.endpoint("adplatform").clientId, "app-1")
    }))
})

describe("callback signatures", () => {
  const body = JSON.stringify({ object: "page", entry: [] })
  it("hub (X-Hub-Signature-256), shop (base64) and timestamped (X-Signature-256 over <ts>.<body>) verify; tampering fails", () => {
    for (const provider of ["adplatform", "commerce", "crm"] as const) {
      const headers = signCallback(provider, "secret", body, 1_800_000_000)
      assert.isTrue(verifyCallback(provider, "secret", headers, body, 1_800_000_000), provider)
      assert.isFalse(verifyCallback(provider, "other", headers, body, 1_800_000_000), provider)
      assert.isFalse(verifyCallback(provider, "secret", headers, `${body} `, 1_800_000_000), provider)
      assert.isFalse(verifyCallback(provider, "secret", {}, body, 1_800_000_000), provider)
    }
    assert.match(signCallback("adplatform", "secret", body)["x-hub-signature-256"] ?? "", /^sha256=[0-9a-f]{64}$/)
  })

  it("a timestamped signature outside five minutes is refused (a replay)", () => {
    const headers = signCallback("email", "secret", body, 1_800_000_000)
    assert.isTrue(verifyCallback("email", "secret", headers, body, 1_800_000_000 + 299))
    assert.isFalse(verifyCallback("email", "secret", headers, body, 1_800_000_000 + 301))
  })
})
