/**
 * `attribution_credits`: one row per conversion, model and path touch, written by the crediting
 * engine (src/attribution/engine.ts) as a difference against the stored rows (decision 0035).
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary } from "../../platform/database.ts"

/** Rows of each kind (deleted, updated, inserted) per write statement (array parameters whatever the count). */
const WRITE_CHUNK = 50_000

/** Credit rows column by column, as the write statement takes them. */
export interface CreditColumns {
  /** The conversion's profile: the distribution column (migration 0064). */
  readonly profile: Array<string>
  readonly conversion: Array<string>
  /** The conversion's `occurred_at` (ISO text, microseconds): the month the row is kept in (migration 0073). */
  readonly convertedAt: Array<string>
  readonly model: Array<string>
  readonly touch: Array<string>
  /** The touch's `occurred_at` (ISO text, microseconds): its whole key with the id (migration 0075). */
  readonly touchAt: Array<string>
  readonly position: Array<number>
  readonly share: Array<string>
  readonly credited: Array<boolean>
  readonly inWindow: Array<boolean>
}

export const emptyCreditColumns = (): CreditColumns => ({
  profile: [],
  conversion: [],
  convertedAt: [],
  model: [],
  touch: [],
  touchAt: [],
  position: [],
  share: [],
  credited: [],
  inWindow: []
})

const sliceColumns = (columns: CreditColumns, start: number, end: number): CreditColumns => ({
  profile: columns.profile.slice(start, end),
  conversion: columns.conversion.slice(start, end),
  convertedAt: columns.convertedAt.slice(start, end),
  model: columns.model.slice(start, end),
  touch: columns.touch.slice(start, end),
  touchAt: columns.touchAt.slice(start, end),
  position: columns.position.slice(start, end),
  share: columns.share.slice(start, end),
  credited: columns.credited.slice(start, end),
  inWindow: columns.inWindow.slice(start, end)
})

/**
 * Stored rows to update in place: their profile, month and `ctid` (a `ctid` names a row only within
 * one partition of one shard: the month names the partition, the profile the shard), and new values.
 */
export interface ChangedCredits {
  readonly profile: Array<string>
  readonly convertedAt: Array<string>
  readonly ctid: Array<string>
  readonly position: Array<number>
  readonly share: Array<string>
  readonly credited: Array<boolean>
  readonly inWindow: Array<boolean>
}

/** Stored rows to delete: their profile, month and `ctid`. */
export interface GoneCredits {
  readonly profile: Array<string>
  readonly convertedAt: Array<string>
  readonly ctid: Array<string>
}

const sliceChanged = (changed: ChangedCredits, start: number, end: number): ChangedCredits => ({
  profile: changed.profile.slice(start, end),
  convertedAt: changed.convertedAt.slice(start, end),
  ctid: changed.ctid.slice(start, end),
  position: changed.position.slice(start, end),
  share: changed.share.slice(start, end),
  credited: changed.credited.slice(start, end),
  inWindow: changed.inWindow.slice(start, end)
})

/** The stored credit rows of some conversions, one array per column (`credit_share` as its 10-decimal text, `ctid` as text). */
export const StoredCredits = Schema.Struct({
  ctid: Schema.Array(Schema.String),
  conversion: Schema.Array(Schema.String),
  model: Schema.Array(Schema.String),
  touch: Schema.Array(Schema.String),
  position: Schema.Array(Schema.Int),
  share: Schema.Array(Schema.String),
  credited: Schema.Array(Schema.Boolean),
  in_window: Schema.Array(Schema.Boolean)
})
export type StoredCredits = typeof StoredCredits.Type

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

/** The read of `stored`, as a statement: test/api/replay-plans.test.ts checks the plan it keeps. */
export const storedStatement = (
  sql: SqlClient,
  ids: ReadonlyArray<string>,
  profiles: ReadonlyArray<string>,
  times: ReadonlyArray<string>
) =>
  sql`
    SELECT a.ctid::text AS ctid, a.conversion_id::text AS conversion, a.model, a.touch_id::text AS touch, a.position,
           a.credit_share::text AS share, a.is_credited AS credited, a.in_window
    FROM unnest(${ids}::uuid[], ${profiles}::uuid[], ${times}::timestamptz[]) AS x(id, profile_id, converted_at)
    CROSS JOIN LATERAL (
      SELECT a.ctid, a.conversion_id, a.model, a.touch_id, a.position, a.credit_share, a.is_credited, a.in_window
      FROM attribution_credits a
      WHERE a.conversion_id = x.id AND a.profile_id = x.profile_id AND a.converted_at = x.converted_at OFFSET 0
    ) a`

export class CreditsRepo extends Context.Service<CreditsRepo, {
  /**
   * The stored credit rows of the conversions `ids` (of `profiles` and at `times`, pairwise: the
   * whole key, so each probe reads its conversion's month only), each with its `ctid` so that the
   * write can address it without a join. One index scan per conversion (the `OFFSET 0` keeps the planner from
   * turning it into a join whose plan would follow the table's statistics). The rows are
   * turned into columns and decoded column-wise (decision 0035).
   */
  readonly stored: (ids: ReadonlyArray<string>, profiles: ReadonlyArray<string>, times: ReadonlyArray<string>) => Repo<StoredCredits>
  /**
   * Deletes and updates by (profile, month, `ctid`) (rows read in this transaction, whose conversions it
   * holds locked) and inserts the new rows, in statements of at most WRITE_CHUNK rows of each kind.
   * No per-row foreign-key checks (migration 0066, decision 0131): the caller holds the conversions
   * locked and the profiles' crediting lock, and wrote rows only for touches it read under it.
   */
  readonly write: (gone: GoneCredits, changed: ChangedCredits, added: CreditColumns) => Repo<void>
  /** Deletes every credit row of the conversion (in the caller's transaction). */
  readonly clear: (conversionId: string) => Repo<void>
}>()("svc/CreditsRepo") {
  static readonly layer = Layer.effect(CreditsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const decodeStored = Schema.decodeUnknownEffect(StoredCredits)

      const stored = (ids: ReadonlyArray<string>, profiles: ReadonlyArray<string>, times: ReadonlyArray<string>) =>
        Effect.flatMap(
          // Decoded column by column (StoredCredits) once the rows are turned into columns.
          storedStatement(sql, ids, profiles, times),
          (rows) => {
            const columns: Record<keyof typeof StoredCredits.fields, Array<unknown>> = {
              ctid: [],
              conversion: [],
              model: [],
              touch: [],
              position: [],
              share: [],
              credited: [],
              in_window: []
            }
            for (const row of rows) {
              columns.ctid.push(row["ctid"])
              columns.conversion.push(row["conversion"])
              columns.model.push(row["model"])
              columns.touch.push(row["touch"])
              columns.position.push(row["position"])
              columns.share.push(row["share"])
              columns.credited.push(row["credited"])
              columns.in_window.push(row["in_window"])
            }
            return decodeStored(columns)
          }
        )

      const writeChunk = (gone: GoneCredits, changed: ChangedCredits, added: CreditColumns) =>
        sql`
          WITH gone AS (
            DELETE FROM attribution_credits a
            USING unnest(${gone.profile}::uuid[], ${gone.convertedAt}::timestamptz[], ${gone.ctid}::tid[]) AS u(profile_id, converted_at, ctid)
            WHERE a.ctid = u.ctid AND a.profile_id = u.profile_id AND a.converted_at = u.converted_at
          ),
          changed AS (
            UPDATE attribution_credits a
            SET position = u.position, credit_share = u.credit_share, is_credited = u.is_credited, in_window = u.in_window
            FROM unnest(${changed.profile}::uuid[], ${changed.convertedAt}::timestamptz[], ${changed.ctid}::tid[], ${changed.position}::int[],
                        ${changed.share}::numeric[], ${changed.credited}::boolean[], ${changed.inWindow}::boolean[])
              AS u(profile_id, converted_at, ctid, position, credit_share, is_credited, in_window)
            WHERE a.ctid = u.ctid AND a.profile_id = u.profile_id AND a.converted_at = u.converted_at
          )
          INSERT INTO attribution_credits (profile_id, conversion_id, converted_at, model, touch_id, touch_at, position, credit_share,
                                           is_credited, in_window)
          SELECT * FROM unnest(
            ${added.profile}::uuid[], ${added.conversion}::uuid[], ${added.convertedAt}::timestamptz[], ${added.model}::text[],
            ${added.touch}::uuid[], ${added.touchAt}::timestamptz[], ${added.position}::int[], ${added.share}::numeric[],
            ${added.credited}::boolean[], ${added.inWindow}::boolean[])`

      const write = (gone: GoneCredits, changed: ChangedCredits, added: CreditColumns) =>
        Effect.gen(function*() {
          // Bounded statements: at most WRITE_CHUNK rows of each kind per statement.
          for (let start = 0; start < Math.max(gone.ctid.length, changed.ctid.length, added.conversion.length); start += WRITE_CHUNK) {
            const end = start + WRITE_CHUNK
            yield* writeChunk(
              { profile: gone.profile.slice(start, end), convertedAt: gone.convertedAt.slice(start, end), ctid: gone.ctid.slice(start, end) },
              sliceChanged(changed, start, end),
              sliceColumns(added, start, end)
            )
          }
        })

      // Rare (a conversion that cannot be credited, a payment moved): found by id, its rows then by whole key.
      const clear = (conversionId: string) =>
        Effect.asVoid(sql`
          DELETE FROM attribution_credits a USING conversions c
          WHERE c.id = ${conversionId} AND a.conversion_id = c.id AND a.profile_id = c.profile_id AND a.converted_at = c.occurred_at`)

      return atDatabaseBoundary({ stored, write, clear })
    })
  )
}
