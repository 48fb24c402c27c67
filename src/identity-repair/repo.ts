/** SQL of the identity repair scan, the primary-flag backfill and inferred identity links (decision 0039). */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import {
  LinkEvidence,
  LinkStatus,
  LinkStatusCounts,
  REPAIR_SAMPLE_SIZE,
  RepairIdentifierType,
  RepairScanSummary
} from "../../schema/identity-repair.ts"
import { decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../platform/database.ts"
import { isoTimestamp } from "../platform/sql-time.ts"

export const ScanRow = Schema.Struct({
  type: Schema.Literals(["missing_primary_email", "missing_primary_phone", "duplicate_email", "duplicate_phone"]),
  identifier_type: RepairIdentifierType,
  value: Schema.String,
  customer_ids: Schema.Array(Schema.String),
  identifier_id: Schema.NullOr(Schema.String)
})
export type ScanRow = typeof ScanRow.Type

const ScanAnswer = Schema.Struct({ summary: RepairScanSummary, rows: Schema.Array(ScanRow) })

export const BackfillRow = Schema.Struct({
  customer_id: Schema.String,
  identifier_id: Schema.String,
  identifier_type: RepairIdentifierType
})

export const BackfillOutcome = Schema.Struct({
  email_count: Schema.Int,
  phone_count: Schema.Int,
  duplicate_group_count: Schema.Int,
  sample: Schema.Array(BackfillRow)
})
export type BackfillOutcome = typeof BackfillOutcome.Type

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

export const LinkScanCounts = Schema.Struct({ created: Schema.Int, updated: Schema.Int, withdrawn: Schema.Int })
export type LinkScanCounts = typeof LinkScanCounts.Type

export interface LinkKeyset {
  readonly at: string
  readonly id: string
}

export interface AcceptOutcome {
  readonly boundTouchCount: number
  readonly recreditQueuedCount: number
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class IdentityRepairRepo extends Context.Service<IdentityRepairRepo, {
  /** The scan's counts (whole profile) and one page of its rows in their fixed order. */
  readonly scan: (profileId: string, offset: number, limit: number) => Repo<typeof ScanAnswer.Type>
  /** Serialises repairs and link decisions of one profile until the transaction ends. */
  readonly lockProfile: (profileId: string, what: "repair" | "links") => Repo<void>
  /** Read-only: the backfills an apply would write now, for these identifier types. */
  readonly previewBackfills: (profileId: string, types: ReadonlyArray<RepairIdentifierType>) => Repo<BackfillOutcome>
  /** Marks the oldest email/phone of each customer lacking a primary one as primary. */
  readonly applyBackfills: (profileId: string, types: ReadonlyArray<RepairIdentifierType>) => Repo<BackfillOutcome>
  /** Recomputes the proposals from the current evidence; decided links are never touched. */
  readonly scanLinks: (profileId: string) => Repo<LinkScanCounts>
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
  readonly reject: (linkId: string) => Repo<void>
  /**
   * Binds the visitor's unbound touches to the customer, records the anonymous id as the
   * customer's identifier, queues the customer's conversions for crediting again, withdraws the
   * visitor's other open proposals and marks the link accepted.
   */
  readonly accept: (link: LinkRow, profileId: string) => Repo<AcceptOutcome>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/IdentityRepairRepo") {
  static readonly layer = Layer.effect(IdentityRepairRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const iso = (column: string) => isoTimestamp(sql, column)
      const scanAnswer = decodeFirstRow(ScanAnswer)
      const backfillAnswer = decodeFirstRow(BackfillOutcome)
      const linkRows = decodeRows(LinkRow)
      const firstLink = decodeFirstRow(LinkRow)
      const scanCounts = decodeFirstRow(LinkScanCounts)
      const firstCounts = decodeFirstRow(LinkStatusCounts)
      const firstCount = decodeFirstRow(Schema.Struct({ n: Schema.Int }))

      /**
       * The findings as CTEs: `live` customers, their live email/phone identifiers `ids`, `dups`
       * (a value held by two or more live customers, holders oldest first) and `missing` (per
       * customer and type without a primary: the oldest identifier whose value is in no duplicate
       * group as `identifier_id`, null when every one is, and the value a row shows).
       */
      const findings = (profileId: string, types: ReadonlyArray<RepairIdentifierType>) =>
        sql`
          live AS (
            SELECT id, created_at FROM customers
            WHERE profile_id = ${profileId} AND merged_into_id IS NULL AND erased_at IS NULL
          ),
          ids AS (
            SELECT i.id, i.customer_id, i.kind, i.value, i.is_primary, i.created_at, c.created_at AS customer_created_at
            FROM customer_identifiers i JOIN live c ON c.id = i.customer_id
            WHERE i.profile_id = ${profileId} AND i.removed_at IS NULL AND i.kind = ANY(${[...types]}::text[])
          ),
          holders AS (
            SELECT DISTINCT kind, value, customer_id, customer_created_at FROM ids
          ),
          dups AS (
            SELECT kind, value, array_agg(customer_id::text ORDER BY customer_created_at, customer_id) AS customer_ids
            FROM holders GROUP BY kind, value HAVING count(*) > 1
          ),
          flagged AS (
            SELECT x.*, d.value IS NOT NULL AS duplicated
            FROM ids x LEFT JOIN dups d ON d.kind = x.kind AND d.value = x.value
          ),
          missing AS (
            SELECT customer_id, kind, customer_created_at,
                   (array_agg(id ORDER BY created_at, id) FILTER (WHERE NOT duplicated))[1] AS identifier_id,
                   COALESCE((array_agg(value ORDER BY created_at, id) FILTER (WHERE NOT duplicated))[1],
                            (array_agg(value ORDER BY created_at, id))[1]) AS value
            FROM flagged
            GROUP BY customer_id, kind, customer_created_at
            HAVING NOT bool_or(is_primary)
          )`

      const scan = (profileId: string, offset: number, limit: number) =>
        Effect.flatMap(
          scanAnswer(sql`
            WITH ${findings(profileId, ["email", "phone"])},
            found AS (
              SELECT CASE m.kind WHEN 'email' THEN 1 ELSE 2 END AS sort_type, m.customer_created_at AS sort_at,
                     m.customer_id::text AS sort_key, 'missing_primary_' || m.kind AS type, m.kind AS identifier_type,
                     m.value, ARRAY[m.customer_id::text] AS customer_ids, m.identifier_id::text AS identifier_id
              FROM missing m
              UNION ALL
              SELECT CASE d.kind WHEN 'email' THEN 3 ELSE 4 END, NULL, d.value, 'duplicate_' || d.kind, d.kind,
                     d.value, d.customer_ids, NULL
              FROM dups d
            )
            SELECT json_build_object(
                     'missing_primary_email_count', (SELECT count(*) FROM found WHERE sort_type = 1),
                     'missing_primary_phone_count', (SELECT count(*) FROM found WHERE sort_type = 2),
                     'duplicate_email_group_count', (SELECT count(*) FROM found WHERE sort_type = 3),
                     'duplicate_phone_group_count', (SELECT count(*) FROM found WHERE sort_type = 4),
                     'auto_repairable_count', (SELECT count(*) FROM found WHERE sort_type <= 2 AND identifier_id IS NOT NULL),
                     'auto_merge_count', (SELECT count(*) FROM found WHERE sort_type >= 3)
                   ) AS summary,
                   COALESCE((
                     SELECT json_agg(json_build_object('type', p.type, 'identifier_type', p.identifier_type, 'value', p.value,
                                                       'customer_ids', p.customer_ids, 'identifier_id', p.identifier_id)
                                     ORDER BY p.sort_type, p.sort_at, p.sort_key)
                     FROM (SELECT * FROM found ORDER BY sort_type, sort_at, sort_key LIMIT ${limit} OFFSET ${offset}) p
                   ), '[]'::json) AS rows`),
          (found) => Option.match(found, { onNone: () => Effect.die("repair scan answered no row"), onSome: Effect.succeed })
        )

      const lockProfile = (profileId: string, what: "repair" | "links") =>
        Effect.asVoid(
          sql`SELECT true AS locked FROM pg_advisory_xact_lock(hashtextextended(${`identity_${what}:${profileId}`}, 0))`
        )

      /** Counts and the first rows of `written` (a CTE of customer_id, identifier_id, kind, customer_created_at). */
      const backfillSummary = sql`
        SELECT (SELECT count(*)::int FROM written WHERE kind = 'email') AS email_count,
               (SELECT count(*)::int FROM written WHERE kind = 'phone') AS phone_count,
               (SELECT count(*)::int FROM dups) AS duplicate_group_count,
               COALESCE((
                 SELECT json_agg(json_build_object('customer_id', s.customer_id, 'identifier_id', s.identifier_id,
                                                   'identifier_type', s.kind)
                                 ORDER BY s.customer_created_at, s.customer_id, s.kind)
                 FROM (SELECT * FROM written ORDER BY customer_created_at, customer_id, kind LIMIT ${REPAIR_SAMPLE_SIZE}) s
               ), '[]'::json) AS sample`

      const backfill = (profileId: string, types: ReadonlyArray<RepairIdentifierType>, apply: boolean) =>
        Effect.flatMap(
          backfillAnswer(
            apply
              ? sql`
                WITH ${findings(profileId, types)},
                written AS (
                  UPDATE customer_identifiers u SET is_primary = true
                  FROM missing m
                  WHERE u.id = m.identifier_id AND NOT u.is_primary
                  RETURNING u.customer_id::text AS customer_id, u.id::text AS identifier_id, u.kind, m.customer_created_at
                )
                ${backfillSummary}`
              : sql`
                WITH ${findings(profileId, types)},
                written AS (
                  SELECT customer_id::text AS customer_id, identifier_id::text AS identifier_id, kind, customer_created_at
                  FROM missing WHERE identifier_id IS NOT NULL
                )
                ${backfillSummary}`
          ),
          (found) => Option.match(found, { onNone: () => Effect.die("backfill answered no row"), onSome: Effect.succeed })
        )

      /**
       * The candidates: per (visitor, live customer), the evidence from the visitor's unbound
       * touches. A click id matches when one of the customer's live outcome events carried the
       * same value under the same kind; an anonymous id when the customer holds it as an identifier.
       */
      const candidates = (profileId: string) =>
        sql`
          unbound AS (
            SELECT t.id, t.anonymous_id, t.click_id_kind, t.click_id FROM touches t
            WHERE t.profile_id = ${profileId} AND t.anonymous_id IS NOT NULL AND t.customer_id IS NULL
          ),
          customer_clicks AS (
            SELECT DISTINCT e.customer_id, k.key AS kind, k.value
            FROM outcome_events e
            JOIN customers c ON c.id = e.customer_id AND c.merged_into_id IS NULL AND c.erased_at IS NULL
            CROSS JOIN LATERAL jsonb_each_text(e.click_ids) k
            WHERE e.profile_id = ${profileId} AND e.customer_id IS NOT NULL AND e.retracted_at IS NULL
              AND e.click_ids <> '{}'::jsonb
          ),
          evidence AS (
            SELECT u.anonymous_id, cc.customer_id, 'click_id' AS kind, u.click_id_kind, count(DISTINCT u.id)::int AS touch_count
            FROM unbound u JOIN customer_clicks cc ON cc.kind = u.click_id_kind AND cc.value = u.click_id
            GROUP BY u.anonymous_id, cc.customer_id, u.click_id_kind
            UNION ALL
            SELECT u.anonymous_id, i.customer_id, 'anonymous_id_identifier', NULL, count(DISTINCT u.id)::int
            FROM unbound u
            JOIN customer_identifiers i ON i.profile_id = ${profileId} AND i.kind = 'anonymous_id'
              AND i.value = u.anonymous_id AND i.removed_at IS NULL
            JOIN customers c ON c.id = i.customer_id AND c.merged_into_id IS NULL AND c.erased_at IS NULL
            GROUP BY u.anonymous_id, i.customer_id
          ),
          visitors AS (
            SELECT anonymous_id, count(*)::int AS unbound_touch_count FROM unbound GROUP BY anonymous_id
          ),
          candidates AS (
            SELECT e.anonymous_id, e.customer_id,
                   jsonb_agg(jsonb_build_object('kind', e.kind, 'click_id_kind', e.click_id_kind, 'touch_count', e.touch_count)
                             ORDER BY e.kind, e.click_id_kind) AS evidence,
                   CASE WHEN bool_or(e.kind = 'anonymous_id_identifier') THEN 'anonymous_id' ELSE 'click_id' END AS join_method,
                   v.unbound_touch_count
            FROM evidence e JOIN visitors v ON v.anonymous_id = e.anonymous_id
            GROUP BY e.anonymous_id, e.customer_id, v.unbound_touch_count
          )`

      const scanLinks = (profileId: string) =>
        Effect.map(
          scanCounts(sql`
            WITH ${candidates(profileId)},
            upserted AS (
              INSERT INTO identity_links (id, profile_id, anonymous_id, customer_id, evidence, join_method, unbound_touch_count)
              SELECT gen_random_uuid(), ${profileId}, c.anonymous_id, c.customer_id, c.evidence, c.join_method, c.unbound_touch_count
              FROM candidates c
              ON CONFLICT (profile_id, anonymous_id, customer_id) DO UPDATE
              SET evidence = EXCLUDED.evidence, join_method = EXCLUDED.join_method,
                  unbound_touch_count = EXCLUDED.unbound_touch_count, updated_at = now()
              WHERE identity_links.status = 'proposed'
                AND (identity_links.evidence, identity_links.join_method, identity_links.unbound_touch_count)
                    IS DISTINCT FROM (EXCLUDED.evidence, EXCLUDED.join_method, EXCLUDED.unbound_touch_count)
              RETURNING (xmax = 0) AS inserted
            ),
            withdrawn AS (
              DELETE FROM identity_links l
              WHERE l.profile_id = ${profileId} AND l.status = 'proposed'
                AND NOT EXISTS (SELECT 1 FROM candidates c WHERE c.anonymous_id = l.anonymous_id AND c.customer_id = l.customer_id)
              RETURNING l.id
            )
            SELECT (SELECT count(*)::int FROM upserted WHERE inserted) AS created,
                   (SELECT count(*)::int FROM upserted WHERE NOT inserted) AS updated,
                   (SELECT count(*)::int FROM withdrawn) AS withdrawn`),
          Option.getOrElse(() => ({ created: 0, updated: 0, withdrawn: 0 }))
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

      const reject = (linkId: string) =>
        Effect.asVoid(sql`UPDATE identity_links SET status = 'rejected', decided_at = now() WHERE id = ${linkId}::uuid`)

      const accept = (link: LinkRow, profileId: string) =>
        Effect.gen(function*() {
          const bound = yield* firstCount(sql`
            WITH b AS (
              UPDATE touches SET customer_id = ${link.customer_id}::uuid, join_method = ${link.join_method}
              WHERE profile_id = ${profileId} AND anonymous_id = ${link.anonymous_id} AND customer_id IS NULL
              RETURNING id
            )
            SELECT count(*)::int AS n FROM b`)
          // Later touches of the visitor bind on arrival, and crediting reads them (candidate-touches).
          yield* sql`
            INSERT INTO customer_identifiers (id, profile_id, customer_id, kind, value)
            SELECT ${crypto.randomUUID()}, ${profileId}, ${link.customer_id}::uuid, 'anonymous_id', ${link.anonymous_id}
            WHERE NOT EXISTS (
              SELECT 1 FROM customer_identifiers
              WHERE customer_id = ${link.customer_id}::uuid AND kind = 'anonymous_id' AND value = ${link.anonymous_id}
                AND removed_at IS NULL)`
          const requeued = yield* firstCount(sql`
            WITH q AS (
              UPDATE conversions SET credited_at = NULL
              WHERE profile_id = ${profileId} AND customer_id = ${link.customer_id}::uuid
              RETURNING id
            )
            SELECT count(*)::int AS n FROM q`)
          yield* sql`
            DELETE FROM identity_links
            WHERE profile_id = ${profileId} AND anonymous_id = ${link.anonymous_id} AND status = 'proposed'
              AND id <> ${link.id}::uuid`
          const boundTouchCount = Option.match(bound, { onNone: () => 0, onSome: (row) => row.n })
          yield* sql`
            UPDATE identity_links SET status = 'accepted', decided_at = now(), bound_touch_count = ${boundTouchCount}
            WHERE id = ${link.id}::uuid`
          return {
            boundTouchCount,
            recreditQueuedCount: Option.match(requeued, { onNone: () => 0, onSome: (row) => row.n })
          } satisfies AcceptOutcome
        })

      return {
        scan: (profileId, offset, limit) => orDatabaseUnavailable(scan(profileId, offset, limit)),
        lockProfile: (profileId, what) => orDatabaseUnavailable(lockProfile(profileId, what)),
        previewBackfills: (profileId, types) => orDatabaseUnavailable(backfill(profileId, types, false)),
        applyBackfills: (profileId, types) => orDatabaseUnavailable(backfill(profileId, types, true)),
        scanLinks: (profileId) => orDatabaseUnavailable(scanLinks(profileId)),
        statusCounts: (profileId) => orDatabaseUnavailable(statusCounts(profileId)),
        listLinks: (profileId, status, after, limit) => orDatabaseUnavailable(listLinks(profileId, status, after, limit)),
        linkForUpdate: (profileId, id) => orDatabaseUnavailable(linkById(profileId, id, true)),
        link: (profileId, id) => orDatabaseUnavailable(linkById(profileId, id, false)),
        reject: (linkId) => orDatabaseUnavailable(reject(linkId)),
        accept: (link, profileId) => orDatabaseUnavailable(accept(link, profileId)),
        transaction: (effect) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
