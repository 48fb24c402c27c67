/**
 * The owner of `webhook_subscriptions` (decision 0076): a profile's endpoints, their sealed
 * signing secrets, their state (`active`, `paused`, `disabled`), and what the delivery fan-out
 * needs to know of them.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../platform/database.ts"

export const SubscriptionRow = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  workspace_id: Schema.String,
  api_key_id: Schema.NullOr(Schema.String),
  oauth_app_id: Schema.NullOr(Schema.String),
  url: Schema.String,
  description: Schema.NullOr(Schema.String),
  event_types: Schema.Array(Schema.String),
  status: Schema.Literals(["active", "paused", "disabled"]),
  status_reason: Schema.NullOr(Schema.String),
  secret_sealed: Schema.String,
  previous_secret_sealed: Schema.NullOr(Schema.String),
  previous_secret_expires_at: Schema.NullOr(Schema.String),
  /** The secret before the previous one, while its own grace lasts (null after it). */
  older_secret_sealed: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})
export type SubscriptionRow = typeof SubscriptionRow.Type

/** A subscription as the fan-out sees it: may it open the contact of `outcome.recorded`? */
export const FanOutSubscription = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  oauth_app_id: Schema.NullOr(Schema.String),
  event_types: Schema.Array(Schema.String),
  contact_allowed: Schema.Boolean,
  /** The profile is on the attribution tier: `outcome.recorded` is delivered (the replay reads empty otherwise). */
  attribution_enabled: Schema.Boolean
})
export type FanOutSubscription = typeof FanOutSubscription.Type

export interface NewSubscription {
  readonly id: string
  readonly profileId: string
  readonly workspaceId: string
  readonly apiKeyId: string | null
  readonly oauthAppId: string | null
  readonly url: string
  readonly description: string | null
  readonly eventTypes: ReadonlyArray<string>
  readonly secretSealed: string
}

export interface SubscriptionChange {
  readonly url?: string
  readonly description?: string | null
  readonly eventTypes?: ReadonlyArray<string>
  readonly status?: "active" | "paused"
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class WebhookSubscriptionsRepo extends Context.Service<WebhookSubscriptionsRepo, {
  readonly insert: (row: NewSubscription) => Repo<SubscriptionRow>
  /** The profile's live subscription, locked for the caller's transaction. */
  readonly find: (profileId: string, id: string) => Repo<Option.Option<SubscriptionRow>>
  /** A live subscription by id alone (the delivery worker). */
  readonly byId: (id: string) => Repo<Option.Option<SubscriptionRow>>
  /** The live ones of these subscriptions (one round of the delivery worker). */
  readonly byIds: (ids: ReadonlyArray<string>) => Repo<ReadonlyArray<SubscriptionRow>>
  readonly list: (profileId: string, after: Option.Option<{ readonly at: string; readonly id: string }>, limit: number) => Repo<ReadonlyArray<SubscriptionRow>>
  readonly update: (profileId: string, id: string, change: SubscriptionChange) => Repo<Option.Option<SubscriptionRow>>
  /** A new secret; the current one keeps signing until `graceSeconds` from now, a still-live previous one until its own expiry. */
  readonly rotate: (profileId: string, id: string, secretSealed: string, graceSeconds: number) => Repo<Option.Option<SubscriptionRow>>
  readonly remove: (profileId: string, id: string) => Repo<boolean>
  /** The endpoint answered 410: no more deliveries until the caller sets it `active` again. */
  readonly disable: (id: string, reason: string) => Repo<void>
  /** The workspace's archival pauses every subscription of its profiles (api-concepts.md, Profile lifecycle). */
  readonly pauseForWorkspace: (workspaceId: string) => Repo<void>
  /**
   * Paused subscriptions whose expired backlog was dropped (decision 0120): `status_reason` becomes
   * `reason` where none is set (a workspace's archival keeps its own).
   */
  readonly markBacklogDropped: (ids: ReadonlyArray<string>, reason: string) => Repo<void>
  /** Active and paused subscriptions of these profiles (a paused one's deliveries wait), with what their credential opens. */
  readonly forFanOut: (profileIds: ReadonlyArray<string>) => Repo<ReadonlyArray<FanOutSubscription>>
}>()("svc/WebhookSubscriptionsRepo") {
  static readonly layer = Layer.effect(WebhookSubscriptionsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const columns = sql.literal(`id, profile_id, workspace_id, api_key_id, oauth_app_id, url, description, event_types,
        status, status_reason, secret_sealed, previous_secret_sealed,
        CASE WHEN previous_secret_expires_at > now()
             THEN to_char(previous_secret_expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') END AS previous_secret_expires_at,
        CASE WHEN older_secret_expires_at > now() THEN older_secret_sealed END AS older_secret_sealed,
        to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at,
        to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS updated_at`)
      const one = decodeFirstRow(SubscriptionRow)
      const many = decodeRows(SubscriptionRow)

      const insert = (row: NewSubscription) =>
        Effect.flatMap(
          one(sql`
            INSERT INTO webhook_subscriptions
              (id, profile_id, workspace_id, api_key_id, oauth_app_id, url, description, event_types, status, secret_sealed)
            VALUES (${row.id}, ${row.profileId}, ${row.workspaceId}, ${row.apiKeyId}, ${row.oauthAppId}, ${row.url},
                    ${row.description}, ${[...row.eventTypes]}::text[], 'active', ${row.secretSealed})
            RETURNING ${columns}`),
          (found) => Option.match(found, { onNone: () => Effect.die("the insert returned no row"), onSome: Effect.succeed })
        )

      const find = (profileId: string, id: string) =>
        one(sql`SELECT ${columns} FROM webhook_subscriptions
                WHERE id = ${id} AND profile_id = ${profileId} AND deleted_at IS NULL FOR UPDATE`)

      const byId = (id: string) =>
        one(sql`SELECT ${columns} FROM webhook_subscriptions WHERE id = ${id} AND deleted_at IS NULL`)

      const byIds = (ids: ReadonlyArray<string>) =>
        ids.length === 0 ? Effect.succeed([]) : many(sql`
          SELECT ${columns} FROM webhook_subscriptions WHERE id = ANY(${[...ids]}::uuid[]) AND deleted_at IS NULL`)

      const list = (profileId: string, after: Option.Option<{ readonly at: string; readonly id: string }>, limit: number) =>
        many(sql`
          SELECT ${columns} FROM webhook_subscriptions
          WHERE profile_id = ${profileId} AND deleted_at IS NULL
            AND ${Option.match(after, {
          onNone: () => sql`true`,
          onSome: (keyset) => sql`(created_at, id) > (${keyset.at}::timestamptz, ${keyset.id}::uuid)`
        })}
          ORDER BY created_at, id
          LIMIT ${limit + 1}`)

      const update = (profileId: string, id: string, change: SubscriptionChange) =>
        one(sql`
          UPDATE webhook_subscriptions SET
            url = COALESCE(${change.url ?? null}, url),
            description = CASE WHEN ${change.description !== undefined} THEN ${change.description ?? null} ELSE description END,
            event_types = COALESCE(${change.eventTypes === undefined ? null : [...change.eventTypes]}::text[], event_types),
            status = COALESCE(${change.status ?? null}, status),
            status_reason = CASE WHEN ${change.status !== undefined} THEN NULL ELSE status_reason END,
            updated_at = now()
          WHERE id = ${id} AND profile_id = ${profileId} AND deleted_at IS NULL
          RETURNING ${columns}`)

      const rotate = (profileId: string, id: string, secretSealed: string, graceSeconds: number) =>
        one(sql`
          UPDATE webhook_subscriptions SET
            -- The previous secret, while still live, stays until its own expiry (a retried rotation drops nothing).
            older_secret_sealed = CASE WHEN previous_secret_expires_at > now() THEN previous_secret_sealed END,
            older_secret_expires_at = CASE WHEN previous_secret_expires_at > now() THEN previous_secret_expires_at END,
            previous_secret_sealed = secret_sealed,
            previous_secret_expires_at = now() + make_interval(secs => ${graceSeconds}),
            secret_sealed = ${secretSealed},
            updated_at = now()
          WHERE id = ${id} AND profile_id = ${profileId} AND deleted_at IS NULL
          RETURNING ${columns}`)

      const remove = (profileId: string, id: string) =>
        Effect.map(
          sql`UPDATE webhook_subscriptions SET deleted_at = now(), updated_at = now()
              WHERE id = ${id} AND profile_id = ${profileId} AND deleted_at IS NULL RETURNING id`,
          (rows) => rows.length > 0
        )

      const disable = (id: string, reason: string) =>
        Effect.asVoid(sql`
          UPDATE webhook_subscriptions SET status = 'disabled', status_reason = ${reason}, updated_at = now()
          WHERE id = ${id} AND deleted_at IS NULL AND status = 'active'`)

      const pauseForWorkspace = (workspaceId: string) =>
        Effect.asVoid(sql`
          UPDATE webhook_subscriptions SET status = 'paused', status_reason = 'workspace_archived', updated_at = now()
          WHERE workspace_id = ${workspaceId} AND deleted_at IS NULL AND status = 'active'`)

      const markBacklogDropped = (ids: ReadonlyArray<string>, reason: string) =>
        ids.length === 0 ? Effect.void : Effect.asVoid(sql`
          UPDATE webhook_subscriptions SET status_reason = ${reason}, updated_at = now()
          WHERE id = ANY(${[...ids]}::uuid[]) AND deleted_at IS NULL AND status = 'paused' AND status_reason IS NULL`)

      const fanOutRows = decodeRows(FanOutSubscription)
      // The contact opens when the credential behind the subscription holds `customers:read` now:
      // for an app, any live key of the app on the profile (keys are reissued after grant changes);
      // otherwise the key that registered it.
      const forFanOut = (profileIds: ReadonlyArray<string>) =>
        profileIds.length === 0 ? Effect.succeed([]) : fanOutRows(sql`
          SELECT s.id, s.profile_id, s.oauth_app_id, s.event_types,
                 EXISTS (
                   SELECT 1 FROM api_keys k
                   WHERE k.profile_id = s.profile_id AND k.revoked_at IS NULL
                     AND (k.expires_at IS NULL OR k.expires_at > now())
                     AND 'customers:read' = ANY(k.scopes)
                     AND (CASE WHEN s.oauth_app_id IS NOT NULL THEN k.oauth_app_id = s.oauth_app_id ELSE k.id = s.api_key_id END)
                 ) AS contact_allowed,
                 (p.provisioned_by_app_id IS NULL OR COALESCE((
                   SELECT e.enabled FROM entitlements e WHERE e.profile_id = p.id AND e.feature = 'svc_attribution'), false)
                 ) AS attribution_enabled
          FROM webhook_subscriptions s
          JOIN profiles p ON p.id = s.profile_id
          -- The same subscriptions as webhook_topic_wanted's (migration 0081): an outbox row none of
          -- them lists is written published and never reaches this read (decision 0156).
          WHERE s.profile_id = ANY(${[...profileIds]}::uuid[]) AND s.deleted_at IS NULL AND s.status <> 'disabled'
          ORDER BY s.created_at, s.id`)

      return atDatabaseBoundary({ insert, find, byId, byIds, list, update, rotate, remove, disable, pauseForWorkspace, markBacklogDropped, forFanOut })
    })
  )
}
