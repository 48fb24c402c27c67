import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * Server-side events (decision 0029): the designed `order_group` of a payment (another order of
 * the same first purchase), the conversion exports and conversation leads that make an event
 * unretractable (each domain that writes them later builds on these tables), and an index for
 * the conversions list filtered by key.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`ALTER TABLE outcome_events ADD COLUMN order_group text`
  yield* sql`ALTER TABLE conversions ADD COLUMN order_group text`
  yield* sql`CREATE INDEX conversions_profile_key_time ON conversions (profile_id, conversion_key, occurred_at DESC, id DESC)`
  // One row per export attempt of an outcome to a destination, in any status: while one
  // exists the event can no longer be retracted (409 event_already_exported).
  yield* sql`
    CREATE TABLE conversion_exports (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      outcome_event_id uuid NOT NULL REFERENCES outcome_events (id),
      destination text NOT NULL,
      status text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX conversion_exports_event ON conversion_exports (outcome_event_id)`
  // A conversation that recorded an outcome event as its lead (409 event_linked_to_conversation).
  yield* sql`
    CREATE TABLE conversation_leads (
      conversation_id uuid NOT NULL,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      outcome_event_id uuid NOT NULL REFERENCES outcome_events (id),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (conversation_id, outcome_event_id)
    )`
  yield* sql`CREATE INDEX conversation_leads_event ON conversation_leads (outcome_event_id)`
})
