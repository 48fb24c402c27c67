/**
 * The sandboxes on an HttpRouter: every method under `/sandbox/*`, outside the HttpApi (they
 * stand in for other companies' servers, so they are not in the service's OpenAPI document).
 * Here the sandbox meets the service (decision 0109): which credential opens a world's test
 * controls, how world handles are keyed, and where pushes may go.
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { FetchHttpClient, HttpClient, type HttpServerRequest, HttpRouter } from "effect/http"
import { CredentialPrefix } from "../src/kernel/credentials/tokens.ts"
import { CredentialStore } from "../src/kernel/principal.ts"
import { AppConfig, type AppSettings } from "../src/platform/config.ts"
import { SecretBox } from "../src/platform/secret-box.ts"
import { secretMatches } from "../src/platform/secrets.ts"
import type { ProviderKind } from "../src/connections/providers/registry.ts"
import { isProfileId, sandboxWorlds } from "../src/connections/providers/sandbox-world.ts"
import { type ControlCaller, makeSandboxes } from "./core.ts"
import { SANDBOX_KINDS } from "./registry.ts"

const refused = (status: number, code: string, message: string): ControlCaller => ({ _tag: "Refused", status, code, message })
const ANONYMOUS = refused(
  401,
  "unauthorized",
  "Test controls need the profile's API key (Authorization: Bearer svc_live_...) or the operator token with ?profile_id=."
)

/**
 * Whether a push may go to `url`: this service's own `/hooks/<provider>`, or any path on an
 * origin the operator listed in `SVC_SANDBOX_CALLBACK_ORIGINS` (an entry without a port opens
 * every port of that scheme and host).
 */
export const callbackAllowedBy = (settings: AppSettings) => (provider: ProviderKind, url: string): boolean => {
  if (!URL.canParse(url)) return false
  const target = new URL(url)
  if (target.username !== "" || target.password !== "") return false
  const own = new URL(settings.baseUrl)
  if (target.origin === own.origin && target.pathname === `${own.pathname.replace(/\/$/, "")}/hooks/${provider}`) return true
  return settings.providers.sandboxCallbackOrigins.some((entry) => {
    const opened = new URL(entry)
    return opened.port === "" && !/:\d+$/.test(entry)
      ? opened.protocol === target.protocol && opened.hostname === target.hostname
      : opened.origin === target.origin
  })
}

export const SandboxRoutes = Layer.unwrap(Effect.gen(function*() {
  const settings = yield* AppConfig
  const client = yield* HttpClient.HttpClient
  const box = yield* SecretBox
  // Absent where the sandboxes are served alone without a database: the operator token only.
  const store = yield* Effect.serviceOption(CredentialStore)

  const controlCaller = (request: HttpServerRequest.HttpServerRequest, url: URL): Effect.Effect<ControlCaller> => {
    const header = request.headers["authorization"] ?? ""
    const token = header.toLowerCase().startsWith("bearer ") ? header.slice(7).trim() : ""
    const named = url.searchParams.get("profile_id")
    if (token === "") return Effect.succeed(ANONYMOUS)
    if (token.startsWith(CredentialPrefix.apiKey)) {
      if (Option.isNone(store)) {
        return Effect.succeed(refused(401, "unauthorized", "These sandboxes are served without a database: use the operator token with ?profile_id=."))
      }
      return store.value.bearer(Redacted.make(token)).pipe(
        Effect.map((found): ControlCaller => {
          if (Option.isNone(found) || found.value.kind !== "api_key") return ANONYMOUS
          // A key reaches its own profile's world only; naming another is refused, not redirected.
          if (named !== null && named !== found.value.profileId) {
            return refused(403, "forbidden", "An API key opens its own profile's sandbox world only.")
          }
          return { _tag: "World", profileId: found.value.profileId }
        }),
        Effect.catch(() => Effect.succeed(refused(503, "unavailable", "The credential could not be checked now; try again.")))
      )
    }
    if (Option.isSome(settings.adminToken) && secretMatches(token, settings.adminToken.value)) {
      if (named === null || !isProfileId(named)) {
        return Effect.succeed(refused(400, "invalid_parameter", "With the operator token, ?profile_id= names the profile whose world to act on."))
      }
      return Effect.succeed({ _tag: "World", profileId: named })
    }
    return Effect.succeed(ANONYMOUS)
  }

  const sandboxes = makeSandboxes({
    secret: Redacted.value(settings.providers.sandboxSecret),
    kinds: SANDBOX_KINDS,
    worlds: sandboxWorlds(box.keyedHash),
    controlCaller,
    callbackAllowed: callbackAllowedBy(settings)
  })
  return HttpRouter.add("*", "/sandbox/*", (request) =>
    sandboxes.handle(request).pipe(Effect.provideService(HttpClient.HttpClient, client)))
})).pipe(Layer.provide(FetchHttpClient.layer))

/** The sandboxes when this process serves them (sandbox mode without `SVC_SANDBOX_URL`), else nothing. */
export const OptionalSandboxRoutes = Layer.unwrap(
  AppConfig.useSync((settings) => settings.providers.servesSandbox ? SandboxRoutes : Layer.empty)
)
