/** The owner of `export_rules`: which conversions go out, to which destinations, under which platform names. */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export const RuleRow = Schema.Struct({
  id: Schema.String,
  conversion_key: Schema.String,
  destination_ids: Schema.NullOr(Schema.Array(Schema.String)),
  platform_event_name_overrides: Schema.Record(Schema.String, Schema.NullOr(Schema.String)),
  enabled: Schema.Boolean,
  created_at: Schema.String,
  updated_at: Schema.String
})
export type RuleRow = typeof RuleRow.Type

export interface RuleValues {
  readonly destinationIds: ReadonlyArray<string> | null
  readonly overrides: Readonly<Record<string, string | null>>
  readonly enabled: boolean
}

export class RulesRepo extends Context.Service<RulesRepo, {
  /** Inserts unless the profile already has a rule for the conversion key; answers whether it did. */
  readonly insert: (id: string, profileId: string, conversionKey: string, values: RuleValues) => Repo<boolean>
  readonly find: (profileId: string, id: string) => Repo<Option.Option<RuleRow>>
  readonly findByKey: (profileId: string, conversionKey: string) => Repo<Option.Option<RuleRow>>
  readonly list: (profileId: string, limit: number, after: Option.Option<{ readonly createdAt: string; readonly id: string }>) => Repo<ReadonlyArray<RuleRow>>
  readonly update: (profileId: string, id: string, values: RuleValues) => Repo<void>
}>()("svc/RulesRepo") {
  static readonly layer = Layer.effect(RulesRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const columns = sql`id, conversion_key, destination_ids::text[] AS destination_ids, platform_event_name_overrides, enabled,
        ${isoTimestamp(sql, "created_at")} AS created_at, ${isoTimestamp(sql, "updated_at")} AS updated_at`
      const rows = decodeRows(RuleRow)
      const first = decodeFirstRow(RuleRow)
      const insert = (id: string, profileId: string, conversionKey: string, values: RuleValues) =>
        Effect.map(
          sql`
            INSERT INTO export_rules (id, profile_id, conversion_key, destination_ids, platform_event_name_overrides, enabled)
            VALUES (${id}, ${profileId}, ${conversionKey}, ${values.destinationIds}::uuid[], ${JSON.stringify(values.overrides)}::jsonb,
                    ${values.enabled})
            ON CONFLICT (profile_id, conversion_key) DO NOTHING RETURNING id`,
          (inserted) => inserted.length === 1
        )
      const find = (profileId: string, id: string) =>
        first(sql`SELECT ${columns} FROM export_rules WHERE profile_id = ${profileId} AND id = ${id}`)
      const findByKey = (profileId: string, conversionKey: string) =>
        first(sql`SELECT ${columns} FROM export_rules WHERE profile_id = ${profileId} AND conversion_key = ${conversionKey}`)
      const list = (profileId: string, limit: number, after: Option.Option<{ readonly createdAt: string; readonly id: string }>) =>
        rows(sql`
          SELECT ${columns} FROM export_rules WHERE profile_id = ${profileId}
            ${Option.match(after, { onNone: () => sql``, onSome: (k) => sql`AND (created_at, id) > (${k.createdAt}::timestamptz, ${k.id}::uuid)` })}
          ORDER BY created_at, id LIMIT ${limit + 1}`)
      const update = (profileId: string, id: string, values: RuleValues) =>
        Effect.asVoid(sql`
          UPDATE export_rules SET destination_ids = ${values.destinationIds}::uuid[],
            platform_event_name_overrides = ${JSON.stringify(values.overrides)}::jsonb, enabled = ${values.enabled}, updated_at = now()
          WHERE profile_id = ${profileId} AND id = ${id}`)
      return atDatabaseBoundary({ insert, find, findByKey, list, update })
    })
  )
}
