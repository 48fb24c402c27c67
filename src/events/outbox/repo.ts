/** The owner of `outbox` (DESIGN.md, "Table ownership"): the rows server-side events leave for delivery, and their erasure. */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary } from "../../platform/database.ts"

export interface NewOutboxRow {
  readonly id: string
  readonly profileId: string
  readonly topic: string
  readonly payload: unknown
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class OutboxRepo extends Context.Service<OutboxRepo, {
  /** Inserts the rows (one statement), in the caller's transaction. */
  readonly insert: (rows: ReadonlyArray<NewOutboxRow>) => Repo<void>
  /**
   * Erasure: `outcome.recorded` rows of these customers, delivered or not (the replay answers them
   * too), lose the customer key and the customer to open.
   */
  readonly forgetCustomers: (customerIds: ReadonlyArray<string>) => Repo<void>
}>()("svc/OutboxRepo") {
  static readonly layer = Layer.effect(OutboxRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient

      const insert = (rows: ReadonlyArray<NewOutboxRow>) =>
        rows.length === 0 ? Effect.void : Effect.asVoid(sql`
          INSERT INTO outbox (id, profile_id, topic, payload)
          SELECT * FROM unnest(${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.profileId)}::uuid[],
                               ${rows.map((r) => r.topic)}::text[], ${rows.map((r) => JSON.stringify(r.payload))}::jsonb[])`)

      const forgetCustomers = (ids: ReadonlyArray<string>) =>
        Effect.asVoid(sql`
          UPDATE outbox
          SET payload = jsonb_set(jsonb_set(payload, '{data,customer_key}', 'null'::jsonb), '{delivery,customer_id}', 'null'::jsonb)
          WHERE payload->'delivery'->>'customer_id' = ANY(${ids}::text[])`)

      return atDatabaseBoundary({ insert, forgetCustomers })
    })
  )
}
