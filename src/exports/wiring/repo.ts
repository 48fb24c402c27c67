/**
 * Reads for the wiring view (writes nothing): the delivery ledger's 7-day facts behind the
 * double-count and not-accepted alerts (decision 0091).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeRows } from "../../platform/database.ts"

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class WiringRepo extends Context.Service<WiringRepo, {
  /**
   * Per destination of the profile: how many other destinations (any profile) delivered, in the
   * last 7 days, an event name this destination also delivered to the same dataset.
   */
  readonly otherSources7d: (profileId: string) => Repo<ReadonlyMap<string, number>>
  /** Event names sent (any attempt) on 3 or more of the last 7 days with no delivery counted. */
  readonly notAccepted7d: (profileId: string, names: ReadonlyArray<string>) => Repo<ReadonlyArray<string>>
}>()("svc/WiringRepo") {
  static readonly layer = Layer.effect(WiringRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const counts = decodeRows(Schema.Struct({ destination_id: Schema.String, n: Schema.Number }))
      const names = decodeRows(Schema.Struct({ event_name: Schema.String }))

      const otherSources7d = (profileId: string) =>
        Effect.map(
          counts(sql`
            WITH mine AS (
              SELECT DISTINCT l.destination_id, d.dataset_id, l.event_name
              FROM export_deliveries l JOIN export_destinations d ON d.id = l.destination_id
              WHERE l.profile_id = ${profileId} AND l.decision = 'delivered' AND NOT l.is_test
                AND l.created_at > now() - interval '7 days'
            )
            SELECT m.destination_id::text AS destination_id, COUNT(DISTINCT o.destination_id)::float8 AS n
            FROM mine m
            JOIN export_destinations od ON od.dataset_id = m.dataset_id AND od.id <> m.destination_id
            JOIN export_deliveries o ON o.destination_id = od.id AND o.event_name = m.event_name
              AND o.decision = 'delivered' AND NOT o.is_test AND o.created_at > now() - interval '7 days'
            GROUP BY m.destination_id`),
          (rows) => new Map(rows.map((r) => [r.destination_id, r.n]))
        )

      const notAccepted7d = (profileId: string, wanted: ReadonlyArray<string>) =>
        wanted.length === 0
          ? Effect.succeed([])
          : Effect.map(
            names(sql`
              SELECT event_name FROM export_deliveries
              WHERE profile_id = ${profileId} AND NOT is_test AND event_name = ANY(${[...wanted]}::text[])
                AND decision IN ('delivered', 'retrying', 'failed') AND created_at > now() - interval '7 days'
              GROUP BY event_name
              HAVING COUNT(DISTINCT (created_at AT TIME ZONE 'UTC')::date) >= 3 AND COUNT(*) FILTER (WHERE decision = 'delivered') = 0
              ORDER BY event_name`),
            (rows) => rows.map((r) => r.event_name)
          )

      return atDatabaseBoundary({ otherSources7d, notAccepted7d })
    })
  )
}
