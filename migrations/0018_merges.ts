import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Merge review (decision 0040): proposals to merge two customers that share an identifier, and
 * each merge with what it moved, so an undo restores both customers exactly.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE merge_proposals (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      -- The pair in id order: one proposal per pair, however often the proposer sees it.
      customer_a uuid NOT NULL REFERENCES customers (id),
      customer_b uuid NOT NULL REFERENCES customers (id),
      -- The shared identifiers: [{type, value}].
      evidence jsonb NOT NULL DEFAULT '[]'::jsonb,
      status text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'snoozed', 'merged', 'dismissed', 'superseded')),
      snoozed_until timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      decided_at timestamptz,
      merge_id uuid,
      CHECK (customer_a < customer_b),
      UNIQUE (profile_id, customer_a, customer_b)
    )`
  yield* sql`CREATE INDEX merge_proposals_queue ON merge_proposals (profile_id, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX merge_proposals_customer_b ON merge_proposals (customer_b)`
  yield* sql`
    CREATE TABLE customer_merges (
      -- The id of the merge's audit event: the merge is undone through it.
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      survivor_id uuid NOT NULL REFERENCES customers (id),
      merged_id uuid NOT NULL REFERENCES customers (id),
      proposal_id uuid REFERENCES merge_proposals (id),
      -- Ids of every row the merge moved or hid, by kind (never personal data).
      moved jsonb NOT NULL,
      merged_at timestamptz NOT NULL DEFAULT now(),
      undone_at timestamptz
    )`
  yield* sql`CREATE INDEX customer_merges_survivor ON customer_merges (survivor_id, merged_at DESC)`
})
