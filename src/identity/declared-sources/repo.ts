/**
 * SQL of declared sources (decision 0033): a customer's own answer to "how did you hear of us",
 * one per customer, each with the `organic_interaction` touch it recorded; the owner of
 * `declared_sources` (DESIGN.md, "Table ownership"). A merge moves the answer with its customer
 * and an erasure deletes it; the partner route (src/ingestion/partner) records it.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

export const StoredAnswer = Schema.Struct({
  answer_id: Schema.String,
  customer_id: Schema.String,
  customer_key: Schema.NullOr(Schema.String),
  answer_key: Schema.String,
  channel: Schema.String,
  answered_at: Schema.String,
  touch_id: Schema.String,
  request_hash: Schema.String
})
export type StoredAnswer = typeof StoredAnswer.Type

export interface NewAnswer {
  readonly id: string
  readonly profileId: string
  readonly customerId: string
  readonly answerKey: string
  readonly answerText: string | null
  readonly wamid: string | null
  readonly requestHash: string
  /** ISO 8601 with offset. */
  readonly answeredAt: string
  readonly touchId: string
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class DeclaredSourcesRepo extends Context.Service<DeclaredSourcesRepo, {
  /** Serialises declared-source requests of one `wamid` until the transaction ends. */
  readonly lockWamid: (profileId: string, wamid: string) => Repo<void>
  readonly answerByWamid: (profileId: string, wamid: string) => Repo<Option.Option<StoredAnswer>>
  readonly answerByCustomer: (customerId: string) => Repo<Option.Option<StoredAnswer>>
  readonly insertAnswer: (answer: NewAnswer) => Repo<void>
  /** A merge: the merged customer's declared source goes to the survivor unless the survivor has one; answers its id. */
  readonly moveDeclaredSources: (fromCustomerId: string, toCustomerId: string) => Repo<ReadonlyArray<string>>
  /** A merge's undo: these declared sources go back to the merged customer. */
  readonly returnDeclaredSources: (ids: ReadonlyArray<string>, toCustomerId: string) => Repo<void>
  /** Erasure: deletes the customers' declared sources; answers how many. */
  readonly deleteDeclaredSourcesOf: (customerIds: ReadonlyArray<string>) => Repo<number>
}>()("svc/DeclaredSourcesRepo") {
  static readonly layer = Layer.effect(DeclaredSourcesRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const idRows = decodeRows(Schema.Struct({ id: Schema.String }))
      const firstAnswer = decodeFirstRow(StoredAnswer)

      const lockWamid = (profileId: string, wamid: string) =>
        Effect.asVoid(
          sql`SELECT true AS locked FROM pg_advisory_xact_lock(hashtextextended(${`declared_source:${profileId}:${wamid}`}, 0))`
        )

      const answerColumns = sql`
        a.id::text AS answer_id, a.customer_id::text AS customer_id, cu.customer_key, a.answer_key, t.channel,
        ${isoTimestamp(sql, "a.answered_at")} AS answered_at, a.touch_id::text AS touch_id, a.request_hash`

      const answerByWamid = (profileId: string, wamid: string) =>
        firstAnswer(sql`
          SELECT ${answerColumns}
          FROM declared_sources a JOIN customers cu ON cu.id = a.customer_id JOIN touches t ON t.id = a.touch_id AND t.profile_id = a.profile_id AND t.occurred_at = a.answered_at
          WHERE a.profile_id = ${profileId} AND a.wamid = ${wamid}`)

      const answerByCustomer = (customerId: string) =>
        firstAnswer(sql`
          SELECT ${answerColumns}
          FROM declared_sources a JOIN customers cu ON cu.id = a.customer_id JOIN touches t ON t.id = a.touch_id AND t.profile_id = a.profile_id AND t.occurred_at = a.answered_at
          WHERE a.customer_id = ${customerId}`)

      const insertAnswer = (answer: NewAnswer) =>
        Effect.asVoid(sql`
          INSERT INTO declared_sources (id, profile_id, customer_id, answer_key, answer_text, wamid, request_hash, answered_at, touch_id)
          VALUES (${answer.id}, ${answer.profileId}, ${answer.customerId}, ${answer.answerKey}, ${answer.answerText},
                  ${answer.wamid}, ${answer.requestHash}, ${answer.answeredAt}::timestamptz, ${answer.touchId})`)

      const moveDeclaredSources = (m: string, s: string) =>
        Effect.map(
          idRows(sql`
            UPDATE declared_sources SET customer_id = ${s}
            WHERE customer_id = ${m} AND NOT EXISTS (SELECT 1 FROM declared_sources WHERE customer_id = ${s})
            RETURNING id::text AS id`),
          (rows) => rows.map((row) => row.id)
        )

      const returnDeclaredSources = (ids: ReadonlyArray<string>, m: string) =>
        Effect.asVoid(sql`UPDATE declared_sources SET customer_id = ${m} WHERE id = ANY(${ids}::uuid[])`)

      const deleteDeclaredSourcesOf = (customerIds: ReadonlyArray<string>) =>
        Effect.map(sql`DELETE FROM declared_sources WHERE customer_id = ANY(${customerIds}::uuid[]) RETURNING id`, (rows) => rows.length)

      return atDatabaseBoundary({
        lockWamid,
        answerByWamid,
        answerByCustomer,
        insertAnswer,
        moveDeclaredSources,
        returnDeclaredSources,
        deleteDeclaredSourcesOf
      })
    })
  )
}
