/** SQL of link tokens: which customer each selector names (reads only; tokens are not stored). */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../platform/database.ts"

/** `customer_key` or one of the identifier types, with the value as normalised by the service. */
export interface Lookup {
  readonly index: number
  readonly kind: string
  readonly value: string
}

export const Resolution = Schema.Struct({
  index: Schema.Int,
  /** The live customer (a merged customer's survivor), or the erased one. */
  customer_id: Schema.String,
  customer_key: Schema.NullOr(Schema.String),
  erased: Schema.Boolean
})
export type Resolution = typeof Resolution.Type

/** Merges followed at most this deep (a longer chain answers as no match). */
const MAX_MERGE_DEPTH = 16

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

const OriginsRow = Schema.Struct({ origins: Schema.Array(Schema.String) })

export class LinkTokensRepo extends Context.Service<LinkTokensRepo, {
  /**
   * The customer each lookup names in the profile, by index; lookups naming nobody are absent.
   * A live customer named directly wins, then the survivor of a merged one (oldest first), then
   * an erased one (`erased: true`). `customer_key` and `external_id` match the customer's key (or
   * the key an erasure receipt kept);
   * identifier types (and `external_id`) match its identifiers that are not removed.
   */
  readonly resolve: (profileId: string, lookups: ReadonlyArray<Lookup>) => Repo<ReadonlyMap<number, Resolution>>
  /** The profile's allowed tracking origins (lower-case). */
  readonly allowedOrigins: (profileId: string) => Repo<ReadonlyArray<string>>
}>()("svc/LinkTokensRepo") {
  static readonly layer = Layer.effect(LinkTokensRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const resolutions = decodeRows(Resolution)

      const resolve = (profileId: string, lookups: ReadonlyArray<Lookup>) =>
        lookups.length === 0 ? Effect.succeed(new Map<number, Resolution>()) : Effect.map(
          resolutions(sql`
            WITH RECURSIVE q AS (
              SELECT * FROM unnest(${lookups.map((l) => l.index)}::int[], ${lookups.map((l) => l.kind)}::text[],
                                   ${lookups.map((l) => l.value)}::text[]) AS q(n, kind, value)
            ),
            direct AS (
              SELECT q.n, c.id FROM q
              JOIN customers c ON c.profile_id = ${profileId} AND c.customer_key = q.value
              WHERE q.kind IN ('customer_key', 'external_id')
              UNION
              -- An erasure empties the customer's key; its receipt keeps it.
              SELECT q.n, e.customer_id FROM q
              JOIN customer_erasures e ON e.profile_id = ${profileId} AND e.customer_key = q.value
              WHERE q.kind IN ('customer_key', 'external_id')
              UNION
              SELECT q.n, i.customer_id FROM q
              JOIN customer_identifiers i ON i.profile_id = ${profileId} AND i.kind = q.kind AND i.value = q.value
                AND i.removed_at IS NULL
              WHERE q.kind <> 'customer_key'
            ),
            chain AS (
              SELECT d.n, c.id AS start_id, c.created_at AS start_created_at, c.id, c.customer_key, c.merged_into_id,
                     c.erased_at, 0 AS depth
              FROM direct d JOIN customers c ON c.id = d.id AND c.profile_id = ${profileId}
              UNION ALL
              SELECT ch.n, ch.start_id, ch.start_created_at, c.id, c.customer_key, c.merged_into_id, c.erased_at, ch.depth + 1
              FROM chain ch JOIN customers c ON c.id = ch.merged_into_id AND c.profile_id = ${profileId}
              WHERE ch.erased_at IS NULL AND ch.depth < ${MAX_MERGE_DEPTH}
            )
            SELECT DISTINCT ON (n) n AS index, id::text AS customer_id, customer_key, (erased_at IS NOT NULL) AS erased
            FROM chain
            WHERE erased_at IS NOT NULL OR merged_into_id IS NULL
            ORDER BY n, CASE WHEN erased_at IS NOT NULL THEN 2 WHEN depth = 0 THEN 0 ELSE 1 END, start_created_at, start_id`),
          (rows) => new Map(rows.map((row) => [row.index, row] as const))
        )

      const firstOrigins = decodeFirstRow(OriginsRow)
      const allowedOrigins = (profileId: string) =>
        Effect.map(
          firstOrigins(sql`SELECT allowed_origins AS origins FROM tracking_settings WHERE profile_id = ${profileId}`),
          Option.match({ onNone: (): ReadonlyArray<string> => [], onSome: (row) => row.origins })
        )

      return atDatabaseBoundary({ resolve, allowedOrigins })
    })
  )
}
