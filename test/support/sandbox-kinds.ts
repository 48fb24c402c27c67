/**
 * For the sandbox kinds' tests: a grant on a sandbox provider as a connection would hold it
 * (consent driven like a person, through the service's ProviderOAuth, code exchanged, accounts
 * read). Pushes are caught with `callbackCatcher` (./providers.ts).
 */
import { Effect } from "effect"
import { ProviderOAuth, type ProviderSession } from "../../src/connections/providers/oauth/port.ts"
import type { ProviderKind } from "../../src/connections/providers/registry.ts"
import { driveConsent, redirectParams, SANDBOX_TOKEN_WORLD } from "./providers.ts"

const REDIRECT = "https://app.example/callback"

/**
 * Connects in `world` (a profile id; the file's `SANDBOX_TOKEN_WORLD` unless told): the consent
 * link names it as a hand-off's does, and `sandboxControl` (./providers.ts) reaches its `_state`.
 */
export const connectSandbox = (provider: ProviderKind, persona: string = "one_account", accountIndex = 0, world = SANDBOX_TOKEN_WORLD) =>
  Effect.gen(function*() {
    const oauth = yield* ProviderOAuth
    const startUrl = yield* oauth.authorizeUrl(provider, { redirectUri: REDIRECT, state: "st", profileId: world })
    const consent = yield* driveConsent(startUrl, { persona, decision: "approve" })
    const code = redirectParams(consent.location).code ?? ""
    const tokens = yield* oauth.exchangeCode(provider, { code, redirectUri: REDIRECT })
    const me = yield* oauth.identify(provider, tokens.accessToken)
    const session: ProviderSession = {
      provider,
      connectionId: `conn-${provider}-${persona}-${accountIndex}`,
      accountId: me.accounts[accountIndex]?.id ?? "",
      accessToken: tokens.accessToken
    }
    return { session, me, tokens }
  })
