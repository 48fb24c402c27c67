/**
 * What the replay bench checks after each replay, so that a faster replay cannot be a different
 * replay:
 * - `referencePathStats`: the `svc_model` statistics the straightforward way (decision 0030's
 *   query: every channel path as an array, then `buildPathStats` in memory), to compare with
 *   `CreditEngine.pathStats`.
 * - `storedState` against `addExpected`: every credit row of the profile against `creditAll` over
 *   the paths the read baseline fetched, with the reference statistics.
 * - `independentSample`: for a sample of conversions, the customer's touches read with plain SQL
 *   (no window, no slack, nothing shared with `candidateTouches`), credited with `creditAll`
 *   directly, and compared row by row with what the replay wrote.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import { isDeepStrictEqual } from "node:util"
import { buildPathStats, type CreditModel, creditAll, type PathStats, type TouchInput, type TouchKind } from "../../src/attribution/models/index.ts"

/** Decision 0030's channel paths (converting and not), one array per path, then `buildPathStats`. */
export const referencePathStats = (sql: SqlClient, profileId: string) =>
  Effect.map(
    sql<{ converted: boolean; channels: Array<string> }>`
      WITH bound AS (
        SELECT DISTINCT ci.value AS anonymous_id, ci.customer_id
        FROM customer_identifiers ci
        WHERE ci.profile_id = ${profileId} AND ci.kind = 'anonymous_id' AND ci.removed_at IS NULL
      ),
      ct AS (
        SELECT t.id, t.occurred_at, t.channel, t.customer_id::text AS identity FROM touches t
        WHERE t.profile_id = ${profileId} AND t.kind <> 'outcome' AND t.customer_id IS NOT NULL
        UNION
        SELECT t.id, t.occurred_at, t.channel, b.customer_id::text FROM touches t
        JOIN bound b ON b.anonymous_id = t.anonymous_id
        WHERE t.profile_id = ${profileId} AND t.kind <> 'outcome'
        UNION
        SELECT t.id, t.occurred_at, t.channel, 'anonymous:' || t.anonymous_id FROM touches t
        WHERE t.profile_id = ${profileId} AND t.kind <> 'outcome' AND t.customer_id IS NULL AND t.anonymous_id IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM bound b WHERE b.anonymous_id = t.anonymous_id)
      ),
      conv AS (
        SELECT c.id, c.customer_id::text AS identity, c.occurred_at, COALESCE(d.lookback_window_days, 30) AS days
        FROM conversions c LEFT JOIN conversion_definitions d ON d.id = c.definition_id
        WHERE c.profile_id = ${profileId} AND c.customer_id IS NOT NULL
          AND COALESCE(d.attribution_eligible, c.attribution_eligible)
      ),
      last_touch AS (SELECT identity, max(occurred_at) AS last_at FROM ct GROUP BY identity)
      SELECT true AS converted, array_agg(ct.channel ORDER BY ct.occurred_at, ct.id) AS channels
      FROM conv JOIN ct ON ct.identity = conv.identity
        AND ct.occurred_at <= conv.occurred_at AND ct.occurred_at >= conv.occurred_at - make_interval(days => conv.days)
      GROUP BY conv.id
      UNION ALL
      SELECT false AS converted, array_agg(ct.channel ORDER BY ct.occurred_at, ct.id) AS channels
      FROM ct JOIN last_touch l ON l.identity = ct.identity
      WHERE ct.occurred_at >= l.last_at - make_interval(days => 30)
        AND NOT EXISTS (SELECT 1 FROM conv WHERE conv.identity = ct.identity)
      GROUP BY ct.identity`,
    (paths) => ({ stats: buildPathStats(paths), paths: paths.length })
  )

/** Where two statistics differ (empty when they are equal). */
export const statsDifference = (actual: PathStats, expected: PathStats): ReadonlyArray<string> => {
  const keys = ["converting_paths", "total_paths", "channels", "start", "transitions", "conversions", "nulls"] as const
  return keys.filter((key) => !isDeepStrictEqual(actual[key], expected[key]))
    .map((key) => `${key}: got ${JSON.stringify(actual[key])}, expected ${JSON.stringify(expected[key])}`)
}

/** A stored or expected credit state: `conversion|model|touch` → `position|share|credited|in_window`. */
export type CreditState = Map<string, string>

const keyOf = (conversion: string, model: string, touch: string) => `${conversion}|${model}|${touch}`
const valueOf = (position: number, share: string, credited: boolean, inWindow: boolean) => `${position}|${share}|${credited}|${inWindow}`
const conversionOf = (key: string) => key.slice(0, key.indexOf("|"))

/** Every credit row of the profile (or of `conversionIds`; from `table`, a snapshot of the same columns). */
export const storedState = (sql: SqlClient, profileId: string, conversionIds?: ReadonlyArray<string>, table = "attribution_credits") =>
  Effect.map(
    sql<{
      readonly conversion_id: string
      readonly model: CreditModel
      readonly touch_id: string
      readonly position: number
      readonly credit_share: string
      readonly is_credited: boolean
      readonly in_window: boolean
    }>`
      SELECT a.conversion_id::text AS conversion_id, a.model, a.touch_id::text AS touch_id, a.position,
             a.credit_share::text AS credit_share, a.is_credited, a.in_window
      FROM ${sql(table)} a
      WHERE a.profile_id = ${profileId}
        ${conversionIds === undefined ? sql`` : sql`AND a.conversion_id = ANY(${conversionIds}::uuid[])`}`,
    (rows): CreditState => {
      const state: CreditState = new Map()
      for (const row of rows) {
        state.set(keyOf(row.conversion_id, row.model, row.touch_id), valueOf(row.position, row.credit_share, row.is_credited, row.in_window))
      }
      return state
    }
  )

/** Adds `creditAll`'s rows for one conversion to `state`; answers how many. */
export const addExpected = (
  state: CreditState,
  conversion: { readonly id: string; readonly occurred_ms: number; readonly window_days: number },
  touches: ReadonlyArray<TouchInput>,
  stats: PathStats
): number => {
  let n = 0
  for (const result of creditAll({ occurred_at: conversion.occurred_ms, lookback_window_days: conversion.window_days }, touches, stats)) {
    for (const row of result.rows) {
      state.set(keyOf(conversion.id, result.model, row.touch_id), valueOf(row.position, row.credit_share, row.is_credited, row.in_window))
      n++
    }
  }
  return n
}

/** Conversions whose stored rows differ from the expected ones (at most `limit`, with the first differing row). */
export const compareStates = (stored: CreditState, expected: CreditState, limit = 10) => {
  const bad = new Map<string, string>()
  for (const [key, value] of expected) {
    const got = stored.get(key)
    if (got !== value && !bad.has(conversionOf(key))) bad.set(conversionOf(key), `${key}: stored ${got ?? "nothing"}, expected ${value}`)
  }
  for (const [key, value] of stored) {
    if (!expected.has(key) && !bad.has(conversionOf(key))) bad.set(conversionOf(key), `${key}: stored ${value}, expected no row`)
  }
  return { conversions: bad.size, examples: [...bad.values()].slice(0, limit) }
}

/** What a replay changed: rows inserted, updated (same key, other values), deleted, left alone. */
export const stateChanges = (before: CreditState, after: CreditState) => {
  let inserted = 0
  let updated = 0
  let unchanged = 0
  for (const [key, value] of after) {
    const old = before.get(key)
    if (old === undefined) inserted++
    else if (old === value) unchanged++
    else updated++
  }
  let deleted = 0
  for (const key of before.keys()) if (!after.has(key)) deleted++
  return { inserted, updated, deleted, unchanged }
}

/**
 * A sample of `size` conversions (chosen by a hash of their id), each credited from scratch:
 * the customer's touches by `customer_id` and by every live bound anonymous id, all of them (the
 * models pick the window), then `creditAll` with `stats`. Answers the mismatches and how many
 * conversions and rows were compared.
 */
export const independentSample = (sql: SqlClient, profileId: string, stats: PathStats, size: number) =>
  Effect.gen(function*() {
    const sample = yield* sql<{ id: string; customer_id: string; occurred_ms: number; window_days: number }>`
      SELECT c.id::text AS id, c.customer_id::text AS customer_id,
             floor(extract(epoch FROM c.occurred_at) * 1000)::float8 AS occurred_ms,
             COALESCE(d.lookback_window_days, 30) AS window_days
      FROM conversions c LEFT JOIN conversion_definitions d ON d.id = c.definition_id
      WHERE c.profile_id = ${profileId} AND c.customer_id IS NOT NULL AND COALESCE(d.attribution_eligible, c.attribution_eligible)
      ORDER BY md5(c.id::text) LIMIT ${size}`
    const expected: CreditState = new Map()
    let rows = 0
    for (const conversion of sample) {
      const touches = yield* sql<{ id: string; kind: TouchKind; channel: string; occurred_ms: number }>`
        SELECT t.id::text AS id, t.kind, t.channel, floor(extract(epoch FROM t.occurred_at) * 1000)::float8 AS occurred_ms
        FROM touches t
        WHERE t.profile_id = ${profileId}
          AND (t.customer_id = ${conversion.customer_id}::uuid
            OR t.anonymous_id IN (
              SELECT ci.value FROM customer_identifiers ci
              WHERE ci.profile_id = ${profileId} AND ci.customer_id = ${conversion.customer_id}::uuid
                AND ci.kind = 'anonymous_id' AND ci.removed_at IS NULL))`
      rows += addExpected(
        expected,
        conversion,
        touches.map((t) => ({ id: t.id, kind: t.kind, channel: t.channel, occurred_at: t.occurred_ms })),
        stats
      )
    }
    const stored = yield* storedState(sql, profileId, sample.map((conversion) => conversion.id))
    return { ...compareStates(stored, expected), sampled: sample.length, rows }
  })

/** Where the state before a replay is kept while it runs (`snapshotBefore`), to count what it changed. */
const SNAPSHOT = "bench_replay_before"

/** Keeps the profile's credit rows as they are now (not timed), for `checkInChunks` to compare with. */
export const snapshotBefore = (sql: SqlClient, profileId: string) =>
  Effect.gen(function*() {
    yield* sql`DROP TABLE IF EXISTS ${sql(SNAPSHOT)}`
    yield* sql`
      CREATE UNLOGGED TABLE ${sql(SNAPSHOT)} AS
      SELECT profile_id, conversion_id, model, touch_id, position, credit_share, is_credited, in_window
      FROM attribution_credits WHERE profile_id = ${profileId}`
    yield* sql`CREATE INDEX ON ${sql(SNAPSHOT)} (conversion_id)`
  })

export const dropSnapshot = (sql: SqlClient) => Effect.asVoid(sql`DROP TABLE IF EXISTS ${sql(SNAPSHOT)}`)

/**
 * After a replay: every stored row of the profile against `creditAll`'s, and what changed against
 * the snapshot taken before it, a chunk of conversions at a time, so that memory holds one chunk's
 * rows (a whole 10M-touch profile's 16.7M rows in three maps did not fit a 12 GB heap). `expectedOf`
 * answers the expected rows of a chunk's conversions (none for one that takes no credit) and their count.
 */
export const checkInChunks = <E, R>(
  sql: SqlClient,
  profileId: string,
  conversionIds: ReadonlyArray<string>,
  expectedOf: (conversionIds: ReadonlyArray<string>) => Effect.Effect<{ readonly state: CreditState; readonly rows: number }, E, R>,
  chunk = 20_000,
  limit = 10
) =>
  Effect.gen(function*() {
    const changes = { inserted: 0, updated: 0, deleted: 0, unchanged: 0 }
    let rows = 0
    let conversions = 0
    let seen = 0
    const examples: Array<string> = []
    for (let start = 0; start < conversionIds.length; start += chunk) {
      const ids = conversionIds.slice(start, start + chunk)
      const before = yield* storedState(sql, profileId, ids, SNAPSHOT)
      const after = yield* storedState(sql, profileId, ids)
      const { state: expected, rows: chunkRows } = yield* expectedOf(ids)
      rows += chunkRows
      seen += after.size
      const changed = stateChanges(before, after)
      changes.inserted += changed.inserted
      changes.updated += changed.updated
      changes.deleted += changed.deleted
      changes.unchanged += changed.unchanged
      const mismatches = compareStates(after, expected, limit)
      conversions += mismatches.conversions
      for (const example of mismatches.examples) if (examples.length < limit) examples.push(example)
    }
    // Rows of conversions the bench does not know (none expected) count against the replay too.
    const [all] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM attribution_credits WHERE profile_id = ${profileId}`
    const stray = (all?.n ?? 0) - seen
    if (stray !== 0) {
      conversions++
      if (examples.length < limit) examples.push(`${stray} rows of conversions outside the profile's list`)
    }
    return { changes, rows, mismatches: { conversions, examples } }
  })
