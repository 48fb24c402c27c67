/**
 * The owner of `connections`: a profile's grants on provider accounts. Tokens arrive and leave
 * sealed (SecretBox): this repository never sees them in clear.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isUuid } from "../../schema/common.ts"
import { Connection } from "../../schema/connections.ts"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import type { Keyset } from "../platform/pagination.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../platform/database.ts"
import { isoTimestamp } from "../platform/sql-time.ts"
import { PushWorld } from "./hooks/push-world.ts"

/** A connection with what the service needs to act on it (never on the wire). */
export const ConnectionRecord = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  workspace_id: Schema.String,
  provider: Schema.String,
  status: Schema.String,
  external_account_id: Schema.NullOr(Schema.String),
  app_id: Schema.NullOr(Schema.String),
  provisioned_by_app_id: Schema.NullOr(Schema.String),
  access_token_sealed: Schema.NullOr(Schema.String),
  refresh_token_sealed: Schema.NullOr(Schema.String),
  token_expires_at: Schema.NullOr(Schema.String),
  disconnected: Schema.Boolean,
  app_grant_released: Schema.Boolean,
  /** The merchant's custom commerce app the grant was made through (null: the platform's own app). */
  commerce_app_id: Schema.NullOr(Schema.String)
})
export type ConnectionRecord = typeof ConnectionRecord.Type

export interface SealedTokens {
  readonly accessTokenSealed: string
  readonly refreshTokenSealed: string | null
  readonly expiresAt: Date | null
  readonly scopes: ReadonlyArray<string>
}

export interface NewConnection {
  readonly profileId: string
  readonly provider: string
  readonly accountId: string
  readonly displayName: string
  readonly currency: string | null
  readonly timezone: string | null
  readonly providerUserId: string | null
  readonly tokens: SealedTokens
  readonly appId: string | null
  readonly handoffId: string | null
  readonly shop: string | null
  /** The merchant's custom commerce app the grant came through; absent or null: the platform's own app. */
  readonly commerceAppId?: string | null
  readonly status: string
  readonly statusReason: string | null
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class ConnectionsRepo extends Context.Service<ConnectionsRepo, {
  /** Live connections of a profile, oldest first, one more than `limit` to tell whether a page follows. */
  readonly list: (profileId: string, limit: number, after: Option.Option<Keyset>) => Repo<ReadonlyArray<Connection>>
  /** One connection of the profile as the wire shows it (live or not). */
  readonly view: (profileId: string, id: string) => Repo<Option.Option<Connection>>
  readonly find: (id: string) => Repo<Option.Option<ConnectionRecord>>
  /**
   * Creates the live connection of (profile, provider, account), or renews the one already live
   * (fresh tokens, status back to what the grant says): a reconnect keeps the connection's id.
   * In the caller's transaction. Answers the id and whether it was created.
   */
  readonly upsertFromGrant: (input: NewConnection) => Repo<{ readonly id: string; readonly created: boolean }>
  /** Of `accountIds`, those live on another profile of the same workspace. */
  readonly liveElsewhere: (
    profileId: string,
    provider: string,
    accountIds: ReadonlyArray<string>
  ) => Repo<ReadonlyArray<string>>
  /** Of `accountIds`, those live on this profile. */
  readonly liveHere: (profileId: string, provider: string, accountIds: ReadonlyArray<string>) => Repo<ReadonlyArray<string>>
  /**
   * The profile's newest connection on `provider` that is not disconnected (possibly awaiting a
   * reconnect): what a live proxy read goes through (decision 0061).
   */
  readonly currentOf: (profileId: string, provider: string) => Repo<Option.Option<ConnectionRecord>>
  /** Live connections on a provider account (every profile). */
  readonly liveForAccount: (provider: string, accountId: string) => Repo<ReadonlyArray<ConnectionRecord>>
  /** Marks a live connection `reconnect_required`; answers whether it changed (false when already so). */
  readonly markReconnectRequired: (id: string, reason: string) => Repo<boolean>
  /** Marks the connection disconnected (`status_reason` `reason`, default `disconnected`); answers whether this call did it. */
  readonly disconnect: (id: string, reason?: string) => Repo<boolean>
  /** The live connections made through the commerce app. */
  readonly liveForCommerceApp: (commerceAppId: string) => Repo<ReadonlyArray<ConnectionRecord>>
  /** The app gives up its grant on the connection; answers whether this call did it. */
  readonly releaseAppGrant: (id: string) => Repo<boolean>
  /** Stores refreshed tokens. */
  readonly updateTokens: (id: string, tokens: SealedTokens) => Repo<void>
  /** A sync job of the connection is running now. */
  readonly syncRunning: (id: string) => Repo<boolean>
  /** A sync of the connection finished: `last_synced_at` is now (decision 0058). */
  readonly markSynced: (id: string) => Repo<void>
  /** Deletes every connection of the profile (archiving it: non-audit data goes); what references them goes first. */
  readonly deleteForProfile: (profileId: string) => Repo<void>
  /** Runs `effect` in one transaction (the connection, its outbox row and its audit entry commit together). */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/ConnectionsRepo") {
  static readonly layer = Layer.effect(ConnectionsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const wireRows = decodeRows(Connection)
      const firstWire = decodeFirstRow(Connection)
      const records = decodeRows(ConnectionRecord)
      const firstRecord = decodeFirstRow(ConnectionRecord)
      const IdRow = Schema.Struct({ id: Schema.String, created: Schema.Boolean })
      const firstId = decodeFirstRow(IdRow)
      const AccountRow = Schema.Struct({ external_account_id: Schema.String })
      const accountRows = decodeRows(AccountRow)

      // Send health (decision 0097): a mailbox refusal recorded by ConnectionHealth shows as
      // `needs_action` with its code over a grant that is otherwise `active`; the grant's own states
      // (`reconnect_required`, `disconnected`) win. Read here so every reader sees one status.
      const sendRefusal = sql`(SELECT h.reason FROM connection_health h WHERE h.connection_id = c.id AND h.health = 'needs_action')`
      const status = sql`CASE WHEN c.status = 'active' AND ${sendRefusal} IS NOT NULL THEN 'needs_action' ELSE c.status END AS status`
      const statusReason = sql`CASE WHEN c.status = 'active' AND ${sendRefusal} IS NOT NULL THEN ${sendRefusal} ELSE c.status_reason END AS status_reason`
      const columns = sql`
        c.id, c.provider, ${status}, ${statusReason}, c.display_name,
        -- The add-on rule of the sync (and of credentials): a profile a person created has every feature.
        (c.provider_kind = 'adplatform' AND (COALESCE(e.enabled, false)
          OR (SELECT p.provisioned_by_app_id IS NULL FROM profiles p WHERE p.id = c.profile_id))) AS delivers_spend,
        c.external_account_id AS provider_account_id, c.currency, c.scopes,
        ${isoTimestamp(sql, "c.last_synced_at")} AS last_synced_at,
        ${isoTimestamp(sql, "c.created_at")} AS created_at`
      const recordColumns = sql`
        c.id, c.profile_id, p.workspace_id, c.provider, ${status}, c.external_account_id, c.app_id,
        p.provisioned_by_app_id, c.access_token_sealed, c.refresh_token_sealed,
        ${isoTimestamp(sql, "c.token_expires_at")} AS token_expires_at,
        (c.disconnected_at IS NOT NULL) AS disconnected, (c.app_grant_released_at IS NOT NULL) AS app_grant_released,
        c.commerce_app_id`

      const list = (profileId: string, limit: number, after: Option.Option<Keyset>) =>
        wireRows(Option.match(after, {
          onNone: () =>
            sql`SELECT ${columns} FROM connections c
                LEFT JOIN entitlements e ON e.profile_id = c.profile_id AND e.feature = 'svc_attribution'
                WHERE c.profile_id = ${profileId} AND c.disconnected_at IS NULL
                ORDER BY c.created_at, c.id LIMIT ${limit + 1}`,
          onSome: (keyset) =>
            sql`SELECT ${columns} FROM connections c
                LEFT JOIN entitlements e ON e.profile_id = c.profile_id AND e.feature = 'svc_attribution'
                WHERE c.profile_id = ${profileId} AND c.disconnected_at IS NULL
                  AND (c.created_at, c.id) > (${keyset.createdAt}::timestamptz, ${keyset.id}::uuid)
                ORDER BY c.created_at, c.id LIMIT ${limit + 1}`
        }))

      // An id that is not a uuid names nothing (and must not reach a uuid cast).
      const view = (profileId: string, id: string) =>
        !isUuid(id) ? Effect.succeed(Option.none()) : firstWire(sql`SELECT ${columns} FROM connections c
                      LEFT JOIN entitlements e ON e.profile_id = c.profile_id AND e.feature = 'svc_attribution'
                      WHERE c.profile_id = ${profileId} AND c.id = ${id}`)

      // Connected beats awaiting a reconnect: a live grant answers even beside a dead one.
      const currentOf = (profileId: string, provider: string) =>
        firstRecord(sql`SELECT ${recordColumns} FROM connections c JOIN profiles p ON p.id = c.profile_id
                        WHERE c.profile_id = ${profileId} AND c.provider = ${provider} AND c.disconnected_at IS NULL
                        ORDER BY (c.status = 'reconnect_required'), c.created_at DESC, c.id DESC LIMIT 1`)

      const find = (id: string) =>
        !isUuid(id) ? Effect.succeed(Option.none()) : firstRecord(sql`SELECT ${recordColumns} FROM connections c JOIN profiles p ON p.id = c.profile_id WHERE c.id = ${id}`)

      const upsertFromGrant = (input: NewConnection) =>
        Effect.flatMap(
          firstId(sql`
            INSERT INTO connections (id, profile_id, provider, provider_kind, external_account_id, display_name, status,
                                     status_reason, app_id, provider_user_id, currency, timezone, shop, scopes,
                                     access_token_sealed, refresh_token_sealed, token_expires_at, handoff_id,
                                     commerce_app_id)
            VALUES (${crypto.randomUUID()}, ${input.profileId}, ${input.provider}, ${input.provider}, ${input.accountId},
                    ${input.displayName}, ${input.status}, ${input.statusReason}, ${input.appId}, ${input.providerUserId},
                    ${input.currency}, ${input.timezone}, ${input.shop}, ${input.tokens.scopes}::text[],
                    ${input.tokens.accessTokenSealed}, ${input.tokens.refreshTokenSealed},
                    ${input.tokens.expiresAt?.toISOString() ?? null}::timestamptz, ${input.handoffId},
                    ${input.commerceAppId ?? null}::uuid)
            ON CONFLICT (profile_id, provider, external_account_id) WHERE disconnected_at IS NULL DO UPDATE SET
              display_name = EXCLUDED.display_name, status = EXCLUDED.status, status_reason = EXCLUDED.status_reason,
              app_id = COALESCE(EXCLUDED.app_id, connections.app_id), provider_user_id = EXCLUDED.provider_user_id,
              currency = EXCLUDED.currency, timezone = EXCLUDED.timezone, scopes = EXCLUDED.scopes,
              access_token_sealed = EXCLUDED.access_token_sealed, refresh_token_sealed = EXCLUDED.refresh_token_sealed,
              token_expires_at = EXCLUDED.token_expires_at, handoff_id = EXCLUDED.handoff_id,
              commerce_app_id = EXCLUDED.commerce_app_id, app_grant_released_at = NULL, updated_at = now()
            RETURNING id, (xmax = 0) AS created`),
          (row) => Option.match(row, { onNone: () => Effect.die("upsert answered no row"), onSome: Effect.succeed })
        )

      const liveElsewhere = (profileId: string, provider: string, accountIds: ReadonlyArray<string>) =>
        Effect.map(
          accountRows(sql`
            SELECT DISTINCT c.external_account_id FROM connections c
            JOIN profiles here ON here.id = ${profileId}
            JOIN profiles p ON p.id = c.profile_id AND p.workspace_id = here.workspace_id AND p.archived_at IS NULL
            WHERE c.provider = ${provider} AND c.profile_id <> ${profileId} AND c.disconnected_at IS NULL
              AND c.external_account_id = ANY(${accountIds}::text[])`),
          (rows) => rows.map((row) => row.external_account_id)
        )

      const liveHere = (profileId: string, provider: string, accountIds: ReadonlyArray<string>) =>
        Effect.map(
          accountRows(sql`
            SELECT external_account_id FROM connections
            WHERE profile_id = ${profileId} AND provider = ${provider} AND disconnected_at IS NULL
              AND external_account_id = ANY(${accountIds}::text[])`),
          (rows) => rows.map((row) => row.external_account_id)
        )

      const liveForAccount = (provider: string, accountId: string) =>
        Effect.flatMap(PushWorld, ({ profileId }) =>
          Effect.map(
            records(sql`SELECT ${recordColumns} FROM connections c JOIN profiles p ON p.id = c.profile_id
                    WHERE c.provider = ${provider} AND c.external_account_id = ${accountId} AND c.disconnected_at IS NULL
                    ORDER BY c.created_at, c.id`),
            // A sandbox push reaches its own world's profile only (./hooks/push-world.ts).
            (rows) => profileId === undefined ? rows : rows.filter((row) => row.profile_id === profileId)
          ))

      const markReconnectRequired = (id: string, reason: string) =>
        Effect.map(
          sql`UPDATE connections SET status = 'reconnect_required', status_reason = ${reason}, updated_at = now()
              WHERE id = ${id} AND disconnected_at IS NULL AND status <> 'reconnect_required' RETURNING id`,
          (rows) => rows.length > 0
        )

      const liveForCommerceApp = (commerceAppId: string) =>
        !isUuid(commerceAppId) ? Effect.succeed([]) : records(sql`
          SELECT ${recordColumns} FROM connections c JOIN profiles p ON p.id = c.profile_id
          WHERE c.commerce_app_id = ${commerceAppId} AND c.disconnected_at IS NULL
          ORDER BY c.created_at, c.id`)

      const disconnect = (id: string, reason = "disconnected") =>
        Effect.map(
          sql`UPDATE connections SET disconnected_at = now(), status = 'disconnected', status_reason = ${reason},
                access_token_sealed = NULL, refresh_token_sealed = NULL, updated_at = now()
              WHERE id = ${id} AND disconnected_at IS NULL RETURNING id`,
          (rows) => rows.length > 0
        )

      const releaseAppGrant = (id: string) =>
        Effect.map(
          sql`UPDATE connections SET app_grant_released_at = now(), updated_at = now()
              WHERE id = ${id} AND app_grant_released_at IS NULL RETURNING id`,
          (rows) => rows.length > 0
        )

      const updateTokens = (id: string, tokens: SealedTokens) =>
        Effect.asVoid(sql`
          UPDATE connections SET access_token_sealed = ${tokens.accessTokenSealed},
            refresh_token_sealed = COALESCE(${tokens.refreshTokenSealed}, refresh_token_sealed),
            token_expires_at = ${tokens.expiresAt?.toISOString() ?? null}::timestamptz,
            scopes = CASE WHEN cardinality(${tokens.scopes}::text[]) > 0 THEN ${tokens.scopes}::text[] ELSE scopes END,
            updated_at = now()
          WHERE id = ${id}`)

      const syncRunning = (id: string) =>
        Effect.map(
          sql`SELECT 1 AS running FROM sync_jobs WHERE connection_id = ${id} AND status = 'running' LIMIT 1`,
          (rows) => rows.length > 0
        )

      const markSynced = (id: string) =>
        Effect.asVoid(sql`UPDATE connections SET last_synced_at = now(), updated_at = now() WHERE id = ${id}`)

      const deleteForProfile = (profileId: string) => Effect.asVoid(sql`DELETE FROM connections WHERE profile_id = ${profileId}`)

      return {
        ...atDatabaseBoundary({
        list,
        view,
        find,
        currentOf,
        upsertFromGrant,
        liveElsewhere,
        liveHere,
        liveForAccount,
        markReconnectRequired,
        disconnect,
        liveForCommerceApp,
        releaseAppGrant,
        updateTokens,
        syncRunning,
        markSynced,
        deleteForProfile,
      }),
        // BEGIN and COMMIT fail with SqlError; the statements inside are already mapped.
        transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
