/**
 * A merchant's custom commerce app as the OAuth client a hand-off and a token refresh use
 * (decision 0066). The secret is sealed in `commerce_apps` (owner src/accounts/admin/repo.ts); one
 * sealed under a replaced `SVC_SECRETS_KEY` cannot be used, which the caller reports as it
 * reports any dead grant.
 */
import { Effect, Option, Redacted } from "effect"
import type { CommerceAppCredentials } from "../accounts/admin/apps.ts"
import type { SecretBox } from "../platform/secret-box.ts"
import type { ProviderClient } from "./providers/oauth/port.ts"

/** The app as a client; None when its secret cannot be opened. */
export const commerceClient = (
  box: SecretBox["Service"],
  app: CommerceAppCredentials
): Effect.Effect<Option.Option<ProviderClient>> =>
  Effect.try({
    try: () => ({ clientId: app.client_id, clientSecret: Redacted.make(box.open(app.client_secret_encrypted)), scopes: app.scopes }),
    catch: () => "unreadable"
  }).pipe(
    Effect.map(Option.some),
    Effect.catch(() => Effect.as(Effect.logWarning("commerce app secret unreadable", { commerce_app_id: app.id }), Option.none()))
  )
