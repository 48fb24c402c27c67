/**
 * The owner of `ad_actions` (the action ledger, migration 0032). Also the ad actions' reads of
 * other domains' tables (never writes): the profile's ad-platform connections with their
 * granted scopes, the synced structure copy (ownership of an object and its status as a
 * fallback), and the workspace's owners and admins for the person on record.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import { isUuid } from "../../../schema/common.ts"
import type { AppliedByBasis } from "../../../schema/ad-actions.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

export type Level = "ad" | "ad_set" | "campaign"
export type ActionKind = "pause" | "resume" | "budget" | "rollback" | "url_tags"
export type ObjectStatus = "active" | "paused" | "archived" | "deleted"

const Budget = Schema.NullOr(Schema.Number)

export const ActionRow = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  connection_id: Schema.String,
  level: Schema.Literals(["ad", "ad_set", "campaign"]),
  object_id: Schema.String,
  action: Schema.Literals(["pause", "resume", "budget", "rollback", "url_tags"]),
  state: Schema.Literals(["pending", "applied", "no_change", "not_reversible", "failed"]),
  reason_code: Schema.NullOr(Schema.String),
  applied_by: Schema.NullOr(Schema.String),
  applied_by_basis: Schema.NullOr(Schema.Literals(["applied_by", "person", "app_shadow_owner"])),
  pre_status: Schema.Literals(["active", "paused", "archived", "deleted"]),
  pre_daily_budget_minor: Budget,
  pre_lifetime_budget_minor: Budget,
  written_status: Schema.NullOr(Schema.Literals(["active", "paused"])),
  written_daily_budget_minor: Budget,
  written_lifetime_budget_minor: Budget,
  affected_ads_count: Schema.NullOr(Schema.Number),
  rollback_of: Schema.NullOr(Schema.String),
  /** URL-tag changes (migration 0040): the ad's creative before the call and the one the row put it on. */
  pre_creative_id: Schema.NullOr(Schema.String),
  written_creative_id: Schema.NullOr(Schema.String),
  created_at: Schema.String
})
export type ActionRow = typeof ActionRow.Type

export interface NewAction {
  readonly profileId: string
  readonly connectionId: string
  readonly level: Level
  readonly objectId: string
  readonly action: ActionKind
  readonly appliedBy: string | null
  readonly appliedByBasis: AppliedByBasis | null
  readonly pre: { readonly status: ObjectStatus; readonly daily: number | null; readonly lifetime: number | null }
  readonly written: { readonly status: "active" | "paused" | null; readonly daily: number | null; readonly lifetime: number | null }
  readonly affectedAdsCount: number | null
  readonly rollbackOf: string | null
  /** URL-tag changes: the creative before, and the one written (null until the platform named it). */
  readonly creative?: { readonly pre: string | null; readonly written: string | null }
}

export type Settled = "applied" | "no_change" | "not_reversible" | "failed"

export const AdConnection = Schema.Struct({
  id: Schema.String,
  status: Schema.String,
  external_account_id: Schema.NullOr(Schema.String),
  scopes: Schema.Array(Schema.String)
})
export type AdConnection = typeof AdConnection.Type

/** `ad_set_id`: the ad set's platform id (the object's own for an ad set; an ad's ad set; null for a campaign). */
const SyncedObject = Schema.Struct({
  status: Schema.String,
  connection_id: Schema.NullOr(Schema.String),
  ad_set_id: Schema.NullOr(Schema.String)
})

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class AdActionsRepo extends Context.Service<AdActionsRepo, {
  /** Writes a `pending` row before the provider is called (or a settled one when nothing is sent); answers its id. */
  readonly insert: (action: NewAction, state: "pending" | Settled, reasonCode?: string | null) => Repo<string>
  /** Settles a pending row once the provider answered (a URL-tag change also records the creative the platform created). */
  readonly settle: (id: string, state: Settled, writtenCreativeId?: string | null) => Repo<void>
  readonly find: (profileId: string, id: string) => Repo<Option.Option<ActionRow>>
  /**
   * The newest applied service pause of the object not undone since (no applied resume or
   * rollback after it): what a campaign resume undoes.
   */
  readonly openPause: (profileId: string, level: Level, objectId: string) => Repo<Option.Option<ActionRow>>
  /**
   * The newest applied URL-tag change of the ad that no applied rollback undid: what the URL-tag
   * undo puts back.
   */
  readonly openUrlTagChange: (profileId: string, adId: string) => Repo<Option.Option<ActionRow>>
  /** The profile's newest URL-tag changes and their rollbacks, settled or pending, newest first. */
  readonly urlTagChanges: (profileId: string, limit: number) => Repo<ReadonlyArray<ActionRow>>
  /** The profile's ad-platform connections not disconnected, with their granted scopes. */
  readonly connections: (profileId: string) => Repo<ReadonlyArray<AdConnection>>
  /** The object in the profile's synced structure copy (status and connection), if there. */
  readonly synced: (profileId: string, level: Level, platformId: string) => Repo<Option.Option<typeof SyncedObject.Type>>
  /** The workspace's active owner (the oldest when several). */
  readonly activeOwner: (workspaceId: string) => Repo<Option.Option<string>>
  /** The person's active workspace role, if a member. */
  readonly workspaceRole: (workspaceId: string, userId: string) => Repo<Option.Option<string>>
}>()("svc/AdActionsRepo") {
  static readonly layer = Layer.effect(AdActionsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      // bigint columns arrive as strings from PostgreSQL: read as float8 (budgets stay far below 2^53).
      const columns = sql.literal(`id, profile_id, connection_id, level, object_id, action, state, reason_code, applied_by,
        applied_by_basis, pre_status, pre_daily_budget_minor::float8 AS pre_daily_budget_minor,
        pre_lifetime_budget_minor::float8 AS pre_lifetime_budget_minor, written_status,
        written_daily_budget_minor::float8 AS written_daily_budget_minor,
        written_lifetime_budget_minor::float8 AS written_lifetime_budget_minor, affected_ads_count, rollback_of,
        pre_creative_id, written_creative_id`)

      const insert = (action: NewAction, state: "pending" | Settled, reasonCode: string | null = null) => {
        const id = crypto.randomUUID()
        return Effect.as(
          sql`INSERT INTO ad_actions (id, profile_id, connection_id, level, object_id, action, state, reason_code, applied_by,
                                      applied_by_basis, pre_status, pre_daily_budget_minor, pre_lifetime_budget_minor,
                                      written_status, written_daily_budget_minor, written_lifetime_budget_minor,
                                      affected_ads_count, rollback_of, pre_creative_id, written_creative_id, settled_at)
              VALUES (${id}, ${action.profileId}, ${action.connectionId}, ${action.level}, ${action.objectId}, ${action.action},
                      ${state}, ${reasonCode}, ${action.appliedBy}, ${action.appliedByBasis}, ${action.pre.status},
                      ${action.pre.daily}, ${action.pre.lifetime}, ${action.written.status}, ${action.written.daily},
                      ${action.written.lifetime}, ${action.affectedAdsCount}, ${action.rollbackOf},
                      ${action.creative?.pre ?? null}, ${action.creative?.written ?? null},
                      ${state === "pending" ? null : new Date().toISOString()}::timestamptz)`,
          id
        )
      }

      const settle = (id: string, state: Settled, writtenCreativeId: string | null = null) =>
        Effect.asVoid(sql`UPDATE ad_actions SET state = ${state}, settled_at = now(),
                            written_creative_id = COALESCE(${writtenCreativeId}, written_creative_id)
                          WHERE id = ${id} AND state = 'pending'`)

      const findRow = SqlSchema.findOneOption({
        Request: Schema.Struct({ profileId: Schema.String, id: Schema.String }),
        Result: ActionRow,
        execute: ({ profileId, id }) =>
          sql`SELECT ${columns}, ${isoTimestamp(sql, "created_at")} AS created_at
              FROM ad_actions WHERE profile_id = ${profileId} AND id = ${id}`
      })
      const find = (profileId: string, id: string) =>
        isUuid(id) ? findRow({ profileId, id }) : Effect.succeed(Option.none<ActionRow>())

      const openPauseRow = SqlSchema.findOneOption({
        Request: Schema.Struct({ profileId: Schema.String, level: Schema.String, objectId: Schema.String }),
        Result: ActionRow,
        execute: ({ profileId, level, objectId }) =>
          sql`SELECT ${columns}, ${isoTimestamp(sql, "a.created_at")} AS created_at
              FROM ad_actions a
              WHERE a.profile_id = ${profileId} AND a.level = ${level} AND a.object_id = ${objectId}
                AND a.action = 'pause' AND a.state = 'applied'
                AND NOT EXISTS (SELECT 1 FROM ad_actions u WHERE u.rollback_of = a.id AND u.state = 'applied')
                AND NOT EXISTS (SELECT 1 FROM ad_actions r WHERE r.profile_id = a.profile_id AND r.level = a.level
                                  AND r.object_id = a.object_id AND r.action = 'resume' AND r.state = 'applied'
                                  AND r.created_at > a.created_at)
              ORDER BY a.created_at DESC LIMIT 1`
      })
      const openPause = (profileId: string, level: Level, objectId: string) => openPauseRow({ profileId, level, objectId })

      const openUrlTagRow = SqlSchema.findOneOption({
        Request: Schema.Struct({ profileId: Schema.String, adId: Schema.String }),
        Result: ActionRow,
        execute: ({ adId, profileId }) =>
          sql`SELECT ${columns}, ${isoTimestamp(sql, "a.created_at")} AS created_at
              FROM ad_actions a
              WHERE a.profile_id = ${profileId} AND a.level = 'ad' AND a.object_id = ${adId}
                AND a.action = 'url_tags' AND a.state = 'applied'
                AND NOT EXISTS (SELECT 1 FROM ad_actions u WHERE u.rollback_of = a.id AND u.state = 'applied')
              ORDER BY a.created_at DESC, a.id DESC LIMIT 1`
      })
      const openUrlTagChange = (profileId: string, adId: string) => openUrlTagRow({ profileId, adId })

      const urlTagRows = SqlSchema.findAll({
        Request: Schema.Struct({ profileId: Schema.String, limit: Schema.Number }),
        Result: ActionRow,
        execute: ({ limit, profileId }) =>
          sql`SELECT ${columns}, ${isoTimestamp(sql, "a.created_at")} AS created_at
              FROM ad_actions a
              WHERE a.profile_id = ${profileId} AND a.level = 'ad'
                AND (a.action = 'url_tags' OR (a.action = 'rollback' AND a.written_creative_id IS NOT NULL)
                     OR EXISTS (SELECT 1 FROM ad_actions o WHERE o.id = a.rollback_of AND o.action = 'url_tags'))
              ORDER BY a.created_at DESC, a.id DESC LIMIT ${limit}`
      })
      const urlTagChanges = (profileId: string, limit: number) => urlTagRows({ profileId, limit })

      const connections = SqlSchema.findAll({
        Request: Schema.String,
        Result: AdConnection,
        execute: (profileId) =>
          sql`SELECT id, status, external_account_id, scopes FROM connections
              WHERE profile_id = ${profileId} AND provider = 'adplatform' AND disconnected_at IS NULL
              ORDER BY created_at, id`
      })

      const syncedRow = SqlSchema.findOneOption({
        Request: Schema.Struct({ profileId: Schema.String, platformId: Schema.String, level: Schema.String }),
        Result: SyncedObject,
        execute: ({ level, platformId, profileId }) =>
          level === "campaign"
            ? sql`SELECT status, connection_id, NULL::text AS ad_set_id FROM ad_campaigns
                  WHERE profile_id = ${profileId} AND platform_id = ${platformId}`
            : level === "ad_set"
            // An ad set is not editable when its campaign is archived or deleted either.
            ? sql`SELECT CASE WHEN c.status IN ('archived', 'deleted') THEN c.status ELSE s.status END AS status, s.connection_id,
                         s.platform_id AS ad_set_id
                  FROM ad_sets s JOIN ad_campaigns c ON c.id = s.campaign_id
                  WHERE s.profile_id = ${profileId} AND s.platform_id = ${platformId}`
            : sql`SELECT a.status, a.connection_id, s.platform_id AS ad_set_id
                  FROM ads a JOIN ad_sets s ON s.id = a.ad_set_id
                  WHERE a.profile_id = ${profileId} AND a.platform_id = ${platformId}`
      })
      const synced = (profileId: string, level: Level, platformId: string) => syncedRow({ profileId, level, platformId })

      const owner = SqlSchema.findOneOption({
        Request: Schema.String,
        Result: Schema.Struct({ user_id: Schema.String }),
        execute: (workspaceId) =>
          sql`SELECT user_id FROM workspace_memberships
              WHERE workspace_id = ${workspaceId} AND role = 'owner' AND removed_at IS NULL
              ORDER BY created_at, user_id LIMIT 1`
      })
      const activeOwner = (workspaceId: string) => Effect.map(owner(workspaceId), Option.map((row) => row.user_id))

      const role = SqlSchema.findOneOption({
        Request: Schema.Struct({ workspaceId: Schema.String, userId: Schema.String }),
        Result: Schema.Struct({ role: Schema.String }),
        execute: ({ userId, workspaceId }) =>
          sql`SELECT role FROM workspace_memberships
              WHERE workspace_id = ${workspaceId} AND user_id = ${userId} AND removed_at IS NULL`
      })
      const workspaceRole = (workspaceId: string, userId: string) =>
        isUuid(userId) ? Effect.map(role({ workspaceId, userId }), Option.map((row) => row.role)) : Effect.succeed(Option.none<string>())

      return atDatabaseBoundary({ insert, settle, find, openPause, openUrlTagChange, urlTagChanges, connections, synced, activeOwner, workspaceRole })
    })
  )
}
