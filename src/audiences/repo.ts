/** SQL of audiences: the owner of `audience_exclusions` (decision 0099). */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { atDatabaseBoundary, decodeRows, orDatabaseUnavailable, retryConflicts } from "../platform/database.ts"

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class AudiencesRepo extends Context.Service<AudiencesRepo, {
  /** Which of `ids` are live customers of the profile. */
  readonly liveCustomers: (profileId: string, ids: ReadonlyArray<string>) => Repo<ReadonlyArray<string>>
  /** Replaces the profile's exclusions with `ids`, in one transaction. */
  readonly replaceExclusions: (profileId: string, ids: ReadonlyArray<string>) => Repo<ReadonlyArray<string>>
}>()("svc/AudiencesRepo") {
  static readonly layer = Layer.effect(AudiencesRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const idRows = decodeRows(Schema.Struct({ id: Schema.String }))
      const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

      const liveCustomers = (profileId: string, ids: ReadonlyArray<string>) => {
        // Non-uuid strings would fail the cast; they are never customers.
        const valid = ids.filter((id) => uuid.test(id))
        return valid.length === 0 ? Effect.succeed<ReadonlyArray<string>>([]) : Effect.map(
          idRows(sql`
            SELECT id::text AS id FROM customers
            WHERE profile_id = ${profileId} AND id = ANY(${valid}::uuid[])
              AND merged_into_id IS NULL AND erased_at IS NULL`),
          (rows) => rows.map((row) => row.id)
        )
      }

      const exclusions = (profileId: string) =>
        Effect.map(
          idRows(sql`SELECT customer_id::text AS id FROM audience_exclusions WHERE profile_id = ${profileId} ORDER BY customer_id`),
          (rows) => rows.map((row) => row.id)
        )

      const replace = (profileId: string, ids: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          yield* sql`DELETE FROM audience_exclusions WHERE profile_id = ${profileId}`
          for (const id of ids) {
            yield* sql`
              INSERT INTO audience_exclusions (profile_id, customer_id) VALUES (${profileId}, ${id})
              ON CONFLICT DO NOTHING`
          }
          return yield* exclusions(profileId)
        })

      return {
        ...atDatabaseBoundary({ liveCustomers }),
        replaceExclusions: (profileId: string, ids: ReadonlyArray<string>) =>
          retryConflicts(orDatabaseUnavailable(sql.withTransaction(replace(profileId, ids))))
      }
    })
  )
}
