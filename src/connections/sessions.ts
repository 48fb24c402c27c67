/**
 * Opening a connection's grant for a provider call: the sealed token opened, refreshed through
 * ProviderOAuth when it expires within a minute (the new tokens stored sealed), and the grant's
 * death reported once (`reconnect_required` plus the `connection.reconnect_required` event).
 */
import { Context, Effect, Layer, Option, Redacted } from "effect"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { RegisteredApps } from "../accounts/admin/apps.ts"
import { OutboxRepo } from "../kernel/outbox/repo.ts"
import { SecretBox } from "../platform/secret-box.ts"
import { ProviderAuthRevoked, type ProviderError } from "./providers/errors.ts"
import type { ProviderClient, ProviderSession, TokenSet } from "./providers/oauth/port.ts"
import { ProviderOAuth } from "./providers/oauth/port.ts"
import { isProviderKind } from "./providers/registry.ts"
import { commerceClient } from "./commerce-apps.ts"
import { CONNECTION_RECONNECT_REQUIRED, connectionEvent } from "./events.ts"
import { type ConnectionRecord, ConnectionsRepo, type SealedTokens } from "./repo.ts"

// The row other contexts receive from the methods below, so that they need not import the repository.
export type { ConnectionRecord }

/** A token this close to its expiry is refreshed before use. */
const REFRESH_MARGIN_MS = 60_000

export class ConnectionSessions extends Context.Service<ConnectionSessions, {
  /**
   * A live session on the connection. Fails `ProviderAuthRevoked` when the connection is gone,
   * disconnected, awaiting a reconnect or its refresh was refused (then reported, see below).
   */
  readonly session: (connectionId: string) => Effect.Effect<ProviderSession, ProviderError | DatabaseUnavailable>
  /**
   * The provider said the grant is dead: marks the connection `reconnect_required` and writes
   * `connection.reconnect_required`, once (a second report changes nothing). Answers whether
   * this call marked it.
   */
  readonly reportAuthRevoked: (connectionId: string, reason?: string) => Effect.Effect<boolean, DatabaseUnavailable>
  /**
   * The profile's newest connection on `provider` that is not disconnected (possibly awaiting a
   * reconnect): what a live call goes through (decision 0061).
   */
  readonly currentOf: (profileId: string, provider: string) => Effect.Effect<Option.Option<ConnectionRecord>, DatabaseUnavailable>
  /** Live connections on a provider account (every profile): where a provider's push belongs. */
  readonly liveForAccount: (provider: string, accountId: string) => Effect.Effect<ReadonlyArray<ConnectionRecord>, DatabaseUnavailable>
}>()("svc/ConnectionSessions") {
  static readonly layer = Layer.effect(ConnectionSessions)(
    Effect.gen(function*() {
      const repo = yield* ConnectionsRepo
      const outbox = yield* OutboxRepo
      const box = yield* SecretBox
      const oauth = yield* ProviderOAuth
      const apps = yield* RegisteredApps

      const reportAuthRevoked = Effect.fn("ConnectionSessions.reportAuthRevoked")(function*(
        connectionId: string,
        reason = "grant_revoked"
      ) {
        return yield* repo.transaction(Effect.gen(function*() {
          const found = yield* repo.find(connectionId)
          if (Option.isNone(found)) return false
          const changed = yield* repo.markReconnectRequired(connectionId, reason)
          if (changed) yield* outbox.insert([connectionEvent(CONNECTION_RECONNECT_REQUIRED, factsOf(found.value), reason)])
          return changed
        }))
      })

      const revoked = (record: ConnectionRecord, operation: string) =>
        new ProviderAuthRevoked({ provider: isProviderKind(record.provider) ? record.provider : "adplatform", operation })

      const seal = (tokens: TokenSet): SealedTokens => ({
        accessTokenSealed: box.seal(Redacted.value(tokens.accessToken)),
        refreshTokenSealed: Option.match(tokens.refreshToken, { onNone: () => null, onSome: (t) => box.seal(Redacted.value(t)) }),
        expiresAt: Option.getOrNull(tokens.expiresAt),
        scopes: tokens.scopes
      })

      const session = Effect.fn("ConnectionSessions.session")(function*(connectionId: string) {
        const found = yield* repo.find(connectionId)
        if (Option.isNone(found)) return yield* Effect.fail(new ProviderAuthRevoked({ provider: "adplatform", operation: "session" }))
        const record = found.value
        const provider = record.provider
        if (
          !isProviderKind(provider) || record.disconnected || record.status === "reconnect_required" ||
          record.access_token_sealed === null || record.external_account_id === null
        ) {
          return yield* Effect.fail(revoked(record, "session"))
        }
        const base = { provider, connectionId: record.id, accountId: record.external_account_id }
        // A token sealed under another key (a replaced SVC_SECRETS_KEY) cannot be used: the grant needs a reconnect.
        const open = (sealed: string) =>
          Effect.try({ try: () => Redacted.make(box.open(sealed)), catch: () => revoked(record, "session") }).pipe(
            Effect.tapError(() => reportAuthRevoked(record.id, "token_unreadable"))
          )
        const expiresAt = record.token_expires_at === null ? null : Date.parse(record.token_expires_at)
        if (expiresAt === null || expiresAt - Date.now() > REFRESH_MARGIN_MS || record.refresh_token_sealed === null) {
          return { ...base, accessToken: yield* open(record.access_token_sealed) }
        }
        // A grant made through a merchant's custom app refreshes through that app; a killed app has
        // revoked its connections already, so a missing one means the grant is dead.
        let client: ProviderClient | undefined
        if (record.commerce_app_id !== null) {
          const app = yield* apps.liveCommerceApp(record.commerce_app_id)
          const opened = Option.isSome(app) ? yield* commerceClient(box, app.value) : Option.none<ProviderClient>()
          if (Option.isNone(opened)) {
            yield* reportAuthRevoked(record.id, "refresh_refused")
            return yield* Effect.fail(revoked(record, "session"))
          }
          client = opened.value
        }
        const refreshed = yield* oauth.refresh(provider, yield* open(record.refresh_token_sealed), client).pipe(
          // The token endpoint refuses a dead refresh token with 400 `invalid_grant` (RFC 6749 5.2),
          // a body the client reads as a plain refusal: the grant is dead all the same.
          Effect.catchTag("ProviderRefused", (error) => Effect.fail(error.status === 400 ? revoked(record, "refresh") : error)),
          Effect.tapError((error) =>
            error._tag === "ProviderAuthRevoked" ? reportAuthRevoked(record.id, "refresh_refused") : Effect.void
          )
        )
        yield* repo.updateTokens(record.id, seal(refreshed))
        return { ...base, accessToken: refreshed.accessToken }
      })

      const currentOf = Effect.fn("ConnectionSessions.currentOf")(function*(profileId: string, provider: string) {
        return yield* repo.currentOf(profileId, provider)
      })

      const liveForAccount = Effect.fn("ConnectionSessions.liveForAccount")(function*(provider: string, accountId: string) {
        return yield* repo.liveForAccount(provider, accountId)
      })

      return { session, reportAuthRevoked, currentOf, liveForAccount }
    })
  ).pipe(Layer.provide([ConnectionsRepo.layer, OutboxRepo.layer, RegisteredApps.layer]))
}

export const factsOf = (record: ConnectionRecord) => ({
  profileId: record.profile_id,
  connectionId: record.id,
  provider: record.provider,
  accountId: record.external_account_id,
  provisionedByAppId: record.provisioned_by_app_id
})
