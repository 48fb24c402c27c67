/** The owner of `data_source_datasets`: the dataset each data source of a profile is wired to. */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { DataSource } from "../../../schema/platform-safe.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../platform/database.ts"

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export const SourceRow = Schema.Struct({
  source: DataSource,
  account_id: Schema.String,
  dataset_id: Schema.String,
  destination_id: Schema.NullOr(Schema.String)
})
export type SourceRow = typeof SourceRow.Type

export class DataSourcesRepo extends Context.Service<DataSourcesRepo, {
  readonly find: (profileId: string, source: DataSource) => Repo<Option.Option<SourceRow>>
  /** Records the source's dataset (first writer wins); answers the stored row. */
  readonly save: (profileId: string, row: SourceRow) => Repo<Option.Option<SourceRow>>
  readonly setDestination: (profileId: string, source: DataSource, destinationId: string) => Repo<void>
  readonly all: (profileId: string) => Repo<ReadonlyArray<SourceRow>>
  /** Attribution-eligible outcomes of the last 30 days an enabled rule reaching the destination would export. */
  readonly preview30d: (profileId: string, destinationId: string) => Repo<number>
  /** Other profiles with a live destination on the dataset: those of the workspace by id, and whether any other exists. */
  readonly sharing: (profileId: string, datasetId: string) => Repo<{ readonly sameWorkspace: ReadonlyArray<string>; readonly any: boolean }>
}>()("svc/DataSourcesRepo") {
  static readonly layer = Layer.effect(DataSourcesRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const first = decodeFirstRow(SourceRow)
      const rows = decodeRows(SourceRow)
      const count = decodeRows(Schema.Struct({ n: Schema.Number }))
      const shared = decodeRows(Schema.Struct({ profile_id: Schema.String, same_workspace: Schema.Boolean }))
      const find = (profileId: string, source: DataSource) =>
        first(sql`
          SELECT source, account_id, dataset_id, destination_id FROM data_source_datasets
          WHERE profile_id = ${profileId} AND source = ${source}`)
      const save = (profileId: string, row: SourceRow) =>
        Effect.andThen(
          sql`
            INSERT INTO data_source_datasets (profile_id, source, account_id, dataset_id, destination_id)
            VALUES (${profileId}, ${row.source}, ${row.account_id}, ${row.dataset_id}, ${row.destination_id})
            ON CONFLICT (profile_id, source) DO NOTHING`,
          find(profileId, row.source)
        )
      const setDestination = (profileId: string, source: DataSource, destinationId: string) =>
        Effect.asVoid(sql`
          UPDATE data_source_datasets SET destination_id = ${destinationId} WHERE profile_id = ${profileId} AND source = ${source}`)
      const all = (profileId: string) =>
        rows(sql`
          SELECT source, account_id, dataset_id, destination_id FROM data_source_datasets
          WHERE profile_id = ${profileId} ORDER BY source`)
      const preview30d = (profileId: string, destinationId: string) =>
        Effect.map(
          count(sql`
            SELECT COUNT(*)::float8 AS n FROM conversions c
            WHERE c.profile_id = ${profileId} AND c.attribution_eligible AND c.occurred_at > now() - interval '30 days'
              AND EXISTS (
                SELECT 1 FROM export_rules r WHERE r.profile_id = c.profile_id AND r.conversion_key = c.conversion_key AND r.enabled
                  AND (r.destination_ids IS NULL OR ${destinationId}::uuid = ANY(r.destination_ids)))`),
          (found) => found[0]?.n ?? 0
        )
      const sharing = (profileId: string, datasetId: string) =>
        Effect.map(
          shared(sql`
            SELECT d.profile_id::text AS profile_id,
                   (p.workspace_id = (SELECT workspace_id FROM profiles WHERE id = ${profileId})) AS same_workspace
            FROM export_destinations d JOIN profiles p ON p.id = d.profile_id
            WHERE d.dataset_id = ${datasetId} AND d.deleted_at IS NULL AND d.profile_id <> ${profileId}
            GROUP BY d.profile_id, p.workspace_id ORDER BY d.profile_id`),
          (found) => ({ sameWorkspace: found.filter((r) => r.same_workspace).map((r) => r.profile_id), any: found.length > 0 })
        )
      return atDatabaseBoundary({ find, save, setDestination, all, preview30d, sharing })
    })
  )
}
