/**
 * A profile's connections: the list, disconnect (the push channel stopped, `connection.revoked`,
 * an audit entry) and giving up an app's grant on one (decision 0057).
 */
import { Context, Effect, Layer, Option } from "effect"
import {
  type DatabaseUnavailable,
  InsufficientScope,
  InvalidState,
  NotFound
} from "../../schema/errors.ts"
import { AuditLog } from "../kernel/audit/repo.ts"
import { ApiKeysService } from "../accounts/api-keys/service.ts"
import { CredentialStore, type PrincipalShape, type ProfileContext } from "../kernel/principal.ts"
import { OutboxRepo } from "../kernel/outbox/repo.ts"
import { AppConfig } from "../platform/config.ts"
import type { Keyset } from "../platform/pagination.ts"
import type { Connection } from "../../schema/connections.ts"
import { ProviderOAuth } from "./providers/oauth/port.ts"
import { CONNECTION_REVOKED, connectionEvent } from "./events.ts"
import { PushWorld } from "./hooks/push-world.ts"
import { type ConnectionRecord, ConnectionsRepo } from "./repo.ts"
import { ConnectionSessions, factsOf } from "./sessions.ts"

/** The `status_reason` and `connection.revoked` reason of a connection whose commerce app was killed. */
export const COMMERCE_APP_DISABLED = "commerce_app_disabled"

export class Connections extends Context.Service<Connections, {
  /** A page of the profile's connections, keyset by the repository's order. */
  readonly list: (
    profile: ProfileContext,
    limit: number,
    after: Option.Option<Keyset>
  ) => Effect.Effect<ReadonlyArray<Connection>, DatabaseUnavailable>
  readonly disconnect: (
    principal: PrincipalShape,
    profile: ProfileContext,
    id: string
  ) => Effect.Effect<{ readonly id: string; readonly provider: string }, NotFound | InsufficientScope | InvalidState | DatabaseUnavailable>
  /**
   * Stops the push channel of every live connection made through the commerce app (the kill
   * switch runs this first, while their tokens still open). Best effort: a store that cannot
   * be reached is logged; its callbacks are ignored once the connections are revoked.
   */
  readonly stopCommerceAppChannels: (commerceAppId: string) => Effect.Effect<void, DatabaseUnavailable>
  /**
   * The kill switch's revocation (decision 0066): every live connection made through the commerce
   * app revoked (`commerce_app_disabled`, one `connection.revoked` each), in the caller's
   * transaction; answers how many.
   */
  readonly revokeCommerceAppConnections: (commerceAppId: string) => Effect.Effect<number, DatabaseUnavailable>
  readonly releaseGrant: (
    principal: PrincipalShape,
    profile: ProfileContext,
    id: string
  ) => Effect.Effect<{ readonly released: boolean; readonly revokedKeys: number }, NotFound | InsufficientScope | DatabaseUnavailable>
}>()("svc/Connections") {
  static readonly layer = Layer.effect(Connections)(
    Effect.gen(function*() {
      const repo = yield* ConnectionsRepo
      const outbox = yield* OutboxRepo
      const audit = yield* AuditLog
      const keys = yield* ApiKeysService
      const credentials = yield* CredentialStore
      const settings = yield* AppConfig
      // In sandbox mode an account's push channel is its world's (decision 0109): only the same
      // profile's connections share it.
      const inWorldOf = <A, E, R>(record: ConnectionRecord, effect: Effect.Effect<A, E, R>) =>
        settings.providers.mode === "sandbox" ? Effect.provideService(effect, PushWorld, { profileId: record.profile_id }) : effect
      const sessions = yield* ConnectionSessions
      const oauth = yield* ProviderOAuth

      const notFound = () => new NotFound({ message: "No such connection." })

      const ofProfile = (profile: ProfileContext, id: string) =>
        Effect.flatMap(repo.find(id), (found): Effect.Effect<ConnectionRecord, NotFound> =>
          Option.isSome(found) && found.value.profile_id === profile.profileId && !found.value.disconnected
            ? Effect.succeed(found.value)
            : Effect.fail(notFound()))

      const disconnect = Effect.fn("Connections.disconnect")(function*(principal: PrincipalShape, profile: ProfileContext, id: string) {
        const record = yield* ofProfile(profile, id)
        if (principal.kind === "api_key" && principal.oauthAppId !== null && record.provisioned_by_app_id !== principal.oauthAppId) {
          return yield* new InsufficientScope({
            message: "An app key may disconnect only on profiles its app provisioned.",
            reason: "not_provisioning_app"
          })
        }
        if (yield* repo.syncRunning(id)) {
          return yield* new InvalidState({ message: "A sync of this connection is running; retry when it ends.", reason: "sync_running" })
        }
        // The push channel is the account's (one per callback URL): it stays while another profile's
        // connection still holds the account. It is stopped first, while the token still opens; a dead
        // grant has no channel left to stop.
        const others = record.external_account_id === null
          ? []
          : (yield* inWorldOf(record, repo.liveForAccount(record.provider, record.external_account_id))).filter((other) => other.id !== id)
        if (others.length === 0) yield* sessions.session(id).pipe(
          Effect.flatMap((session) => oauth.unsubscribe(session)),
          Effect.catch((error) =>
            error._tag === "DatabaseUnavailable"
              ? Effect.fail(error)
              : Effect.logWarning("push channel unsubscribe failed", { connectionId: id, error: error._tag }))
        )
        yield* repo.transaction(Effect.gen(function*() {
          const changed = yield* repo.disconnect(id)
          if (!changed) return yield* Effect.fail(notFound())
          yield* outbox.insert([connectionEvent(CONNECTION_REVOKED, factsOf(record), "disconnected")])
          yield* audit.record({
            actor: principal,
            action: "connection.disconnected",
            withoutPerson: true,
            targetKind: "connection",
            targetId: id,
            workspaceId: record.workspace_id,
            profileId: record.profile_id,
            details: { provider: record.provider, provider_account_id: record.external_account_id }
          })
        }))
        return { id, provider: record.provider }
      })

      const stopCommerceAppChannels = Effect.fn("Connections.stopCommerceAppChannels")(function*(commerceAppId: string) {
        const through = yield* repo.liveForCommerceApp(commerceAppId)
        const leaving = new Set(through.map((record) => record.id))
        for (const record of through) {
          // As disconnect: the channel is the account's, kept while a connection that stays holds it.
          const others = record.external_account_id === null
            ? []
            : (yield* inWorldOf(record, repo.liveForAccount(record.provider, record.external_account_id))).filter((other) => !leaving.has(other.id))
          if (others.length > 0) continue
          yield* sessions.session(record.id).pipe(
            Effect.flatMap((session) => oauth.unsubscribe(session)),
            Effect.catch((error) =>
              error._tag === "DatabaseUnavailable"
                ? Effect.fail(error)
                : Effect.logWarning("push channel unsubscribe failed", { connectionId: record.id, error: error._tag }))
          )
        }
      })

      const revokeCommerceAppConnections = Effect.fn("Connections.revokeCommerceAppConnections")(function*(commerceAppId: string) {
        const live = yield* repo.liveForCommerceApp(commerceAppId)
        let revoked = 0
        for (const record of live) {
          if (!(yield* repo.disconnect(record.id, COMMERCE_APP_DISABLED))) continue
          yield* outbox.insert([connectionEvent(CONNECTION_REVOKED, factsOf(record), COMMERCE_APP_DISABLED)])
          revoked++
        }
        return revoked
      })

      const releaseGrant = Effect.fn("Connections.releaseGrant")(function*(principal: PrincipalShape, profile: ProfileContext, id: string) {
        const record = yield* ofProfile(profile, id)
        if (principal.kind !== "api_key" || principal.oauthAppId === null) {
          return yield* new InsufficientScope({
            message: "Only an app's key gives up the app's grant on a connection; a profile's own key disconnects instead.",
            reason: "app_key_required"
          })
        }
        const appId = principal.oauthAppId
        const result = yield* repo.transaction(Effect.gen(function*() {
          const released = yield* repo.releaseAppGrant(id)
          const revoked = yield* keys.revokeOlderAppKeys(appId, record.profile_id, principal.keyId)
          if (released || revoked > 0) {
            yield* audit.record({
              actor: principal,
              action: "connection.app_grant_released",
              targetKind: "connection",
              targetId: id,
              workspaceId: record.workspace_id,
              profileId: record.profile_id,
              details: { provider: record.provider, revoked_keys: revoked }
            })
          }
          return { released, revokedKeys: revoked }
        }))
        if (result.revokedKeys > 0) yield* credentials.forget
        return result
      })

      const list = Effect.fn("Connections.list")(function*(profile: ProfileContext, limit: number, after: Option.Option<Keyset>) {
        return yield* repo.list(profile.profileId, limit, after)
      })

      return { list, disconnect, stopCommerceAppChannels, revokeCommerceAppConnections, releaseGrant }
    })
  ).pipe(Layer.provide([ConnectionsRepo.layer, OutboxRepo.layer, AuditLog.layer, ApiKeysService.layer, ConnectionSessions.layer]))
}
