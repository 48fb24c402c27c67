import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The commerce copy (issue 18, decision 0064): what the commerce sync and `/hooks/commerce`
 * keep of a connected store.
 *
 * - `commerce_products`: the catalogue without stock (stock is read live only); variants as JSON.
 * - `commerce_orders`: orders without the buyer's identity: email and phone are kept only as
 *   SHA-256 of their normalised form, for the `?email=` / `?phone=` lookup.
 * - `commerce_order_milestones`: one row per (profile, shop, order, status) ever written as an
 *   `order.status.changed` outbox row; the primary key is what makes a milestone once-only
 *   across redeliveries, syncs and restarts.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE commerce_products (
      profile_id uuid NOT NULL,
      shop text NOT NULL,
      product_id text NOT NULL,
      title text NOT NULL,
      handle text NOT NULL,
      status text NOT NULL,
      variants jsonb NOT NULL,
      updated_at timestamptz NOT NULL,
      synced_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (profile_id, shop, product_id)
    )`
  yield* sql`
    CREATE TABLE commerce_orders (
      profile_id uuid NOT NULL,
      shop text NOT NULL,
      order_id text NOT NULL,
      number bigint NOT NULL,
      name text NOT NULL,
      status text NOT NULL,
      milestones jsonb NOT NULL,
      financial_status text NOT NULL,
      fulfillment_status text,
      currency text NOT NULL,
      total_price text NOT NULL,
      lines jsonb NOT NULL,
      email_hash text,
      phone_hash text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      synced_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (profile_id, shop, order_id)
    )`
  yield* sql`CREATE INDEX commerce_orders_number ON commerce_orders (profile_id, number)`
  yield* sql`CREATE INDEX commerce_orders_email ON commerce_orders (profile_id, email_hash) WHERE email_hash IS NOT NULL`
  yield* sql`CREATE INDEX commerce_orders_phone ON commerce_orders (profile_id, phone_hash) WHERE phone_hash IS NOT NULL`
  yield* sql`
    CREATE TABLE commerce_order_milestones (
      profile_id uuid NOT NULL,
      shop text NOT NULL,
      order_id text NOT NULL,
      status text NOT NULL,
      outbox_id uuid NOT NULL,
      written_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (profile_id, shop, order_id, status)
    )`
})
