/**
 * SQL of merge review: the proposer, the queue, merges and their undo (decision 0040); the owner
 * of `identity_links`, `merge_proposals` and `customer_merges` (DESIGN.md, "Table ownership").
 * A merge and its undo move the rows of other tables through their owners (src/identity/service.ts).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../platform/database.ts"
import { isoTimestamp } from "../platform/sql-time.ts"
import type { IdentifierKind } from "./customers/identifiers.ts"

const Identifier = Schema.Struct({ type: Schema.String, value: Schema.String })

export const ProposalRow = Schema.Struct({
  id: Schema.String,
  status: Schema.Literals(["open", "snoozed", "merged", "dismissed", "superseded"]),
  customer_a: Schema.String,
  customer_b: Schema.String,
  evidence: Schema.Array(Identifier),
  created_at: Schema.String,
  decided_at: Schema.NullOr(Schema.String),
  snoozed_until: Schema.NullOr(Schema.String),
  merge_id: Schema.NullOr(Schema.String)
})
export type ProposalRow = typeof ProposalRow.Type

export const SideRow = Schema.Struct({
  id: Schema.String,
  customer_key: Schema.NullOr(Schema.String),
  first_name: Schema.NullOr(Schema.String),
  last_name: Schema.NullOr(Schema.String),
  identifiers: Schema.Array(Identifier),
  touch_count: Schema.Number,
  conversion_count: Schema.Number,
  created_at: Schema.String,
  live: Schema.Boolean
})
export type SideRow = typeof SideRow.Type

export const Moves = Schema.Struct({
  touches: Schema.Number,
  outcome_events: Schema.Number,
  conversions: Schema.Number,
  payer_assignments: Schema.Number,
  identifiers: Schema.Number,
  duplicate_identifiers: Schema.Number,
  declared_sources: Schema.Number
})
export type Moves = typeof Moves.Type

/** Ids of every row a merge moved or hid, so its undo puts each back. */
export const Moved = Schema.Struct({
  touches: Schema.Array(Schema.String),
  outcome_events: Schema.Array(Schema.String),
  conversions: Schema.Array(Schema.String),
  payer_conversions: Schema.Array(Schema.String),
  identifiers: Schema.Array(Schema.String),
  hidden_identifiers: Schema.Array(Schema.String),
  declared_sources: Schema.Array(Schema.String),
  remerged: Schema.Array(Schema.String)
})
export type Moved = typeof Moved.Type

export const MergeRow = Schema.Struct({
  id: Schema.String,
  survivor_id: Schema.String,
  merged_id: Schema.String,
  merged_customer_key: Schema.NullOr(Schema.String),
  proposal_id: Schema.NullOr(Schema.String),
  moved: Moved,
  merged_at: Schema.String,
  undone_at: Schema.NullOr(Schema.String)
})
export type MergeRow = typeof MergeRow.Type

export const ScanCounts = Schema.Struct({ pairs: Schema.Number, proposed: Schema.Number, customers_scanned: Schema.Number })

export const LinkScanCounts = Schema.Struct({ created: Schema.Int, updated: Schema.Int, withdrawn: Schema.Int })
export type LinkScanCounts = typeof LinkScanCounts.Type

/** The identifier kinds that make two customers the same person when both hold one value. */
export const MATCHING_KINDS = ["email", "phone", "crm_contact_id", "national_id", "anonymous_id"] as const

/** What the proposer looks at: a whole profile (the scan), or the identifiers an ingest just attached. */
export type ProposerScope =
  | { readonly profileId: string }
  | { readonly identifiers: ReadonlyArray<{ readonly profileId: string; readonly kind: string; readonly value: string }> }

/**
 * The proposals of the scope, written; answers `{pairs, proposed}`. Every lookup goes by an index
 * whatever the statistics (test/api/queue-claim-plans.test.ts keeps its plan from empty tables).
 */
export const proposeStatement = (sql: SqlClient, scope: ProposerScope) => {
  const holders = "profileId" in scope
    ? sql`
      SELECT i.profile_id, i.kind, i.value, i.customer_id FROM customer_identifiers i
      WHERE i.profile_id = ${scope.profileId} AND i.removed_at IS NULL AND i.kind = ANY(${[...MATCHING_KINDS]}::text[])`
    : sql`
      SELECT i.profile_id, i.kind, i.value, i.customer_id
      FROM (SELECT DISTINCT * FROM unnest(${scope.identifiers.map((i) => i.profileId)}::uuid[],
                                          ${scope.identifiers.map((i) => i.kind)}::text[],
                                          ${scope.identifiers.map((i) => i.value)}::text[]) AS q(profile_id, kind, value)) q
      CROSS JOIN LATERAL (SELECT * FROM customer_identifiers x
                          WHERE x.profile_id = q.profile_id AND x.kind = q.kind AND x.value = q.value AND x.removed_at IS NULL
                          OFFSET 0) i
      WHERE i.kind = ANY(${[...MATCHING_KINDS]}::text[])`
  return sql`
    WITH shared AS (
      SELECT h.profile_id, h.kind, h.value, array_agg(DISTINCT h.customer_id ORDER BY h.customer_id) AS ids
      FROM (${holders}) h
      -- Each holder's customer probed by its whole key (decision 0137), row by row (OFFSET 0): as a
      -- join, a plan made on empty tables read every customer for each holder (1 s a call at 9,000).
      CROSS JOIN LATERAL (SELECT 1 FROM customers c
                          WHERE c.id = h.customer_id AND c.profile_id = h.profile_id
                            AND c.merged_into_id IS NULL AND c.erased_at IS NULL
                          OFFSET 0) c
      GROUP BY h.profile_id, h.kind, h.value
      HAVING count(DISTINCT h.customer_id) > 1
    ),
    pairs AS (
      SELECT s.profile_id, s.ids[1] AS a, other AS b,
             jsonb_agg(DISTINCT jsonb_build_object('type', s.kind, 'value', s.value)) AS evidence
      FROM shared s CROSS JOIN LATERAL unnest(s.ids[2:]) AS other
      GROUP BY s.profile_id, s.ids[1], other
    ),
    written AS (
      INSERT INTO merge_proposals (id, profile_id, customer_a, customer_b, evidence)
      SELECT gen_random_uuid(), profile_id, a, b, evidence FROM pairs ORDER BY profile_id, a, b
      ON CONFLICT (profile_id, customer_a, customer_b) DO UPDATE SET evidence = EXCLUDED.evidence
      WHERE merge_proposals.status IN ('open', 'snoozed')
      RETURNING (xmax = 0) AS inserted
    )
    SELECT (SELECT count(*)::int FROM pairs) AS pairs, (SELECT count(*)::int FROM written WHERE inserted) AS proposed`
}

export interface ProposalKeyset {
  readonly at: string
  readonly id: string
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class IdentityRepo extends Context.Service<IdentityRepo, {
  /**
   * The proposer: every pair of live customers of the profile holding one identifier value
   * (each holder paired with the lowest id among them) gets a proposal, unless the pair has one
   * already (a dismissed pair stays dismissed). Open and snoozed proposals get fresh evidence.
   */
  readonly scan: (profileId: string) => Repo<typeof ScanCounts.Type>
  /**
   * The merge proposer (decision 0040): live customers of a profile that hold one identifier
   * value are the same person, maybe. Each such pair (every holder with the lowest id among them,
   * so a value held by n customers gives n - 1 pairs) gets a merge proposal, never a merge. This
   * method runs it for the identifiers an ingest just attached; `scan` runs the same statement
   * over a whole profile. A pair proposed before keeps its proposal: open and snoozed ones get
   * fresh evidence, decided ones (a dismissed pair stays apart) are left as they are.
   */
  readonly proposeMerges: (
    identifiers: ReadonlyArray<{ readonly profileId: string; readonly kind: IdentifierKind; readonly value: string }>
  ) => Repo<void>
  readonly statusCounts: (profileId: string) => Repo<Record<string, number>>
  readonly listProposals: (
    profileId: string,
    status: string | null,
    after: Option.Option<ProposalKeyset>,
    limit: number
  ) => Repo<ReadonlyArray<ProposalRow>>
  /** A proposal of the profile; `lock` row-locks it until the transaction ends. */
  readonly proposal: (profileId: string, id: string, lock: boolean) => Repo<Option.Option<ProposalRow>>
  readonly sides: (profileId: string, customerIds: ReadonlyArray<string>) => Repo<ReadonlyMap<string, SideRow>>
  readonly previewMoves: (survivorId: string, mergedId: string) => Repo<Moves>
  /** Locks the two customers (id order) and answers whether both are live. */
  readonly lockPair: (a: string, b: string) => Repo<boolean>
  /** Records a merge with the ids of every row it moved or hid (the rows moved already). */
  readonly recordMerge: (input: {
    readonly mergeId: string
    readonly profileId: string
    readonly survivorId: string
    readonly mergedId: string
    readonly proposalId: string | null
  }, moved: Moved) => Repo<void>
  readonly setProposalStatus: (
    id: string,
    status: "open" | "snoozed" | "merged" | "dismissed",
    snoozedUntil: string | null,
    mergeId: string | null
  ) => Repo<void>
  /** Open or snoozed proposals naming the merged customer can no longer be decided: superseded. */
  readonly supersede: (mergedId: string, except: string | null) => Repo<void>
  readonly mergeById: (profileId: string, id: string, lock: boolean) => Repo<Option.Option<MergeRow>>
  /** Marks the merge undone (its rows were put back already). */
  readonly markUndone: (mergeId: string) => Repo<void>
  /** A merge's proposal after its undo: dismissed (the pair stays apart). */
  readonly dismissProposal: (proposalId: string) => Repo<void>
  readonly history: (profileId: string, survivorId: string) => Repo<ReadonlyArray<MergeRow>>
  /** Erasure: inferred visitor links to the customers go (they name the person's browsers). */
  readonly deleteLinksOf: (customerIds: ReadonlyArray<string>) => Repo<void>
  /** Erasure: merge proposals naming the customers lose their evidence (identifier values) and leave the queue. */
  readonly forgetProposalsOf: (customerIds: ReadonlyArray<string>) => Repo<void>
  /**
   * Recomputes the profile's identity link proposals from the current evidence (decision 0039):
   * per (visitor, live customer), the evidence from the visitor's unbound touches. A click id
   * matches when one of the customer's live outcome events carried the same value under the same
   * kind; an anonymous id when the customer holds it as an identifier. Decided links are never touched.
   */
  readonly scanLinks: (profileId: string) => Repo<LinkScanCounts>
  readonly rejectLink: (linkId: string) => Repo<void>
  /** Marks the link accepted with the touches it bound, and withdraws the visitor's other open proposals. */
  readonly acceptLink: (link: {
    readonly id: string
    readonly profileId: string
    readonly anonymousId: string
    readonly boundTouchCount: number
  }) => Repo<void>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/IdentityRepo") {
  static readonly layer = Layer.effect(IdentityRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const iso = (column: string) => isoTimestamp(sql, column)
      const proposalRows = decodeRows(ProposalRow)
      const firstProposal = decodeFirstRow(ProposalRow)
      const sideRows = decodeRows(SideRow)
      const firstMoves = decodeFirstRow(Moves)
      const mergeRows = decodeRows(MergeRow)
      const firstMerge = decodeFirstRow(MergeRow)
      const firstProposed = decodeFirstRow(Schema.Struct({ pairs: Schema.Number, proposed: Schema.Number }))
      const firstCount = decodeFirstRow(Schema.Struct({ count: Schema.Number }))
      const statusRows = decodeRows(Schema.Struct({ status: Schema.String, count: Schema.Number }))
      const liveRows = decodeRows(Schema.Struct({ live: Schema.Boolean }))

      const effectiveStatus = sql.literal(
        "CASE WHEN p.status = 'snoozed' AND p.snoozed_until <= now() THEN 'open' ELSE p.status END"
      )
      const proposalColumns = sql`p.id, ${effectiveStatus} AS status, p.customer_a, p.customer_b, p.evidence,
        ${iso("p.created_at")} AS created_at, ${iso("p.decided_at")} AS decided_at,
        ${iso("p.snoozed_until")} AS snoozed_until, p.merge_id`

      /** Writes the proposals of the scope; answers `{pairs, proposed}`. */
      const propose = (scope: ProposerScope) => firstProposed(proposeStatement(sql, scope))

      const proposeMerges = (
        identifiers: ReadonlyArray<{ readonly profileId: string; readonly kind: IdentifierKind; readonly value: string }>
      ) =>
        identifiers.length === 0
          ? Effect.void
          : Effect.asVoid(propose({ identifiers: identifiers.map((i) => ({ profileId: i.profileId, kind: i.kind, value: i.value })) }))

      const scan = (profileId: string) =>
        Effect.gen(function*() {
          const written = Option.getOrUndefined(yield* propose({ profileId }))
          const scanned = Option.getOrUndefined(yield* firstCount(sql`
            SELECT count(*)::int AS count FROM customers WHERE profile_id = ${profileId} AND merged_into_id IS NULL AND erased_at IS NULL`))
          return { pairs: written?.pairs ?? 0, proposed: written?.proposed ?? 0, customers_scanned: scanned?.count ?? 0 }
        })

      const statusCounts = (profileId: string) =>
        Effect.map(
          statusRows(sql`
            SELECT ${effectiveStatus} AS status, count(*)::int AS count FROM merge_proposals p
            WHERE p.profile_id = ${profileId} GROUP BY 1`),
          (rows) => Object.fromEntries(rows.map((row) => [row.status, row.count]))
        )

      const listProposals = (profileId: string, status: string | null, after: Option.Option<ProposalKeyset>, limit: number) => {
        const clauses = [sql`p.profile_id = ${profileId}`]
        if (status !== null) clauses.push(sql`${effectiveStatus} = ${status}`)
        if (Option.isSome(after)) {
          clauses.push(sql`(p.created_at, p.id) < (${after.value.at}::timestamptz, ${after.value.id}::uuid)`)
        }
        return proposalRows(sql`
          SELECT ${proposalColumns} FROM merge_proposals p WHERE ${sql.and(clauses)}
          ORDER BY p.created_at DESC, p.id DESC LIMIT ${limit + 1}`)
      }

      const proposal = (profileId: string, id: string, lock: boolean) =>
        firstProposal(sql`
          SELECT ${proposalColumns} FROM merge_proposals p WHERE p.profile_id = ${profileId} AND p.id = ${id}
          ${lock ? sql`FOR UPDATE` : sql``}`)

      const sides = (profileId: string, customerIds: ReadonlyArray<string>) =>
        Effect.map(
          sideRows(sql`
            SELECT c.id, c.customer_key, c.first_name, c.last_name,
                   coalesce((SELECT json_agg(json_build_object('type', i.kind, 'value', i.value) ORDER BY i.kind, i.value)
                             FROM customer_identifiers i
                             WHERE i.customer_id = c.id AND i.removed_at IS NULL AND i.kind <> 'national_id'), '[]'::json) AS identifiers,
                   (SELECT count(*)::int FROM touches t WHERE t.customer_id = c.id) AS touch_count,
                   (SELECT count(*)::int FROM conversions x WHERE x.customer_id = c.id) AS conversion_count,
                   ${iso("c.created_at")} AS created_at, (c.merged_into_id IS NULL AND c.erased_at IS NULL) AS live
            FROM customers c WHERE c.profile_id = ${profileId} AND c.id = ANY(${customerIds}::uuid[])`),
          (rows) => new Map(rows.map((row) => [row.id, row] as const))
        )

      const previewMoves = (survivorId: string, mergedId: string) =>
        Effect.flatMap(
          firstMoves(sql`
            SELECT (SELECT count(*)::int FROM touches WHERE customer_id = ${mergedId}) AS touches,
                   (SELECT count(*)::int FROM outcome_events WHERE customer_id = ${mergedId}) AS outcome_events,
                   (SELECT count(*)::int FROM conversions WHERE customer_id = ${mergedId}) AS conversions,
                   (SELECT count(*)::int FROM conversions WHERE payer_customer_id = ${mergedId}) AS payer_assignments,
                   (SELECT count(*)::int FROM customer_identifiers m WHERE m.customer_id = ${mergedId} AND m.removed_at IS NULL
                      AND NOT EXISTS (SELECT 1 FROM customer_identifiers s WHERE s.customer_id = ${survivorId}
                                      AND s.kind = m.kind AND s.value = m.value AND s.removed_at IS NULL)) AS identifiers,
                   (SELECT count(*)::int FROM customer_identifiers m WHERE m.customer_id = ${mergedId} AND m.removed_at IS NULL
                      AND EXISTS (SELECT 1 FROM customer_identifiers s WHERE s.customer_id = ${survivorId}
                                  AND s.kind = m.kind AND s.value = m.value AND s.removed_at IS NULL)) AS duplicate_identifiers,
                   (SELECT count(*)::int FROM declared_sources WHERE customer_id = ${mergedId}
                      AND NOT EXISTS (SELECT 1 FROM declared_sources WHERE customer_id = ${survivorId})) AS declared_sources`),
          Option.match({ onNone: () => Effect.die("the preview answered no row"), onSome: Effect.succeed })
        )

      const lockPair = (a: string, b: string) =>
        Effect.map(
          liveRows(sql`
            SELECT (merged_into_id IS NULL AND erased_at IS NULL) AS live FROM customers
            WHERE id = ANY(${[a, b].sort()}::uuid[]) ORDER BY id FOR UPDATE`),
          (rows) => rows.length === 2 && rows.every((row) => row.live)
        )

      const recordMerge = (input: {
        readonly mergeId: string
        readonly profileId: string
        readonly survivorId: string
        readonly mergedId: string
        readonly proposalId: string | null
      }, moved: Moved) =>
        Effect.asVoid(sql`
          INSERT INTO customer_merges (id, profile_id, survivor_id, merged_id, proposal_id, moved)
          VALUES (${input.mergeId}, ${input.profileId}, ${input.survivorId}, ${input.mergedId}, ${input.proposalId},
                  ${JSON.stringify(moved)}::jsonb)`)

      const setProposalStatus = (id: string, status: string, snoozedUntil: string | null, mergeId: string | null) =>
        Effect.asVoid(sql`
          UPDATE merge_proposals
          SET status = ${status}, snoozed_until = ${snoozedUntil}::timestamptz, merge_id = coalesce(${mergeId}::uuid, merge_id),
              decided_at = now()
          WHERE id = ${id}`)

      const supersede = (mergedId: string, except: string | null) =>
        Effect.asVoid(sql`
          UPDATE merge_proposals SET status = 'superseded', decided_at = now()
          WHERE (customer_a = ${mergedId} OR customer_b = ${mergedId}) AND status IN ('open', 'snoozed')
            AND id IS DISTINCT FROM ${except}::uuid`)

      const mergeColumns = sql`g.id, g.survivor_id, g.merged_id, c.customer_key AS merged_customer_key, g.proposal_id, g.moved,
        ${iso("g.merged_at")} AS merged_at, ${iso("g.undone_at")} AS undone_at`

      const mergeById = (profileId: string, id: string, lock: boolean) =>
        firstMerge(sql`
          SELECT ${mergeColumns} FROM customer_merges g JOIN customers c ON c.id = g.merged_id
          WHERE g.profile_id = ${profileId} AND g.id = ${id} ${lock ? sql`FOR UPDATE OF g` : sql``}`)

      const markUndone = (mergeId: string) => Effect.asVoid(sql`UPDATE customer_merges SET undone_at = now() WHERE id = ${mergeId}`)

      const dismissProposal = (proposalId: string) =>
        Effect.asVoid(sql`UPDATE merge_proposals SET status = 'dismissed', decided_at = now() WHERE id = ${proposalId}`)

      const history = (profileId: string, survivorId: string) =>
        mergeRows(sql`
          SELECT ${mergeColumns} FROM customer_merges g JOIN customers c ON c.id = g.merged_id
          WHERE g.profile_id = ${profileId} AND g.survivor_id = ${survivorId}
          ORDER BY g.merged_at DESC, g.id DESC`)

      const deleteLinksOf = (customerIds: ReadonlyArray<string>) =>
        Effect.asVoid(sql`DELETE FROM identity_links WHERE customer_id = ANY(${customerIds}::uuid[])`)

      const forgetProposalsOf = (customerIds: ReadonlyArray<string>) =>
        Effect.asVoid(sql`
          UPDATE merge_proposals
          SET evidence = '[]'::jsonb,
              status = CASE WHEN status IN ('open', 'snoozed') THEN 'superseded' ELSE status END,
              decided_at = CASE WHEN status IN ('open', 'snoozed') THEN now() ELSE decided_at END
          WHERE customer_a = ANY(${customerIds}::uuid[]) OR customer_b = ANY(${customerIds}::uuid[])`)

      const scanCounts = decodeFirstRow(LinkScanCounts)

      /** The link candidates as CTEs (`unbound`, `customer_clicks`, `evidence`, `visitors`, `candidates`). */
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

      const rejectLink = (linkId: string) =>
        Effect.asVoid(sql`UPDATE identity_links SET status = 'rejected', decided_at = now() WHERE id = ${linkId}::uuid`)

      const acceptLink = (link: { readonly id: string; readonly profileId: string; readonly anonymousId: string; readonly boundTouchCount: number }) =>
        Effect.gen(function*() {
          yield* sql`
            DELETE FROM identity_links
            WHERE profile_id = ${link.profileId} AND anonymous_id = ${link.anonymousId} AND status = 'proposed'
              AND id <> ${link.id}::uuid`
          yield* sql`
            UPDATE identity_links SET status = 'accepted', decided_at = now(), bound_touch_count = ${link.boundTouchCount}
            WHERE id = ${link.id}::uuid`
        })

      return {
        ...atDatabaseBoundary({
          scan,
          proposeMerges,
          statusCounts,
          listProposals,
          proposal,
          sides,
          previewMoves,
          lockPair,
          recordMerge,
          setProposalStatus,
          supersede,
          mergeById,
          markUndone,
          dismissProposal,
          history,
          deleteLinksOf,
          forgetProposalsOf,
          scanLinks,
          rejectLink,
          acceptLink
        }),
        transaction: (effect) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
