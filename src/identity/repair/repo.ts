/**
 * SQL of inferred identity links (decision 0039): their lists and the profile locks of repairs and
 * link decisions. The repair scan and backfill are the customers repository's, link writes the
 * identity repository's; accepting a link moves rows through their owners (./service.ts).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { LinkEvidence, LinkStatus, LinkStatusCounts } from "../../../schema/identity-repair.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

export const LinkRow = Schema.Struct({
  id: Schema.String,
  status: LinkStatus,
  anonymous_id: Schema.String,
  customer_id: Schema.String,
  customer_key: Schema.NullOr(Schema.String),
  customer_live: Schema.Boolean,
  join_method: Schema.Literals(["click_id", "anonymous_id"]),
  evidence: Schema.Array(LinkEvidence),
  unbound_touch_count: Schema.Int,
  bound_touch_count: Schema.NullOr(Schema.Int),
  created_at: Schema.String,
  updated_at: Schema.String,
  decided_at: Schema.NullOr(Schema.String)
})
export type LinkRow = typeof LinkRow.Type

export interface LinkKeyset {
  readonly at: string
  readonly id: string
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class IdentityRepairRepo extends Context.Service<IdentityRepairRepo, {
  /** Serialises repairs and link decisions of one profile until the transaction ends. */
  readonly lockProfile: (profileId: string, what: "repair" | "links") => Repo<void>
  readonly statusCounts: (profileId: string) => Repo<LinkStatusCounts>
  /** Links newest first, one more than `limit`. Links to erased customers are not listed. */
  readonly listLinks: (
    profileId: string,
    status: Option.Option<LinkStatus>,
    after: Option.Option<LinkKeyset>,
    limit: number
  ) => Repo<ReadonlyArray<LinkRow>>
  /** One link of the profile, locked for the rest of the transaction. */
  readonly linkForUpdate: (profileId: string, id: string) => Repo<Option.Option<LinkRow>>
  readonly link: (profileId: string, id: string) => Repo<Option.Option<LinkRow>>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/IdentityRepairRepo") {
  static readonly layer = Layer.effect(IdentityRepairRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const iso = (column: string) => isoTimestamp(sql, column)
      const linkRows = decodeRows(LinkRow)
      const firstLink = decodeFirstRow(LinkRow)
      const firstCounts = decodeFirstRow(LinkStatusCounts)

      const lockProfile = (profileId: string, what: "repair" | "links") =>
        Effect.asVoid(
          sql`SELECT true AS locked FROM pg_advisory_xact_lock(hashtextextended(${`identity_${what}:${profileId}`}, 0))`
        )

      const statusCounts = (profileId: string) =>
        Effect.map(
          firstCounts(sql`
            SELECT count(*) FILTER (WHERE l.status = 'proposed')::int AS proposed,
                   count(*) FILTER (WHERE l.status = 'accepted')::int AS accepted,
                   count(*) FILTER (WHERE l.status = 'rejected')::int AS rejected
            FROM identity_links l JOIN customers c ON c.id = l.customer_id AND c.erased_at IS NULL
            WHERE l.profile_id = ${profileId}`),
          Option.getOrElse(() => ({ proposed: 0, accepted: 0, rejected: 0 }))
        )

      const linkColumns = sql`
        l.id::text AS id, l.status, l.anonymous_id, l.customer_id::text AS customer_id, c.customer_key,
        (c.merged_into_id IS NULL AND c.erased_at IS NULL) AS customer_live, l.join_method, l.evidence,
        l.unbound_touch_count, l.bound_touch_count, ${iso("l.created_at")} AS created_at,
        ${iso("l.updated_at")} AS updated_at, ${iso("l.decided_at")} AS decided_at`

      const listLinks = (
        profileId: string,
        status: Option.Option<LinkStatus>,
        after: Option.Option<LinkKeyset>,
        limit: number
      ) =>
        linkRows(sql`
          SELECT ${linkColumns}
          FROM identity_links l JOIN customers c ON c.id = l.customer_id AND c.erased_at IS NULL
          WHERE l.profile_id = ${profileId}
            ${Option.match(status, { onNone: () => sql``, onSome: (value) => sql`AND l.status = ${value}` })}
            ${
          Option.match(after, {
            onNone: () => sql``,
            onSome: (keyset) => sql`AND (l.created_at, l.id) < (${keyset.at}::timestamptz, ${keyset.id}::uuid)`
          })
        }
          ORDER BY l.created_at DESC, l.id DESC
          LIMIT ${limit + 1}`)

      const linkById = (profileId: string, id: string, lock: boolean) =>
        firstLink(sql`
          SELECT ${linkColumns}
          FROM identity_links l JOIN customers c ON c.id = l.customer_id AND c.erased_at IS NULL
          WHERE l.profile_id = ${profileId} AND l.id = ${id}::uuid
          ${lock ? sql`FOR UPDATE OF l` : sql``}`)

      return {
        ...atDatabaseBoundary({
          lockProfile,
          statusCounts,
          listLinks,
          linkForUpdate: (profileId: string, id: string) => linkById(profileId, id, true),
          link: (profileId: string, id: string) => linkById(profileId, id, false)
        }),
        transaction: (effect) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
