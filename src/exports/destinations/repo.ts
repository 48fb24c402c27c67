/**
 * The owner of `export_destinations`. Two live destinations of a profile never share (kind,
 * dataset): the unique index decides, and a refused write names the one it would match.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { DestinationKind, PlatformSafeTarget } from "../../../schema/exports.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export const DestinationRow = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  kind: DestinationKind,
  connection_id: Schema.String,
  dataset_id: Schema.String,
  name: Schema.String,
  clean_dataset: Schema.Boolean,
  status: Schema.Literals(["active", "disabled"]),
  platform_safe_target: PlatformSafeTarget,
  created_at: Schema.String,
  updated_at: Schema.String
})
export type DestinationRow = typeof DestinationRow.Type

export interface NewDestination {
  readonly id: string
  readonly profileId: string
  readonly kind: DestinationKind
  readonly connectionId: string
  readonly datasetId: string
  readonly name: string
  readonly cleanDataset: boolean
}

export interface DestinationChanges {
  readonly dataset_id?: string
  readonly name?: string
  readonly status?: "active" | "disabled"
  readonly clean_dataset?: boolean
}

export class DestinationsRepo extends Context.Service<DestinationsRepo, {
  /** Inserts unless a live destination of the profile has the same (kind, dataset); answers whether it did. */
  readonly insert: (row: NewDestination) => Repo<boolean>
  /** The live destination of the profile with this (kind, dataset), other than `exceptId`. */
  readonly conflicting: (profileId: string, kind: string, datasetId: string, exceptId: string | null) => Repo<Option.Option<string>>
  readonly find: (profileId: string, id: string) => Repo<Option.Option<DestinationRow>>
  /** Live destinations of the profile, oldest first, one more than `limit`, after `(created_at, id)`. */
  readonly list: (profileId: string, limit: number, after: Option.Option<{ readonly createdAt: string; readonly id: string }>) => Repo<ReadonlyArray<DestinationRow>>
  /** Every live destination of the profile (the pipeline's routing). */
  readonly live: (profileId: string) => Repo<ReadonlyArray<DestinationRow>>
  /** Applies the changes, unless the destination is gone or a live (kind, dataset) match refuses them. */
  readonly update: (profileId: string, id: string, changes: DestinationChanges) => Repo<"updated" | "missing" | "conflict">
  /** Soft delete: ledger rows keep pointing at it. */
  readonly remove: (profileId: string, id: string) => Repo<boolean>
  /** Whether the ad-platform connection belongs to the profile and is live. */
  readonly connectionOfProfile: (profileId: string, connectionId: string) => Repo<boolean>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/DestinationsRepo") {
  static readonly layer = Layer.effect(DestinationsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const columns = sql`
        d.id, d.profile_id, d.kind, d.connection_id, d.dataset_id, d.name, d.clean_dataset, d.status, p.platform_safe_target,
        ${isoTimestamp(sql, "d.created_at")} AS created_at, ${isoTimestamp(sql, "d.updated_at")} AS updated_at`
      const rows = decodeRows(DestinationRow)
      const first = decodeFirstRow(DestinationRow)
      const firstId = decodeFirstRow(Schema.Struct({ id: Schema.String }))

      const insert = (row: NewDestination) =>
        Effect.map(
          sql`
            INSERT INTO export_destinations (id, profile_id, kind, connection_id, dataset_id, name, clean_dataset)
            VALUES (${row.id}, ${row.profileId}, ${row.kind}, ${row.connectionId}, ${row.datasetId}, ${row.name}, ${row.cleanDataset})
            ON CONFLICT (profile_id, kind, dataset_id) WHERE deleted_at IS NULL DO NOTHING
            RETURNING id`,
          (inserted) => inserted.length === 1
        )

      const conflicting = (profileId: string, kind: string, datasetId: string, exceptId: string | null) =>
        Effect.map(
          firstId(sql`
            SELECT id FROM export_destinations
            WHERE profile_id = ${profileId} AND kind = ${kind} AND dataset_id = ${datasetId} AND deleted_at IS NULL
              AND (${exceptId}::uuid IS NULL OR id <> ${exceptId}::uuid)
            LIMIT 1`),
          Option.map((r) => r.id)
        )

      const find = (profileId: string, id: string) =>
        first(sql`
          SELECT ${columns} FROM export_destinations d JOIN profiles p ON p.id = d.profile_id
          WHERE d.profile_id = ${profileId} AND d.id = ${id} AND d.deleted_at IS NULL`)

      const list = (profileId: string, limit: number, after: Option.Option<{ readonly createdAt: string; readonly id: string }>) =>
        rows(sql`
          SELECT ${columns} FROM export_destinations d JOIN profiles p ON p.id = d.profile_id
          WHERE d.profile_id = ${profileId} AND d.deleted_at IS NULL
            ${Option.match(after, { onNone: () => sql``, onSome: (k) => sql`AND (d.created_at, d.id) > (${k.createdAt}::timestamptz, ${k.id}::uuid)` })}
          ORDER BY d.created_at, d.id LIMIT ${limit + 1}`)

      const live = (profileId: string) =>
        rows(sql`
          SELECT ${columns} FROM export_destinations d JOIN profiles p ON p.id = d.profile_id
          WHERE d.profile_id = ${profileId} AND d.deleted_at IS NULL ORDER BY d.created_at, d.id`)

      const update = (profileId: string, id: string, changes: DestinationChanges) =>
        sql`
          UPDATE export_destinations SET
            dataset_id = COALESCE(${changes.dataset_id ?? null}, dataset_id),
            name = COALESCE(${changes.name ?? null}, name),
            status = COALESCE(${changes.status ?? null}, status),
            clean_dataset = COALESCE(${changes.clean_dataset ?? null}::boolean, clean_dataset),
            updated_at = now()
          WHERE profile_id = ${profileId} AND id = ${id} AND deleted_at IS NULL
          RETURNING id`.pipe(
          Effect.map((updated): "updated" | "missing" => (updated.length === 1 ? "updated" : "missing")),
          // Another write took the (kind, dataset) between the check and this statement: the index refuses it.
          Effect.catchIf(
            (error) => error.reason._tag === "ConstraintError",
            () => Effect.succeed("conflict" as const)
          )
        )

      const remove = (profileId: string, id: string) =>
        Effect.map(
          sql`
            UPDATE export_destinations SET deleted_at = now(), updated_at = now()
            WHERE profile_id = ${profileId} AND id = ${id} AND deleted_at IS NULL RETURNING id`,
          (removed) => removed.length === 1
        )

      const connectionOfProfile = (profileId: string, connectionId: string) =>
        Effect.map(
          sql`
            SELECT 1 AS one FROM connections
            WHERE id = ${connectionId} AND profile_id = ${profileId} AND provider_kind = 'adplatform'`,
          (found) => found.length === 1
        )

      return {
        ...atDatabaseBoundary({ insert, conflicting, find, list, live, update, remove, connectionOfProfile }),
        transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
