/**
 * The merge proposer (decision 0040): live customers of a profile that hold one identifier
 * value are the same person, maybe. Each such pair (every holder with the lowest id among them,
 * so a value held by n customers gives n - 1 pairs) gets a merge proposal, never a merge. One
 * statement, used by the scan (a whole profile) and by identity resolution (the identifiers an
 * ingest just attached).
 */
import type { SqlClient } from "effect/sql/SqlClient"

/** The identifier kinds that make two customers the same person when both hold one value. */
export const MATCHING_KINDS = ["email", "phone", "crm_contact_id", "national_id", "anonymous_id"] as const

export type ProposerScope =
  | { readonly profileId: string }
  | { readonly identifiers: ReadonlyArray<{ readonly profileId: string; readonly kind: string; readonly value: string }> }

/**
 * Writes the proposals of the scope; answers `{pairs, proposed}`. A pair proposed before keeps
 * its proposal: open and snoozed ones get fresh evidence, decided ones (a dismissed pair stays
 * apart) are left as they are.
 */
export const proposeMerges = (sql: SqlClient, scope: ProposerScope) => {
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
  return sql<{ pairs: number; proposed: number }>`
    WITH shared AS (
      SELECT h.profile_id, h.kind, h.value, array_agg(DISTINCT h.customer_id ORDER BY h.customer_id) AS ids
      FROM (${holders}) h
      JOIN customers c ON c.id = h.customer_id AND c.merged_into_id IS NULL AND c.erased_at IS NULL
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
