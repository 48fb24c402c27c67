/** SQL of merge review: the proposer, the queue, merges and their undo (decision 0040). */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { EventsRepo } from "../events/outcomes/repo.ts"
import { decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../platform/database.ts"
import { isoTimestamp } from "../platform/sql-time.ts"
import { proposeMerges } from "./proposer.ts"
import { liveCustomerByKey } from "../customers/live-by-key.ts"

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
  /** Moves everything of `mergedId` to `survivorId`, marks it merged, queues re-credit and recomputes first payments. */
  readonly merge: (input: {
    readonly mergeId: string
    readonly profileId: string
    readonly survivorId: string
    readonly mergedId: string
    readonly proposalId: string | null
  }) => Repo<Moved>
  readonly setProposalStatus: (
    id: string,
    status: "open" | "snoozed" | "merged" | "dismissed",
    snoozedUntil: string | null,
    mergeId: string | null
  ) => Repo<void>
  /** Open or snoozed proposals naming the merged customer can no longer be decided: superseded. */
  readonly supersede: (mergedId: string, except: string | null) => Repo<void>
  readonly mergeById: (profileId: string, id: string, lock: boolean) => Repo<Option.Option<MergeRow>>
  /** Puts back every row the merge moved, unmarks the merged customer, re-credits and recomputes both. */
  readonly undo: (merge: MergeRow) => Repo<void>
  readonly history: (profileId: string, survivorId: string) => Repo<ReadonlyArray<MergeRow>>
  readonly customerByKey: (profileId: string, customerKey: string) => Repo<Option.Option<string>>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/IdentityRepo") {
  static readonly layer = Layer.effect(IdentityRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const events = yield* EventsRepo
      const iso = (column: string) => isoTimestamp(sql, column)
      const proposalRows = decodeRows(ProposalRow)
      const firstProposal = decodeFirstRow(ProposalRow)
      const sideRows = decodeRows(SideRow)
      const firstMoves = decodeFirstRow(Moves)
      const mergeRows = decodeRows(MergeRow)
      const firstMerge = decodeFirstRow(MergeRow)
      const firstId = decodeFirstRow(Schema.Struct({ id: Schema.String }))

      const effectiveStatus = sql.literal(
        "CASE WHEN p.status = 'snoozed' AND p.snoozed_until <= now() THEN 'open' ELSE p.status END"
      )
      const proposalColumns = sql`p.id, ${effectiveStatus} AS status, p.customer_a, p.customer_b, p.evidence,
        ${iso("p.created_at")} AS created_at, ${iso("p.decided_at")} AS decided_at,
        ${iso("p.snoozed_until")} AS snoozed_until, p.merge_id`

      const scan = (profileId: string) =>
        Effect.gen(function*() {
          const [written] = yield* proposeMerges(sql, { profileId })
          const [scanned] = yield* sql<{ count: number }>`
            SELECT count(*)::int AS count FROM customers WHERE profile_id = ${profileId} AND merged_into_id IS NULL AND erased_at IS NULL`
          return { pairs: written?.pairs ?? 0, proposed: written?.proposed ?? 0, customers_scanned: scanned?.count ?? 0 }
        })

      const statusCounts = (profileId: string) =>
        Effect.map(
          sql<{ status: string; count: number }>`
            SELECT ${effectiveStatus} AS status, count(*)::int AS count FROM merge_proposals p
            WHERE p.profile_id = ${profileId} GROUP BY 1`,
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
          sql<{ live: boolean }>`
            SELECT (merged_into_id IS NULL AND erased_at IS NULL) AS live FROM customers
            WHERE id = ANY(${[a, b].sort()}::uuid[]) ORDER BY id FOR UPDATE`,
          (rows) => rows.length === 2 && rows.every((row) => row.live)
        )

      const ids = (rows: ReadonlyArray<{ readonly id: string }>) => rows.map((row) => row.id)
      const recompute = (customerIds: ReadonlyArray<string>) => events.recomputeFirstPayments(customerIds)
      /** The customers' conversions are credited again by the attribution worker. */
      const recredit = (customerIds: ReadonlyArray<string>) =>
        sql`UPDATE conversions SET credited_at = NULL WHERE customer_id = ANY(${customerIds}::uuid[])`

      const merge = (input: {
        readonly mergeId: string
        readonly profileId: string
        readonly survivorId: string
        readonly mergedId: string
        readonly proposalId: string | null
      }) =>
        Effect.gen(function*() {
          const { mergedId: m, survivorId: s } = input
          const touches = ids(yield* sql<{ id: string }>`UPDATE touches SET customer_id = ${s} WHERE customer_id = ${m} RETURNING id::text AS id`)
          const events = ids(yield* sql<{ id: string }>`
            UPDATE outcome_events SET customer_id = ${s} WHERE customer_id = ${m} RETURNING id::text AS id`)
          const conversions = ids(yield* sql<{ id: string }>`
            UPDATE conversions SET customer_id = ${s} WHERE customer_id = ${m} RETURNING id::text AS id`)
          const payer = ids(yield* sql<{ id: string }>`
            UPDATE conversions SET payer_customer_id = ${s} WHERE payer_customer_id = ${m} RETURNING id::text AS id`)
          const hidden = ids(yield* sql<{ id: string }>`
            UPDATE customer_identifiers x SET removed_at = now()
            WHERE x.customer_id = ${m} AND x.removed_at IS NULL
              AND EXISTS (SELECT 1 FROM customer_identifiers y WHERE y.customer_id = ${s} AND y.kind = x.kind
                          AND y.value = x.value AND y.removed_at IS NULL)
            RETURNING x.id::text AS id`)
          const identifiers = ids(yield* sql<{ id: string }>`
            UPDATE customer_identifiers SET customer_id = ${s} WHERE customer_id = ${m} AND removed_at IS NULL
            RETURNING id::text AS id`)
          // One declared source per customer: the survivor's answer stands when both answered.
          const declared = ids(yield* sql<{ id: string }>`
            UPDATE declared_sources SET customer_id = ${s}
            WHERE customer_id = ${m} AND NOT EXISTS (SELECT 1 FROM declared_sources WHERE customer_id = ${s})
            RETURNING id::text AS id`)
          // Merges stay one level deep: customers merged into the merged one now point at the survivor.
          const remerged = ids(yield* sql<{ id: string }>`
            UPDATE customers SET merged_into_id = ${s} WHERE merged_into_id = ${m} RETURNING id::text AS id`)
          yield* sql`UPDATE customers SET merged_into_id = ${s} WHERE id = ${m}`
          yield* recredit([s])
          yield* recompute([s, m])
          const moved: Moved = {
            touches,
            outcome_events: events,
            conversions,
            payer_conversions: payer,
            identifiers,
            hidden_identifiers: hidden,
            declared_sources: declared,
            remerged
          }
          yield* sql`
            INSERT INTO customer_merges (id, profile_id, survivor_id, merged_id, proposal_id, moved)
            VALUES (${input.mergeId}, ${input.profileId}, ${s}, ${m}, ${input.proposalId}, ${JSON.stringify(moved)}::jsonb)`
          return moved
        })

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

      const undo = (row: MergeRow) =>
        Effect.gen(function*() {
          const { merged_id: m, moved, survivor_id: s } = row
          yield* sql`UPDATE touches SET customer_id = ${m} WHERE id = ANY(${moved.touches}::uuid[]) AND customer_id = ${s}`
          yield* sql`UPDATE outcome_events SET customer_id = ${m} WHERE id = ANY(${moved.outcome_events}::uuid[]) AND customer_id = ${s}`
          yield* sql`UPDATE conversions SET customer_id = ${m} WHERE id = ANY(${moved.conversions}::uuid[]) AND customer_id = ${s}`
          yield* sql`
            UPDATE conversions SET payer_customer_id = ${m}
            WHERE id = ANY(${moved.payer_conversions}::uuid[]) AND payer_customer_id = ${s}`
          yield* sql`UPDATE customer_identifiers SET customer_id = ${m} WHERE id = ANY(${moved.identifiers}::uuid[])`
          yield* sql`UPDATE customer_identifiers SET removed_at = NULL WHERE id = ANY(${moved.hidden_identifiers}::uuid[])`
          yield* sql`UPDATE declared_sources SET customer_id = ${m} WHERE id = ANY(${moved.declared_sources}::uuid[])`
          yield* sql`UPDATE customers SET merged_into_id = ${m} WHERE id = ANY(${moved.remerged}::uuid[]) AND merged_into_id = ${s}`
          yield* sql`UPDATE customers SET merged_into_id = NULL WHERE id = ${m}`
          yield* recredit([s, m])
          yield* recompute([s, m])
          yield* sql`UPDATE customer_merges SET undone_at = now() WHERE id = ${row.id}`
          // The pair stays apart: a human said so. The proposer never reopens a dismissed pair.
          if (row.proposal_id !== null) {
            yield* sql`UPDATE merge_proposals SET status = 'dismissed', decided_at = now() WHERE id = ${row.proposal_id}`
          }
        })

      const history = (profileId: string, survivorId: string) =>
        mergeRows(sql`
          SELECT ${mergeColumns} FROM customer_merges g JOIN customers c ON c.id = g.merged_id
          WHERE g.profile_id = ${profileId} AND g.survivor_id = ${survivorId}
          ORDER BY g.merged_at DESC, g.id DESC`)

      const customerByKey = (profileId: string, customerKey: string) =>
        Effect.map(firstId(liveCustomerByKey(sql, profileId, customerKey)), Option.map((row) => row.id))

      return {
        scan: (profileId) => orDatabaseUnavailable(scan(profileId)),
        statusCounts: (profileId) => orDatabaseUnavailable(statusCounts(profileId)),
        listProposals: (profileId, status, after, limit) => orDatabaseUnavailable(listProposals(profileId, status, after, limit)),
        proposal: (profileId, id, lock) => orDatabaseUnavailable(proposal(profileId, id, lock)),
        sides: (profileId, customerIds) => orDatabaseUnavailable(sides(profileId, customerIds)),
        previewMoves: (survivorId, mergedId) => orDatabaseUnavailable(previewMoves(survivorId, mergedId)),
        lockPair: (a, b) => orDatabaseUnavailable(lockPair(a, b)),
        merge: (input) => orDatabaseUnavailable(merge(input)),
        setProposalStatus: (id, status, snoozedUntil, mergeId) => orDatabaseUnavailable(setProposalStatus(id, status, snoozedUntil, mergeId)),
        supersede: (mergedId, except) => orDatabaseUnavailable(supersede(mergedId, except)),
        mergeById: (profileId, id, lock) => orDatabaseUnavailable(mergeById(profileId, id, lock)),
        undo: (row) => orDatabaseUnavailable(undo(row)),
        history: (profileId, survivorId) => orDatabaseUnavailable(history(profileId, survivorId)),
        customerByKey: (profileId, key) => orDatabaseUnavailable(customerByKey(profileId, key)),
        transaction: (effect) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  ).pipe(Layer.provide(EventsRepo.layer))
}
