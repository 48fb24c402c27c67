/** The owner of `data_source_datasets`: the dataset each data source of a profile is wired to. */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { DataSource } from "../../../schema/platform-safe.ts"
import { atDatabaseBoundary, decodeFirstRow } from "../../platform/database.ts"

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
}>()("svc/DataSourcesRepo") {
  static readonly layer = Layer.effect(DataSourcesRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const first = decodeFirstRow(SourceRow)
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
      return atDatabaseBoundary({ find, save, setDestination })
    })
  )
}
