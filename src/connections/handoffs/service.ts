/**
 * Connect hand-offs (decision 0057): the mint, the poll, the `/h/<handle>` link, the consent
 * the provider's callback completes (run by the HandOff entity, one message at a time per
 * hand-off), the pending account selection and its finalize.
 */
import { Context, Data, Effect, Layer, Option, Redacted } from "effect"
import { createHash, randomBytes } from "node:crypto"
import { originOf } from "../../../schema/common.ts"
import type { Connection, FinalizePending, Handoff, MintHandoff, PendingSelection } from "../../../schema/connections.ts"
import {
  AccountConnectedElsewhere,
  type DatabaseUnavailable,
  InvalidRequest,
  NotFound
} from "../../../schema/errors.ts"
import { RegisteredApps } from "../../accounts/admin/apps.ts"
import { effectiveReturnOrigins } from "../../accounts/admin/service.ts"
import type { PrincipalShape, ProfileContext } from "../../kernel/principal.ts"
import { OutboxRepo } from "../../kernel/outbox/repo.ts"
import { AppConfig } from "../../platform/config.ts"
import { SecretBox } from "../../platform/secret-box.ts"
import type { ProviderAccount, ProviderClient, ProviderIdentity, ProviderSession, TokenSet } from "../providers/oauth/port.ts"
import { ProviderEndpoints } from "../providers/endpoints.ts"
import { ProviderOAuth } from "../providers/oauth/port.ts"
import { isProviderKind, type ProviderKind } from "../providers/registry.ts"
import { commerceClient } from "../commerce-apps.ts"
import { CONNECTION_CONNECTED, connectionEvent } from "../events.ts"
import { ConnectionsRepo, type SealedTokens } from "../repo.ts"
import { type HandoffRow, HandoffsRepo, type PendingRow } from "./repo.ts"
import { shopHandle } from "./shop.ts"

/** The settled outcome a person is returned with (`status`, `reason`, `handoff_id`). */
export interface ConsentOutcome {
  readonly handoffId: string
  readonly status: "success" | "pending_selection" | "failed" | "cancelled"
  readonly reason: string | null
  readonly connectionId: string | null
  readonly returnUrl: string | null
}

/** What the provider's callback carried. */
export interface ConsentInput {
  readonly code: string | null
  readonly error: string | null
}

/** What opening `/h/<handle>` leads to. */
export type LinkAnswer =
  | { readonly _tag: "Start"; readonly startUrl: string; readonly provider: string; readonly immediate: boolean }
  | {
    readonly _tag: "Refused"
    readonly reason: "handoff_expired" | "handoff_used"
    readonly handoffId: string
    readonly returnTo: string | null
  }
  | { readonly _tag: "Unknown" }

/** The custom commerce app the tokens came through was killed while the consent ran. */
class CommerceAppKilled extends Data.TaggedError("CommerceAppKilled")<{}> {}

/** The manage-ads grant an ad-platform connection needs for writes. */
const MANAGE_ADS = "ads_management"

const sha256 = (value: string) => createHash("sha256").update(value, "utf8").digest("hex")

/** `return_url` with `status`, `reason` and `handoff_id` added. */
export const returnLocation = (returnUrl: string, answer: { readonly handoffId: string; readonly status: string; readonly reason: string | null }) => {
  const url = new URL(returnUrl)
  url.searchParams.set("status", answer.status)
  if (answer.reason !== null) url.searchParams.set("reason", answer.reason)
  url.searchParams.set("handoff_id", answer.handoffId)
  return url.toString()
}

/**
 * The machine `reason` of an ending that is not a refusal: every return carries one (the spec's
 * `status`, `reason`, `handoff_id`), and the poll's `result.reason` is the same value.
 */
export const CONNECTED = "connected"
export const SELECTION_REQUIRED = "account_selection_required"

const settled = (row: HandoffRow): ConsentOutcome | null => {
  switch (row.status) {
    case "success":
    case "pending_selection":
    case "cancelled":
    case "failed":
      return {
        handoffId: row.id,
        status: row.status,
        // Rows settled before every ending carried a reason.
        reason: row.reason ?? (row.status === "success" ? CONNECTED : row.status === "pending_selection" ? SELECTION_REQUIRED : null),
        connectionId: row.connection_id,
        returnUrl: row.return_url
      }
    default:
      return null
  }
}

export class Handoffs extends Context.Service<Handoffs, {
  readonly mint: (
    principal: PrincipalShape,
    profile: ProfileContext,
    provider: string,
    body: MintHandoff
  ) => Effect.Effect<Handoff, NotFound | InvalidRequest | DatabaseUnavailable>
  readonly view: (profile: ProfileContext, handoffId: string) => Effect.Effect<Handoff, NotFound | DatabaseUnavailable>
  readonly openLink: (handle: string) => Effect.Effect<LinkAnswer, DatabaseUnavailable>
  /** The hand-off a provider callback's `state` names, if any. */
  readonly locate: (provider: string, state: string) => Effect.Effect<Option.Option<HandoffRow>, DatabaseUnavailable>
  /** Runs one consent; only the HandOff entity calls it (serialised per hand-off). */
  readonly consent: (handoffId: string, input: ConsentInput) => Effect.Effect<ConsentOutcome, DatabaseUnavailable>
  readonly pending: (profile: ProfileContext, provider: string) => Effect.Effect<ReadonlyArray<PendingSelection>, NotFound | DatabaseUnavailable>
  readonly finalize: (
    profile: ProfileContext,
    provider: string,
    body: FinalizePending
  ) => Effect.Effect<Connection, NotFound | InvalidRequest | AccountConnectedElsewhere | DatabaseUnavailable>
}>()("svc/Handoffs") {
  static readonly layer = Layer.effect(Handoffs)(
    Effect.gen(function*() {
      const repo = yield* HandoffsRepo
      const connections = yield* ConnectionsRepo
      const outbox = yield* OutboxRepo
      const apps = yield* RegisteredApps
      const box = yield* SecretBox
      const oauth = yield* ProviderOAuth
      const endpoints = yield* ProviderEndpoints
      const settings = yield* AppConfig
      const baseUrl = settings.baseUrl
      const ttlSeconds = settings.providers.handoffTtlSeconds

      const callbackUrl = (provider: string) => `${baseUrl}/connect/${provider}/callback`
      /** The OAuth `state` is derived from the hand-off id, so it is never stored (only its hash is). */
      const stateOf = (handoffId: string) => box.keyedHash("connect-handoff-state", handoffId)

      /**
       * The merchant's custom app registered for the hand-off's store, looked up at each use: a
       * killed app is never used again, and a link minted before an app was registered (or
       * killed) follows what holds now (decision 0066). None: the deployment's own app.
       */
      const customApp = (row: { readonly provider: string; readonly shop: string | null }) =>
        Effect.gen(function*() {
          if (row.provider !== "commerce" || row.shop === null) return Option.none<{ id: string; client: ProviderClient }>()
          const app = yield* apps.liveCommerceAppForShop(row.shop)
          if (Option.isNone(app)) return Option.none()
          const client = yield* commerceClient(box, app.value)
          return Option.map(client, (c) => ({ id: app.value.id, client: c }))
        })

      const startUrl = (row: HandoffRow) => {
        const provider = row.provider
        if (!isProviderKind(provider)) return Effect.die(`hand-off ${row.id} of unknown provider ${provider}`)
        return Effect.flatMap(customApp(row), (custom) =>
          oauth.authorizeUrl(provider, {
            redirectUri: callbackUrl(provider),
            state: stateOf(row.id),
            profileId: row.profile_id,
            ...(row.shop === null ? {} : { shop: row.shop }),
            ...(Option.isSome(custom) ? { client: custom.value.client } : {})
          }))
      }

      const wire = (row: HandoffRow) =>
        Effect.map(startUrl(row), (start): Handoff => {
          const outcome = settled(row)
          return {
            handoff_id: row.id,
            provider: row.provider,
            status: row.status,
            start_url: start,
            handoff_url: `${baseUrl}/h/${row.handle}`,
            return_url: row.return_url,
            shop: row.shop,
            expires_at: row.expires_at,
            created_at: row.created_at,
            result: outcome !== null
              ? { status: outcome.status, reason: outcome.reason, connection_id: outcome.connectionId }
              : row.expired
              ? { status: "failed", reason: "handoff_expired", connection_id: null }
              : null
          }
        })

      const unknownProvider = (provider: string) =>
        new NotFound({ message: `Unknown provider "${provider}".`, reason: "unknown_provider" })

      /** The origins a `return_url` may have: the app's registered ones, or this service's own for a key of no app. */
      const allowedOrigins = (principal: PrincipalShape) =>
        Effect.gen(function*() {
          const appId = principal.kind === "api_key" ? principal.oauthAppId : null
          if (appId === null) return [originOf(baseUrl)]
          const app = yield* apps.findApp(appId)
          return Option.match(app, { onNone: () => [], onSome: effectiveReturnOrigins })
        })

      const mint = Effect.fn("Handoffs.mint")(function*(
        principal: PrincipalShape,
        profile: ProfileContext,
        provider: string,
        body: MintHandoff
      ) {
        // A provider this deployment has no app for (live mode without its settings) is unknown here too.
        if (!isProviderKind(provider) || !endpoints.offered(provider)) return yield* Effect.fail(unknownProvider(provider))
        let shop: string | null = null
        if (provider === "commerce") {
          shop = body.shop === undefined ? null : shopHandle(body.shop)
          if (shop === null) {
            return yield* new InvalidRequest({
              message: "body.shop: the store's handle, <handle>.<store-domain> or its admin URL is required for commerce",
              reason: "invalid_shop"
            })
          }
        } else if (body.shop !== undefined) {
          return yield* new InvalidRequest({ message: "body.shop: only a commerce hand-off takes a shop", reason: "invalid_shop" })
        }
        let returnUrl: string | null = null
        if (body.return_url !== undefined) {
          const candidate = body.return_url
          const parsed = URL.canParse(candidate) ? new URL(candidate) : null
          if (parsed === null || (parsed.protocol !== "https:" && parsed.protocol !== "http:") || parsed.hash !== "") {
            return yield* new InvalidRequest({ message: "body.return_url: expected an absolute http(s) URL without a fragment", reason: "invalid_return_url" })
          }
          const origins = yield* allowedOrigins(principal)
          if (!origins.includes(parsed.origin)) {
            return yield* new InvalidRequest({
              message: `body.return_url: the origin ${parsed.origin} is not registered for this app (redirect_uris or allowed_return_origins)`,
              reason: "return_url_not_registered"
            })
          }
          returnUrl = parsed.toString()
        }
        const id = crypto.randomUUID()
        const row = yield* repo.insert({
          id,
          profileId: profile.profileId,
          provider,
          handle: randomBytes(18).toString("base64url"),
          stateHash: sha256(stateOf(id)),
          returnUrl,
          shop,
          appId: principal.kind === "api_key" ? principal.oauthAppId : null,
          apiKeyId: principal.kind === "api_key" ? principal.keyId : null,
          ttlSeconds
        })
        return yield* wire(row)
      })

      const view = Effect.fn("Handoffs.view")(function*(profile: ProfileContext, handoffId: string) {
        const found = yield* repo.find(handoffId)
        if (Option.isNone(found) || found.value.profile_id !== profile.profileId) {
          return yield* new NotFound({ message: "No such hand-off." })
        }
        return yield* wire(found.value)
      })

      /** Whether a new consent may start on the hand-off (what `beginConsent` claims). */
      const usable = (row: HandoffRow) =>
        row.status === "minted" || (row.status === "failed" && row.reason === "internal_error") ||
        (row.status === "in_consent" && row.consent_stale)

      const openLink = Effect.fn("Handoffs.openLink")(function*(handle: string) {
        const found = yield* repo.findByHandle(handle)
        if (Option.isNone(found)) return { _tag: "Unknown" } as const
        const row = found.value
        if (!usable(row)) return { _tag: "Refused", reason: "handoff_used", handoffId: row.id, returnTo: row.return_url } as const
        if (row.expired) return { _tag: "Refused", reason: "handoff_expired", handoffId: row.id, returnTo: row.return_url } as const
        const start = yield* startUrl(row)
        return { _tag: "Start", startUrl: start, provider: row.provider, immediate: row.return_url !== null } as const
      })

      const locate = (provider: string, state: string) => repo.findByState(provider, sha256(state))

      const seal = (tokens: TokenSet): SealedTokens => ({
        accessTokenSealed: box.seal(Redacted.value(tokens.accessToken)),
        refreshTokenSealed: Option.match(tokens.refreshToken, { onNone: () => null, onSome: (t) => box.seal(Redacted.value(t)) }),
        expiresAt: Option.getOrNull(tokens.expiresAt),
        scopes: tokens.scopes
      })

      /** Creates (or renews) the connection, writes `connection.connected`; then opens the push channel. */
      const connect = (input: {
        readonly profileId: string
        readonly provider: ProviderKind
        readonly account: ProviderAccount
        readonly userId: string | null
        readonly tokens: SealedTokens
        readonly accessToken: Redacted.Redacted<string>
        readonly appId: string | null
        readonly handoffId: string
        readonly shop: string | null
        readonly commerceAppId: string | null
        readonly settleHandoff: (connectionId: string) => Effect.Effect<void, DatabaseUnavailable | NotFound>
      }) =>
        Effect.gen(function*() {
          const missingManage = input.provider === "adplatform" && !input.tokens.scopes.includes(MANAGE_ADS)
          const connectionId = yield* connections.transaction(Effect.gen(function*() {
            // The app is share-locked until the connection commits: a kill switch running on it
            // waits, then revokes this connection too; one that ran first leaves the app dead here.
            if (input.commerceAppId !== null && Option.isNone(yield* apps.liveCommerceApp(input.commerceAppId))) {
              return yield* new CommerceAppKilled()
            }
            const { id } = yield* connections.upsertFromGrant({
              profileId: input.profileId,
              provider: input.provider,
              accountId: input.account.id,
              displayName: input.account.name,
              currency: input.account.currency,
              timezone: input.account.timezone,
              providerUserId: input.userId,
              tokens: input.tokens,
              appId: input.appId,
              handoffId: input.handoffId,
              shop: input.shop,
              commerceAppId: input.commerceAppId,
              status: missingManage ? "needs_action" : "active",
              statusReason: missingManage ? "manage_ads_permission_missing" : null
            })
            const record = yield* connections.find(id)
            yield* outbox.insert([connectionEvent(CONNECTION_CONNECTED, {
              profileId: input.profileId,
              connectionId: id,
              provider: input.provider,
              accountId: input.account.id,
              provisionedByAppId: Option.match(record, { onNone: () => null, onSome: (r) => r.provisioned_by_app_id })
            })])
            yield* input.settleHandoff(id)
            return id
          }))
          const session: ProviderSession = {
            provider: input.provider,
            connectionId,
            accountId: input.account.id,
            accessToken: input.accessToken
          }
          // The connection stands without its push channel (lead forms, grant deaths arrive late); a
          // failed subscribe is logged, not the person's problem.
          yield* oauth.subscribe(session, `${baseUrl}/hooks/${input.provider}`).pipe(
            Effect.catch((error) => Effect.logWarning("push channel subscribe failed", { connectionId, error: error._tag }))
          )
          return connectionId
        })

      const consent = Effect.fn("Handoffs.consent")(function*(handoffId: string, input: ConsentInput) {
        const found = yield* repo.find(handoffId)
        if (Option.isNone(found)) return yield* Effect.die(`consent for unknown hand-off ${handoffId}`)
        const row = found.value
        const answer = (status: ConsentOutcome["status"], reason: string | null, connectionId: string | null = null): ConsentOutcome => ({
          handoffId,
          status,
          reason,
          connectionId,
          returnUrl: row.return_url
        })
        // Any consent reaching a settled hand-off (the callback replayed, a double click, `start_url`
        // opened again) is a use of a used link: `handoff_used`, as its `/h/` link answers, and
        // nothing is written; the poll keeps the first outcome.
        if (settled(row) !== null && !(row.status === "failed" && row.reason === "internal_error")) {
          return answer("failed", "handoff_used")
        }
        if (row.expired) return answer("failed", "handoff_expired")
        const provider = row.provider
        if (!isProviderKind(provider)) return yield* Effect.die(`hand-off ${row.id} of unknown provider ${provider}`)

        if (input.error !== null || input.code === null) {
          if (row.status === "in_consent" && !row.consent_stale) return answer("failed", "handoff_used")
          // The person said no; any other error (or none, and no code) is the provider's failure: retry the link.
          if (input.error === "access_denied") {
            yield* repo.settle(handoffId, "cancelled", "user_cancelled", null)
            return answer("cancelled", "user_cancelled")
          }
          yield* repo.settle(handoffId, "failed", "internal_error", null)
          return answer("failed", "internal_error")
        }
        // One consent per hand-off: the claim fails while another consent holds it (recovered after 3 minutes).
        const claimed = yield* repo.beginConsent(handoffId)
        if (!claimed) return answer("failed", "handoff_used")

        const custom = yield* customApp(row)
        const exchanged = yield* Effect.gen(function*() {
          const tokens = yield* oauth.exchangeCode(provider, {
            code: input.code ?? "",
            redirectUri: callbackUrl(provider),
            ...(Option.isSome(custom) ? { client: custom.value.client } : {})
          })
          const identity: ProviderIdentity = yield* oauth.identify(provider, tokens.accessToken)
          return { tokens, identity }
        }).pipe(Effect.option)
        if (Option.isNone(exchanged)) {
          // Not settled: the same link can be used again.
          yield* repo.settle(handoffId, "failed", "internal_error", null)
          return answer("failed", "internal_error")
        }
        const { identity, tokens } = exchanged.value
        const sealed = seal({ ...tokens, scopes: tokens.scopes.length > 0 ? tokens.scopes : identity.scopes })
        const accounts = identity.accounts
        const only = accounts[0]
        if (only === undefined) {
          yield* repo.settle(handoffId, "failed", "no_accounts", null)
          return answer("failed", "no_accounts")
        }
        if (accounts.length === 1) {
          const connectionId = yield* connect({
            profileId: row.profile_id,
            provider,
            account: only,
            userId: identity.userId,
            tokens: sealed,
            accessToken: tokens.accessToken,
            appId: row.app_id,
            handoffId,
            shop: row.shop,
            commerceAppId: Option.isSome(custom) ? custom.value.id : null,
            settleHandoff: (id) => repo.settle(handoffId, "success", CONNECTED, id)
          }).pipe(
            // Only a concurrent finalize fails here, and a consent has none.
            Effect.catchTag("NotFound", (error) => Effect.die(error)),
            Effect.map(Option.some),
            // Its grant died with the app: the link stays usable, and the next consent goes through what holds now.
            Effect.catchTag("CommerceAppKilled", () => Effect.succeed(Option.none<string>()))
          )
          if (Option.isNone(connectionId)) {
            yield* repo.settle(handoffId, "failed", "internal_error", null)
            return answer("failed", "internal_error")
          }
          return answer("success", CONNECTED, connectionId.value)
        }
        yield* connections.transaction(Effect.gen(function*() {
          yield* repo.insertPending({
            handoffId,
            profileId: row.profile_id,
            provider,
            providerUserId: identity.userId,
            scopes: sealed.scopes,
            accounts: accounts.map((a) => ({ id: a.id, name: a.name, currency: a.currency, timezone: a.timezone })),
            accessTokenSealed: sealed.accessTokenSealed,
            refreshTokenSealed: sealed.refreshTokenSealed,
            tokenExpiresAt: sealed.expiresAt,
            ttlSeconds
          })
          yield* repo.settle(handoffId, "pending_selection", SELECTION_REQUIRED, null)
        }))
        return answer("pending_selection", SELECTION_REQUIRED)
      })

      const pendingWire = (row: PendingRow, elsewhere: ReadonlySet<string>, here: ReadonlySet<string>): PendingSelection => ({
        id: row.id,
        handoff_id: row.handoff_id,
        provider: row.provider,
        accounts: row.accounts.map((a) => ({ ...a, connected_elsewhere: elsewhere.has(a.id), connected_here: here.has(a.id) })),
        created_at: row.created_at,
        expires_at: row.expires_at
      })

      const pending = Effect.fn("Handoffs.pending")(function*(profile: ProfileContext, provider: string) {
        if (!isProviderKind(provider)) return yield* Effect.fail(unknownProvider(provider))
        const rows = yield* repo.pendingFor(profile.profileId, provider)
        const ids = [...new Set(rows.flatMap((row) => row.accounts.map((a) => a.id)))]
        const elsewhere = new Set(ids.length === 0 ? [] : yield* connections.liveElsewhere(profile.profileId, provider, ids))
        const here = new Set(ids.length === 0 ? [] : yield* connections.liveHere(profile.profileId, provider, ids))
        return rows.map((row) => pendingWire(row, elsewhere, here))
      })

      const finalize = Effect.fn("Handoffs.finalize")(function*(profile: ProfileContext, provider: string, body: FinalizePending) {
        if (!isProviderKind(provider)) return yield* Effect.fail(unknownProvider(provider))
        const rows = yield* repo.pendingFor(profile.profileId, provider)
        const row = body.handoff_id === undefined ? rows[0] : rows.find((r) => r.handoff_id === body.handoff_id)
        if (row === undefined) return yield* new NotFound({ message: `No pending ${provider} account selection.`, reason: "no_pending_selection" })
        const account = row.accounts.find((a) => a.id === body.account_id)
        if (account === undefined) {
          return yield* new InvalidRequest({ message: "body.account_id: not one of the pending selection's accounts", reason: "unknown_account" })
        }
        const elsewhere = yield* connections.liveElsewhere(profile.profileId, provider, [account.id])
        if (elsewhere.length > 0) {
          // The parked token stays: the person may pick another account or free this one first.
          return yield* new AccountConnectedElsewhere({
            message: `The account ${account.id} is connected on another profile of this workspace.`,
            provider
          })
        }
        // A token parked under another key (a replaced SVC_SECRETS_KEY) cannot be used: run the hand-off again.
        const accessToken = yield* Effect.try({
          try: () => Redacted.make(box.open(row.access_token_sealed)),
          catch: () => new NotFound({ message: `The pending ${provider} selection is no longer usable; connect again.`, reason: "no_pending_selection" })
        })
        const connectionId = yield* connect({
          profileId: profile.profileId,
          provider,
          account,
          userId: row.provider_user_id,
          tokens: {
            accessTokenSealed: row.access_token_sealed,
            refreshTokenSealed: row.refresh_token_sealed,
            expiresAt: row.token_expires_at === null ? null : new Date(row.token_expires_at),
            scopes: row.scopes
          },
          accessToken,
          appId: row.app_id,
          handoffId: row.handoff_id,
          shop: row.shop,
          // A commerce consent names one shop, so it never parks a selection.
          commerceAppId: null,
          settleHandoff: (id) =>
            Effect.gen(function*() {
              const finalized = yield* repo.finalizePending(row.id)
              if (!finalized) {
                return yield* new NotFound({ message: `No pending ${provider} account selection.`, reason: "no_pending_selection" })
              }
              yield* repo.settle(row.handoff_id, "success", CONNECTED, id)
            })
        }).pipe(Effect.catchTag("CommerceAppKilled", (error) => Effect.die(error)))
        const view = yield* connections.view(profile.profileId, connectionId)
        return yield* Option.match(view, { onNone: () => Effect.die("connection vanished"), onSome: Effect.succeed })
      })

      return { mint, view, openLink, locate, consent, pending, finalize }
    })
  ).pipe(Layer.provide([HandoffsRepo.layer, ConnectionsRepo.layer, OutboxRepo.layer, RegisteredApps.layer]))
}
