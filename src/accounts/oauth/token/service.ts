/**
 * The OAuth token endpoint's domain: authenticates an app's client credentials, mints an API
 * key under the app's grant on a profile (`client_credentials`, or `authorization_code` with a
 * code from `/oauth/authorize`), and revokes the app's keys (RFC 7009). Every failure is an
 * OAuth error; nothing here answers the error envelope.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { isUuid } from "../../../../schema/common.ts"
import type { DatabaseUnavailable } from "../../../../schema/errors.ts"
import { OAuthInvalidClient, OAuthRequestError, OAuthServerError } from "../../../../schema/oauth.ts"
import {
  type ConnectScope,
  ConnectScopes,
  isHealthcareFamily,
  PERSON_SCOPES,
  type Scope,
  Scopes,
  scopesOfConnectScopes,
  withholdPersonScopes
} from "../../../../schema/scopes.ts"
import { AuditLog } from "../../../kernel/audit/repo.ts"
import { APP_TIER_LIMITS } from "../../credentials/service.ts"
import { ApiKeysRepo } from "../../api-keys/repo.ts"
import { CredentialPrefix, isWellFormed, secretDigest } from "../../../kernel/credentials/tokens.ts"
import { CredentialStore, type PrincipalShape } from "../../../kernel/principal.ts"
import { AuthorizeRepo, isSecretShaped } from "../authorize/repo.ts"
import { OAuthRepo } from "./repo.ts"
import { digestsEqual } from "../../../platform/secrets.ts"
import { malformedVerifier, verifierRefusal } from "../pkce.ts"

export type AppClient = Extract<PrincipalShape, { readonly kind: "app_client" }>

export interface ClientCredentials {
  readonly clientId: string
  readonly clientSecret: string
}

export interface ClientCredentialsGrant {
  readonly profileId: string | undefined
  /** The raw `scope` parameter, when sent. */
  readonly scope: string | undefined
}

export interface AuthorizationCodeGrant {
  readonly code: string | undefined
  readonly redirectUri: string | undefined
  /** PKCE (decision 0106): needed exactly when the code was issued with a code_challenge. */
  readonly codeVerifier: string | undefined
}

export interface IssuedKey {
  readonly accessToken: string
  readonly scopes: ReadonlyArray<Scope>
  readonly profileId: string
}

export const OAUTH_KEY_RATE_LIMIT_PER_MINUTE = 60
export const OAUTH_KEY_NAME = "oauth:client_credentials"
export const OAUTH_CODE_KEY_NAME = "oauth:authorization_code"

/** How one grant type picks a key's scopes and meets the re-check after the key is written (S5.4). */
interface MintPlan {
  readonly grantType: "client_credentials" | "authorization_code"
  readonly keyName: string
  /** The key's scopes, from what the grant mints and whether the profile is healthcare-family now. */
  readonly select: (
    granted: ReadonlyArray<Scope>,
    healthcare: boolean
  ) => Effect.Effect<ReadonlyArray<Scope>, OAuthRequestError | OAuthServerError>
  /** The re-check found person scopes to withhold: narrow the key, or refuse (the transaction rolls back). */
  readonly onNarrowed: "narrow" | "refuse"
  /** Runs after the key row is written, in the same transaction. */
  readonly afterMint: (keyId: string) => Effect.Effect<void, OAuthRequestError | DatabaseUnavailable>
  readonly details: Record<string, unknown>
}

const isConnectScope = (value: string): value is ConnectScope => (ConnectScopes as ReadonlyArray<string>).includes(value)
const isScope = (value: string): value is Scope => (Scopes as ReadonlyArray<string>).includes(value)

const invalidClient = () => new OAuthInvalidClient({ error_description: "Client authentication failed." })

// One answer for an unknown, malformed, archived or foreign profile and a revoked grant.
const noLiveGrant = () =>
  new OAuthRequestError({
    error: "invalid_grant",
    error_description: "The client holds no live grant on this profile."
  })

const invalidScope = (description: string) => new OAuthRequestError({ error: "invalid_scope", error_description: description })

const mintFailed = () =>
  new OAuthServerError({
    error_description: "The profile's healthcare settings could not be read or the key not stored; no key was minted. Retry."
  })

const serverBusy = () => new OAuthServerError({ error_description: "The request could not be completed. Retry it." })

/** S5.4 for codes: the consented scopes can no longer all be held; nothing is minted and the code stays spent. */
const consentOutdated = () =>
  new OAuthServerError({
    error_description: "The profile became healthcare-family after consent; no key was minted. Run consent again."
  })

// One answer for an unknown, foreign, used or expired code (RFC 6749 section 5.2).
const badCode = () =>
  new OAuthRequestError({ error: "invalid_grant", error_description: "The authorization code is invalid, expired or already used." })

/** RFC 6749 scope: space-separated tokens; order and repeats do not matter. */
const parseScope = (scope: string): Effect.Effect<ReadonlyArray<string>, OAuthRequestError> => {
  const tokens = [...new Set(scope.split(" ").filter((token) => token !== ""))]
  return tokens.length === 0
    ? Effect.fail(invalidScope("scope is empty; omit it to ask for the whole grant."))
    : Effect.succeed(tokens)
}

const orServerError = (make: () => OAuthServerError) => (_: DatabaseUnavailable) => Effect.fail(make())

export class OAuthService extends Context.Service<OAuthService, {
  readonly authenticate: (credentials: ClientCredentials) => Effect.Effect<AppClient, OAuthInvalidClient | OAuthServerError>
  readonly clientCredentials: (
    app: AppClient,
    grant: ClientCredentialsGrant
  ) => Effect.Effect<IssuedKey, OAuthRequestError | OAuthServerError>
  /** Exchanges a code from `/oauth/authorize` (decisions 0022, 0106): spent first, whatever happens next. */
  readonly authorizationCode: (
    app: AppClient,
    grant: AuthorizationCodeGrant
  ) => Effect.Effect<IssuedKey, OAuthRequestError | OAuthServerError>
  /** RFC 7009: revokes the app's own key; any other token is left alone and the answer is the same. */
  readonly revoke: (app: AppClient, token: string) => Effect.Effect<void, OAuthServerError>
}>()("svc/OAuthService") {
  static readonly layer = Layer.effect(OAuthService)(
    Effect.gen(function*() {
      const repo = yield* OAuthRepo
      const codes = yield* AuthorizeRepo
      const keys = yield* ApiKeysRepo
      const audit = yield* AuditLog
      const credentials = yield* CredentialStore

      const authenticate = Effect.fn("OAuthService.authenticate")(function*(credentials: ClientCredentials) {
        if (!isWellFormed(credentials.clientSecret, CredentialPrefix.clientSecret)) return yield* invalidClient()
        const digest = secretDigest(credentials.clientSecret)
        const app = yield* repo.findClient(credentials.clientId).pipe(Effect.catchTag("DatabaseUnavailable", orServerError(serverBusy)))
        if (Option.isNone(app) || !digestsEqual(app.value.client_secret_hash, digest)) return yield* invalidClient()
        return {
          kind: "app_client",
          appId: app.value.id,
          clientId: app.value.client_id,
          rateLimitPerMinute: APP_TIER_LIMITS[app.value.rate_tier]
        } satisfies AppClient
      })

      /** Everything of one mint in one transaction: a failure anywhere leaves no key behind. */
      const mint = Effect.fn("OAuthService.mint")(function*(app: AppClient, profileId: string, plan: MintPlan) {
        const grant = yield* repo.findLiveGrant(app.appId, profileId)
        if (Option.isNone(grant)) return yield* noLiveGrant()
        const granted = scopesOfConnectScopes(grant.value.connect_scopes.filter(isConnectScope))
        const scopes = yield* plan.select(granted, isHealthcareFamily(grant.value))
        const key = yield* keys.mint({
          profileId: grant.value.profile_id,
          workspaceId: grant.value.workspace_id,
          scopes,
          oauthAppId: app.appId,
          grantId: grant.value.grant_id,
          rateLimitPerMinute: OAUTH_KEY_RATE_LIMIT_PER_MINUTE,
          name: plan.keyName
        })
        // S5.4: the profile may have become healthcare-family while the key was being created.
        const settings = yield* repo.lockHealthcareSettings(grant.value.profile_id)
        if (Option.isNone(settings)) return yield* mintFailed()
        const held = withholdPersonScopes(scopes, isHealthcareFamily(settings.value))
        if (held.length < scopes.length) {
          if (plan.onNarrowed === "refuse") return yield* consentOutdated()
          if (held.length === 0) return yield* invalidScope("customers:read and visitors:read are withheld on healthcare-family profiles.")
          yield* keys.setScopes(key.id, held)
        }
        yield* plan.afterMint(key.id)
        yield* audit.record({
          actor: app,
          action: "api_key.issued",
          targetKind: "api_key",
          targetId: key.id,
          profileId: grant.value.profile_id,
          workspaceId: grant.value.workspace_id,
          details: {
            grant_type: plan.grantType,
            grant_id: grant.value.grant_id,
            scopes: held,
            ...plan.details,
            ...(held.length < scopes.length ? { narrowed_after_mint: true } : {})
          }
        })
        return { accessToken: key.key, scopes: held, profileId: grant.value.profile_id } satisfies IssuedKey
      })

      const clientCredentials = Effect.fn("OAuthService.clientCredentials")(function*(app: AppClient, input: ClientCredentialsGrant) {
        if (input.profileId === undefined || input.profileId === "") {
          return yield* new OAuthRequestError({ error: "invalid_request", error_description: "profile_id is required." })
        }
        const requested = input.scope === undefined ? undefined : yield* parseScope(input.scope)
        if (!isUuid(input.profileId)) return yield* noLiveGrant()
        const select = (granted: ReadonlyArray<Scope>, healthcare: boolean) => {
          if (requested !== undefined) {
            // Only catalogued scopes are echoed: error_description is restricted ASCII (RFC 6749 section 5.2).
            if (!requested.every(isScope)) return Effect.fail(invalidScope("The scope names an unknown API scope."))
            const outside = requested.filter((scope) => !granted.includes(scope))
            if (outside.length > 0) return Effect.fail(invalidScope(`Not in this client's grant on the profile: ${outside.join(" ")}.`))
          }
          const asked = requested === undefined ? granted : granted.filter((scope) => requested.includes(scope))
          const scopes = withholdPersonScopes(asked, healthcare)
          if (scopes.length > 0) return Effect.succeed(scopes)
          return Effect.fail(invalidScope(
            granted.length === 0
              ? "This client's grant on the profile carries no API scopes."
              : "customers:read and visitors:read are withheld on healthcare-family profiles."
          ))
        }
        return yield* repo.transaction(mint(app, input.profileId, {
          grantType: "client_credentials",
          keyName: OAUTH_KEY_NAME,
          select,
          onNarrowed: "narrow",
          afterMint: () => Effect.void,
          details: {}
        })).pipe(Effect.catchTag("DatabaseUnavailable", orServerError(mintFailed)))
      })

      /** RFC 6749 section 10.5: a second use of a code revokes the key minted from it. */
      const replayed = Effect.fn("OAuthService.replayed")(function*(app: AppClient, codeHash: string, now: Date) {
        const spent = yield* codes.markReplay(app.appId, codeHash, now)
        if (Option.isNone(spent) || spent.value.api_key_id === null) return
        const revoked = Option.fromNullishOr((yield* keys.revokeKeys({ kind: "key", keyId: spent.value.api_key_id }))[0])
        if (Option.isNone(revoked)) return
        yield* credentials.forget
        yield* audit.record({
          actor: app,
          action: "api_key.revoked",
          targetKind: "api_key",
          targetId: revoked.value.id,
          profileId: revoked.value.profile_id,
          workspaceId: revoked.value.workspace_id,
          details: { via: "authorization_code_replay" }
        }).pipe(Effect.catchTag("DatabaseUnavailable", (error) => Effect.logWarning("replay revocation not audited", error)))
      })

      const authorizationCode = Effect.fn("OAuthService.authorizationCode")(function*(app: AppClient, input: AuthorizationCodeGrant) {
        if (input.code === undefined) {
          return yield* new OAuthRequestError({ error: "invalid_request", error_description: "code is required." })
        }
        if (input.redirectUri === undefined) {
          return yield* new OAuthRequestError({ error: "invalid_request", error_description: "redirect_uri is required." })
        }
        // A verifier that could match no challenge is a malformed request: answered before the code is spent.
        const malformed = malformedVerifier(input.codeVerifier)
        if (malformed !== undefined) return yield* new OAuthRequestError({ error: "invalid_request", error_description: malformed })
        if (!isSecretShaped(input.code)) return yield* badCode()
        const codeHash = secretDigest(input.code)
        const now = new Date(yield* Clock.currentTimeMillis)
        // Its own committed statement: the code is spent whatever happens next.
        const spent = yield* codes.spendCode(app.appId, codeHash, now).pipe(
          Effect.catchTag("DatabaseUnavailable", orServerError(serverBusy))
        )
        if (Option.isNone(spent)) {
          yield* replayed(app, codeHash, now).pipe(Effect.catchTag("DatabaseUnavailable", orServerError(serverBusy)))
          return yield* badCode()
        }
        const code = spent.value
        if (code.expired) return yield* badCode()
        if (code.redirect_uri !== input.redirectUri) {
          return yield* new OAuthRequestError({
            error: "invalid_grant",
            error_description: "redirect_uri differs from the one the code was issued for."
          })
        }
        // Checked after the spend: a code presented with a wrong or missing verifier stays spent (decision 0106).
        const pkceRefused = verifierRefusal(code.code_challenge, input.codeVerifier)
        if (pkceRefused !== undefined) return yield* new OAuthRequestError({ error: "invalid_grant", error_description: pkceRefused })
        const consented = code.scopes.filter(isScope)
        const select = (granted: ReadonlyArray<Scope>, healthcare: boolean) => {
          const scopes = consented.filter((scope) => granted.includes(scope))
          if (scopes.length === 0) {
            return Effect.fail(
              new OAuthRequestError({ error: "invalid_grant", error_description: "The grant no longer covers what was consented." })
            )
          }
          // The consent promised these scopes; a key without some of them is refused, not narrowed (S5.4).
          return healthcare && scopes.some((scope) => PERSON_SCOPES.includes(scope)) ? Effect.fail(consentOutdated()) : Effect.succeed(scopes)
        }
        return yield* repo.transaction(mint(app, code.profile_id, {
          grantType: "authorization_code",
          keyName: OAUTH_CODE_KEY_NAME,
          select,
          onNarrowed: "refuse",
          // A replay noted while this key was minted: the key must not survive.
          afterMint: (keyId) => Effect.flatMap(codes.attachKey(code.id, keyId), (attached) => attached ? Effect.void : Effect.fail(badCode())),
          details: { authorization_code_id: code.id }
        })).pipe(Effect.catchTag("DatabaseUnavailable", orServerError(mintFailed)))
      })

      const revoke = Effect.fn("OAuthService.revoke")(function*(app: AppClient, token: string) {
        if (!isWellFormed(token, CredentialPrefix.apiKey)) return
        const revoked = yield* keys.revokeKeys({ kind: "secret", appId: app.appId, digest: secretDigest(token) }).pipe(
          Effect.map((rows) => Option.fromNullishOr(rows[0])),
          Effect.catchTag("DatabaseUnavailable", orServerError(serverBusy))
        )
        if (Option.isNone(revoked)) return
        yield* credentials.forget
        // The key is already revoked: a failed audit write must not make the client retry.
        yield* audit.record({
          actor: app,
          action: "api_key.revoked",
          targetKind: "api_key",
          targetId: revoked.value.id,
          profileId: revoked.value.profile_id,
          workspaceId: revoked.value.workspace_id,
          details: { via: "oauth_revoke" }
        }).pipe(Effect.catchTag("DatabaseUnavailable", (error) => Effect.logWarning("revocation not audited", error)))
      })

      return { authenticate, clientCredentials, authorizationCode, revoke }
    })
  ).pipe(Layer.provide([OAuthRepo.layer, AuthorizeRepo.layer, ApiKeysRepo.layer, AuditLog.layer]))
}
