/**
 * Where each provider answers and which app the service is there: in sandbox mode the simulated
 * providers under `providers.sandboxUrl` with their derived client secrets (docs/sandbox-providers.md);
 * in live mode the real ones from `SVC_PROVIDER_<KIND>_URL`, `_CLIENT_ID` and `_CLIENT_SECRET`.
 * A provider live mode has no settings for is not offered: its routes answer 404.
 */
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"
import { createHmac } from "node:crypto"
import { AppConfig } from "../../platform/config.ts"
import { SecretBox } from "../../platform/secret-box.ts"
import { PROVIDER_KINDS, type ProviderKind } from "./registry.ts"
import { sandboxWorlds, type SandboxWorlds } from "./sandbox-world.ts"

export interface ProviderEndpoint {
  /** No trailing slash: API paths (`/oauth/token`, `/v1/me`) are appended. */
  readonly baseUrl: string
  readonly clientId: string
  readonly clientSecret: Redacted.Redacted<string>
}

/** A sandbox app's client secret: hex HMAC-SHA256 of the provider name under `SVC_SANDBOX_SECRET` (the sandbox derives it alike). */
export const sandboxClientSecret = (sandboxSecret: string, provider: ProviderKind): string =>
  createHmac("sha256", sandboxSecret).update(provider, "utf8").digest("hex")

export const sandboxClientId = (provider: ProviderKind): string => `sandbox-${provider}`

/**
 * The client secret of a merchant's custom app at a sandbox that has them (commerce): hex
 * HMAC-SHA256 of `<provider>:custom:<client id>` under `SVC_SANDBOX_SECRET`. Any client id is a
 * custom app the sandbox knows, so a test registers one with `/api/v1/admin/commerce-apps`
 * without a sandbox call first, and the sandbox and a service on another runner agree without
 * shared state (decision 0066).
 */
export const sandboxCustomAppSecret = (sandboxSecret: string, provider: ProviderKind, clientId: string): string =>
  createHmac("sha256", sandboxSecret).update(`${provider}:custom:${clientId}`, "utf8").digest("hex")

export class ProviderEndpoints extends Context.Service<ProviderEndpoints, {
  readonly offered: (provider: ProviderKind) => boolean
  /** Callers check `offered` first: an unoffered provider's endpoint has an empty `baseUrl` (every call fails unavailable). */
  readonly endpoint: (provider: ProviderKind) => ProviderEndpoint
  /** In sandbox mode, the world handles: consent links name the profile's world, pushes are routed by it (decision 0109). */
  readonly sandboxWorlds: Option.Option<SandboxWorlds>
}>()("svc/ProviderEndpoints") {
  static readonly layer = Layer.effect(ProviderEndpoints)(Effect.gen(function*() {
    const settings = yield* AppConfig
    const box = yield* SecretBox
    const endpoints = new Map<ProviderKind, ProviderEndpoint>()
    if (settings.providers.mode === "sandbox") {
      const root = Redacted.value(settings.providers.sandboxSecret)
      for (const provider of PROVIDER_KINDS) {
        endpoints.set(provider, {
          baseUrl: `${settings.providers.sandboxUrl}/${provider}`,
          clientId: sandboxClientId(provider),
          clientSecret: Redacted.make(sandboxClientSecret(root, provider))
        })
      }
    } else {
      for (const provider of PROVIDER_KINDS) {
        const prefix = `SVC_PROVIDER_${provider.toUpperCase()}`
        const live = yield* Config.option(Config.all({
          baseUrl: Config.URL(`${prefix}_URL`),
          clientId: Config.String(`${prefix}_CLIENT_ID`),
          clientSecret: Config.Redacted(`${prefix}_CLIENT_SECRET`)
        })).pipe(Effect.orDie)
        if (Option.isSome(live)) {
          endpoints.set(provider, {
            baseUrl: live.value.baseUrl.toString().replace(/\/$/, ""),
            clientId: live.value.clientId,
            clientSecret: live.value.clientSecret
          })
        }
      }
    }
    const unoffered: ProviderEndpoint = {
      baseUrl: "",
      clientId: "",
      clientSecret: Redacted.make("")
    }
    return {
      offered: (provider) => endpoints.has(provider),
      endpoint: (provider) => endpoints.get(provider) ?? unoffered,
      sandboxWorlds: settings.providers.mode === "sandbox" ? Option.some(sandboxWorlds(box.keyedHash)) : Option.none()
    }
  })).pipe(Layer.provide(SecretBox.layer))
}
