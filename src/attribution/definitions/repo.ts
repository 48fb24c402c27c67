/** SQL of conversion definitions (`conversion_definitions`) and the outcome keys a stage may map to. */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { ConversionDefinition, DefinitionKind } from "../../../schema/attribution.ts"
import { isUuid } from "../../../schema/common.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { Keyset } from "../../platform/pagination.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

/** A definition row is the published resource, column for column. */
export const DefinitionRow = Schema.Struct(ConversionDefinition.fields)
export type DefinitionRow = typeof DefinitionRow.Type

/** Everything a write sets on a definition. */
export interface DefinitionValues {
  readonly conversion_key: string
  readonly name: string
  readonly kind: DefinitionKind
  readonly event_names: ReadonlyArray<string>
  readonly event_key: string | null
  readonly lookback_window_days: number
  readonly is_default: boolean
  readonly counts_as_cash: boolean
  readonly attribution_eligible: boolean
}

/** A name some definition already lists. */
export const NameOwnerRow = Schema.Struct({ event_name: Schema.String, id: Schema.String, conversion_key: Schema.String })
export type NameOwnerRow = typeof NameOwnerRow.Type

export const OutcomeKeyRow = Schema.Struct({
  key: Schema.String,
  seen_in_events: Schema.Boolean,
  conversion_key: Schema.NullOr(Schema.String)
})
export type OutcomeKeyRow = typeof OutcomeKeyRow.Type

/** At most this many received event names are listed by the read (the rule itself checks each key exactly). */
export const MAX_SEEN_KEYS = 1000

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>
type Page = { readonly limit: number; readonly after: Option.Option<Keyset> }

export class DefinitionsRepo extends Context.Service<DefinitionsRepo, {
  /** (created_at, id) order, one more than `limit`. */
  readonly page: (profileId: string, page: Page) => Repo<ReadonlyArray<DefinitionRow>>
  /** Every definition of the profile, (created_at, id) order. */
  readonly all: (profileId: string) => Repo<ReadonlyArray<DefinitionRow>>
  /** `lock` locks the row. An id that is not a UUID finds nothing. */
  readonly find: (profileId: string, id: string, lock: boolean) => Repo<Option.Option<DefinitionRow>>
  readonly findByKey: (profileId: string, conversionKey: string, lock: boolean) => Repo<Option.Option<DefinitionRow>>
  readonly insert: (profileId: string, id: string, values: DefinitionValues) => Repo<DefinitionRow>
  readonly update: (profileId: string, id: string, values: DefinitionValues) => Repo<DefinitionRow>
  /** Moves the default flag off every definition of the profile but `keepId`. */
  readonly clearDefault: (profileId: string, keepId: string | null) => Repo<void>
  /**
   * Deletes definitions; their conversions are detached first (`EventsRepo.detachDefinitions`,
   * the caller's part).
   */
  readonly remove: (profileId: string, ids: ReadonlyArray<string>) => Repo<void>
  /** Which of `names` a definition other than `exceptIds` already lists. */
  readonly nameOwners: (
    profileId: string,
    names: ReadonlyArray<string>,
    exceptIds: ReadonlyArray<string>
  ) => Repo<ReadonlyArray<NameOwnerRow>>
  /** Which of `names` the profile has received as a (live) outcome event name. */
  readonly seenAmong: (profileId: string, names: ReadonlyArray<string>) => Repo<ReadonlySet<string>>
  /** The read's `outcomes[]`: received event names and the names `event` definitions list. */
  readonly outcomeKeys: (profileId: string) => Repo<ReadonlyArray<OutcomeKeyRow>>
  /**
   * Creates an `event` definition listing `eventNames` that counts as cash and takes credit (the
   * card gateway's built-in one); None when `conversionKey` is taken already.
   */
  readonly createCashEventDefinition: (
    profileId: string,
    conversionKey: string,
    name: string,
    eventNames: ReadonlyArray<string>
  ) => Repo<Option.Option<string>>
  /** Runs `effect` in one transaction (the repositories' statements join it): a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/DefinitionsRepo") {
  static readonly layer = Layer.effect(DefinitionsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const rows = decodeRows(DefinitionRow)
      const firstRow = decodeFirstRow(DefinitionRow)
      const ownerRows = decodeRows(NameOwnerRow)
      const keyRows = decodeRows(OutcomeKeyRow)
      const nameRows = decodeRows(Schema.Struct({ event_name: Schema.String }))

      const columns = sql`d.id::text AS id, d.conversion_key, d.name, d.kind, d.event_names, d.event_key,
        d.lookback_window_days, d.is_default, d.counts_as_cash, d.attribution_eligible,
        ${isoTimestamp(sql, "d.created_at")} AS created_at, ${isoTimestamp(sql, "d.updated_at")} AS updated_at`

      const exactlyOne = <E, R>(effect: Effect.Effect<Option.Option<DefinitionRow>, E, R>) =>
        Effect.flatMap(effect, Option.match({ onNone: () => Effect.die("a definition write returned no row"), onSome: Effect.succeed }))

      const page = (profileId: string, page: Page) =>
        rows(sql`
          SELECT ${columns} FROM conversion_definitions d
          WHERE d.profile_id = ${profileId}
            ${
          Option.match(page.after, {
            onNone: () => sql``,
            onSome: (keyset) => sql`AND (d.created_at, d.id) > (${keyset.createdAt}::timestamptz, ${keyset.id}::uuid)`
          })
        }
          ORDER BY d.created_at, d.id LIMIT ${page.limit + 1}`)

      const all = (profileId: string) =>
        rows(sql`SELECT ${columns} FROM conversion_definitions d WHERE d.profile_id = ${profileId} ORDER BY d.created_at, d.id`)

      const find = (profileId: string, id: string, lock: boolean) =>
        isUuid(id)
          ? firstRow(sql`
              SELECT ${columns} FROM conversion_definitions d
              WHERE d.profile_id = ${profileId} AND d.id = ${id.toLowerCase()} ${sql.literal(lock ? "FOR UPDATE" : "")}`)
          : Effect.succeed(Option.none<DefinitionRow>())

      const findByKey = (profileId: string, conversionKey: string, lock: boolean) =>
        firstRow(sql`
          SELECT ${columns} FROM conversion_definitions d
          WHERE d.profile_id = ${profileId} AND d.conversion_key = ${conversionKey} ${sql.literal(lock ? "FOR UPDATE" : "")}`)

      const insert = (profileId: string, id: string, values: DefinitionValues) =>
        exactlyOne(firstRow(sql`
          INSERT INTO conversion_definitions AS d (id, profile_id, conversion_key, name, kind, event_names, event_key,
            lookback_window_days, is_default, counts_as_cash, attribution_eligible)
          VALUES (${id}, ${profileId}, ${values.conversion_key}, ${values.name}, ${values.kind}, ${values.event_names}::text[],
            ${values.event_key}, ${values.lookback_window_days}, ${values.is_default}, ${values.counts_as_cash},
            ${values.attribution_eligible})
          RETURNING ${columns}`))

      const update = (profileId: string, id: string, values: DefinitionValues) =>
        exactlyOne(firstRow(sql`
          UPDATE conversion_definitions AS d
          SET name = ${values.name}, kind = ${values.kind}, event_names = ${values.event_names}::text[],
              event_key = ${values.event_key}, lookback_window_days = ${values.lookback_window_days},
              is_default = ${values.is_default}, counts_as_cash = ${values.counts_as_cash},
              attribution_eligible = ${values.attribution_eligible}, updated_at = now()
          WHERE d.profile_id = ${profileId} AND d.id = ${id}
          RETURNING ${columns}`))

      const clearDefault = (profileId: string, keepId: string | null) =>
        Effect.asVoid(sql`
          UPDATE conversion_definitions SET is_default = false, updated_at = now()
          WHERE profile_id = ${profileId} AND is_default ${keepId === null ? sql`` : sql`AND id <> ${keepId}`}`)

      const remove = (profileId: string, ids: ReadonlyArray<string>) =>
        Effect.asVoid(sql`DELETE FROM conversion_definitions WHERE profile_id = ${profileId} AND id = ANY(${ids}::uuid[])`)

      const nameOwners = (profileId: string, names: ReadonlyArray<string>, exceptIds: ReadonlyArray<string>) =>
        names.length === 0 ? Effect.succeed([]) : ownerRows(sql`
          SELECT n.event_name, d.id::text AS id, d.conversion_key
          FROM conversion_definitions d, unnest(d.event_names) AS n(event_name)
          WHERE d.profile_id = ${profileId} AND n.event_name = ANY(${names}::text[])
            AND NOT (d.id = ANY(${exceptIds}::uuid[]))
          ORDER BY n.event_name, d.conversion_key`)

      const seenAmong = (profileId: string, names: ReadonlyArray<string>) =>
        names.length === 0 ? Effect.succeed(new Set<string>()) : Effect.map(
          nameRows(sql`
            SELECT DISTINCT e.event_name FROM outcome_events e
            WHERE e.profile_id = ${profileId} AND e.event_name = ANY(${names}::text[]) AND e.retracted_at IS NULL`),
          (found) => new Set(found.map((row) => row.event_name))
        )

      const outcomeKeys = (profileId: string) =>
        keyRows(sql`
          WITH seen AS (
            SELECT DISTINCT e.event_name AS key FROM outcome_events e
            WHERE e.profile_id = ${profileId} AND e.retracted_at IS NULL
            ORDER BY 1 LIMIT ${MAX_SEEN_KEYS}
          ),
          defined AS (
            SELECT n.key, min(d.conversion_key) AS conversion_key
            FROM conversion_definitions d, unnest(d.event_names) AS n(key)
            WHERE d.profile_id = ${profileId} AND d.kind = 'event'
            GROUP BY n.key
          )
          SELECT COALESCE(s.key, f.key) AS key, s.key IS NOT NULL AS seen_in_events, f.conversion_key
          FROM seen s FULL JOIN defined f ON f.key = s.key
          ORDER BY 1`)

      const firstId = decodeFirstRow(Schema.Struct({ id: Schema.String }))
      const createCashEventDefinition = (
        profileId: string,
        conversionKey: string,
        name: string,
        eventNames: ReadonlyArray<string>
      ) =>
        Effect.map(
          firstId(sql`
            INSERT INTO conversion_definitions (id, profile_id, conversion_key, name, kind, event_names, counts_as_cash,
                                                attribution_eligible)
            VALUES (${crypto.randomUUID()}, ${profileId}, ${conversionKey}, ${name}, 'event',
                    ${eventNames}::text[], true, true)
            ON CONFLICT (profile_id, conversion_key) DO NOTHING
            RETURNING id::text AS id`),
          Option.map((row) => row.id)
        )

      return {
        ...atDatabaseBoundary({
          page,
          all,
          find,
          findByKey,
          insert,
          update,
          clearDefault,
          remove,
          nameOwners,
          seenAmong,
          outcomeKeys,
          createCashEventDefinition
        }),
        // Generic, so outside `atDatabaseBoundary`'s mapped type; the same mapping for BEGIN and COMMIT.
        transaction: (effect) => orDatabaseUnavailable(sql.withTransaction(effect))
      }
    })
  )
}
