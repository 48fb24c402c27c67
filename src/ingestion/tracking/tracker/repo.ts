/**
 * SQL of the web tracker: tracking keys, tracker settings and drop counters. Touches and replay
 * jobs are attribution's (src/attribution/intake.ts, called by the tracker's service).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../../../platform/database.ts"
import { isoTimestamp } from "../../../platform/sql-time.ts"
import { CredentialPrefix, mintSecret } from "../../../kernel/credentials/tokens.ts"

export const KeyRow = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  key: Schema.String,
  created_at: Schema.String,
  revoked_at: Schema.NullOr(Schema.String)
})
export type KeyRow = typeof KeyRow.Type

const EnsuredRow = Schema.Struct({ ...KeyRow.fields, created: Schema.Boolean })

export const SettingsRow = Schema.Struct({
  allowed_origins: Schema.Array(Schema.String),
  capture_click_ids: Schema.Boolean,
  cookie_domain: Schema.NullOr(Schema.String),
  respect_do_not_track: Schema.Boolean,
  allow_server_side: Schema.Boolean,
  updated_at: Schema.NullOr(Schema.String)
})
export type SettingsRow = typeof SettingsRow.Type

export type SettingsValues = Omit<SettingsRow, "updated_at">

/** What a profile without a settings row reads. */
export const DEFAULT_SETTINGS: SettingsRow = {
  allowed_origins: [],
  capture_click_ids: true,
  cookie_domain: null,
  respect_do_not_track: false,
  allow_server_side: false,
  updated_at: null
}

/** The profile behind a live tracking key, with the settings the collector applies. */
export const CollectorTargetRow = Schema.Struct({
  profile_id: Schema.String,
  ...SettingsRow.fields
})
export type CollectorTargetRow = typeof CollectorTargetRow.Type

export type DropReason = "bot" | "do_not_track"

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class TrackingRepo extends Context.Service<TrackingRepo, {
  /** The profile's live key, minted if it has none (`created` says which); safe under concurrency. */
  readonly ensureKey: (profileId: string) => Repo<KeyRow & { readonly created: boolean }>
  /** The profile's live key (its plaintext), minted if it has none; one statement, safe under concurrency. */
  readonly ensureTrackingKey: (profileId: string) => Repo<string>
  readonly activeKeys: (profileId: string) => Repo<ReadonlyArray<KeyRow>>
  /** Revokes the profile's key; None when the key is not the profile's. `revoked`: this call revoked it. */
  readonly revokeKey: (profileId: string, keyId: string) => Repo<Option.Option<KeyRow & { readonly revoked: boolean }>>
  readonly settings: (profileId: string) => Repo<SettingsRow>
  /** The profile's settings row, created with the defaults if missing, locked until the transaction ends. */
  readonly lockSettings: (profileId: string) => Repo<SettingsRow>
  readonly writeSettings: (profileId: string, values: SettingsValues) => Repo<SettingsRow>
  /** The live key's profile (not archived) with its tracker settings. */
  readonly collectorTarget: (key: string) => Repo<Option.Option<CollectorTargetRow>>
  /** Whether some live profile lists this origin in its allowed origins (the collector's pre-flight). */
  readonly originAllowedAnywhere: (origin: string) => Repo<boolean>
  readonly countDrop: (profileId: string, reason: DropReason) => Repo<void>
  /** Runs `effect` in one transaction: a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/TrackingRepo") {
  static readonly layer = Layer.effect(TrackingRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient

      const keyColumns = sql`
        k.id, k.profile_id, k.key, ${isoTimestamp(sql, "k.created_at")} AS created_at,
        ${isoTimestamp(sql, "k.revoked_at")} AS revoked_at`
      const settingsColumns = sql`
        s.allowed_origins, s.capture_click_ids, s.cookie_domain, s.respect_do_not_track, s.allow_server_side,
        ${isoTimestamp(sql, "s.updated_at")} AS updated_at`

      const firstKey = decodeFirstRow(Schema.Struct({ key: Schema.String }))
      const ensureTrackingKey = (profileId: string) =>
        Effect.map(
          // A CTE's SELECT does not see its own INSERT: one of the two branches answers.
          firstKey(sql`
            WITH inserted AS (
              INSERT INTO tracking_keys (id, profile_id, key)
              VALUES (${crypto.randomUUID()}, ${profileId}, ${mintSecret(CredentialPrefix.trackingKey)})
              ON CONFLICT (profile_id) WHERE revoked_at IS NULL DO NOTHING
              RETURNING key)
            SELECT key FROM inserted
            UNION ALL
            SELECT key FROM tracking_keys WHERE profile_id = ${profileId} AND revoked_at IS NULL
            LIMIT 1`),
          Option.match({ onNone: () => "", onSome: (row) => row.key })
        )

      const firstEnsured = decodeFirstRow(EnsuredRow)
      const ensureKey = (profileId: string) =>
        sql.withTransaction(
          Effect.gen(function*() {
            // Provisioning's statement (ensureTrackingKey) mints the key (one live key per profile,
            // by a partial unique index); this transaction then reads it. `now()` is the transaction's start,
            // so a key created at exactly that time was created by this call.
            yield* ensureTrackingKey(profileId)
            const row = yield* firstEnsured(sql`
              SELECT ${keyColumns}, (k.created_at = now()) AS created
              FROM tracking_keys k WHERE k.profile_id = ${profileId} AND k.revoked_at IS NULL`)
            if (Option.isNone(row)) return yield* Effect.die("tracking key not found after ensureTrackingKey")
            return row.value
          })
        )

      const keyRows = decodeRows(KeyRow)
      const activeKeys = (profileId: string) =>
        keyRows(sql`
          SELECT ${keyColumns} FROM tracking_keys k
          WHERE k.profile_id = ${profileId} AND k.revoked_at IS NULL
          ORDER BY k.created_at, k.id`)

      const firstRevoked = decodeFirstRow(Schema.Struct({ ...KeyRow.fields, revoked: Schema.Boolean }))
      const revokeKey = (profileId: string, keyId: string) =>
        Effect.flatMap(
          firstRevoked(sql`
            UPDATE tracking_keys k SET revoked_at = now()
            WHERE k.id = ${keyId} AND k.profile_id = ${profileId} AND k.revoked_at IS NULL
            RETURNING ${keyColumns}, true AS revoked`),
          (revoked) =>
            Option.isSome(revoked)
              ? Effect.succeed(revoked)
              : firstRevoked(sql`
                SELECT ${keyColumns}, false AS revoked
                FROM tracking_keys k WHERE k.id = ${keyId} AND k.profile_id = ${profileId}`)
        )

      const firstSettings = decodeFirstRow(SettingsRow)
      const settings = (profileId: string) =>
        Effect.map(
          firstSettings(sql`SELECT ${settingsColumns} FROM tracking_settings s WHERE s.profile_id = ${profileId}`),
          Option.getOrElse(() => DEFAULT_SETTINGS)
        )

      const lockSettings = (profileId: string) =>
        Effect.gen(function*() {
          yield* sql`INSERT INTO tracking_settings (profile_id) VALUES (${profileId}) ON CONFLICT (profile_id) DO NOTHING`
          const row = yield* firstSettings(sql`
            SELECT ${settingsColumns} FROM tracking_settings s WHERE s.profile_id = ${profileId} FOR UPDATE`)
          if (Option.isNone(row)) return yield* Effect.die("tracking settings row not found after insert")
          return row.value
        })

      const writeSettings = (profileId: string, values: SettingsValues) =>
        Effect.gen(function*() {
          const row = yield* firstSettings(sql`
            UPDATE tracking_settings s SET
              allowed_origins = ${[...values.allowed_origins]}::text[],
              capture_click_ids = ${values.capture_click_ids},
              cookie_domain = ${values.cookie_domain},
              respect_do_not_track = ${values.respect_do_not_track},
              allow_server_side = ${values.allow_server_side},
              updated_at = now()
            WHERE s.profile_id = ${profileId}
            RETURNING ${settingsColumns}`)
          if (Option.isNone(row)) return yield* Effect.die("tracking settings row vanished inside its transaction")
          return row.value
        })

      const firstTarget = decodeFirstRow(CollectorTargetRow)
      const collectorTarget = (key: string) =>
        firstTarget(sql`
          SELECT k.profile_id,
                 COALESCE(s.allowed_origins, '{}'::text[]) AS allowed_origins,
                 COALESCE(s.capture_click_ids, ${DEFAULT_SETTINGS.capture_click_ids}) AS capture_click_ids,
                 s.cookie_domain,
                 COALESCE(s.respect_do_not_track, ${DEFAULT_SETTINGS.respect_do_not_track}) AS respect_do_not_track,
                 COALESCE(s.allow_server_side, ${DEFAULT_SETTINGS.allow_server_side}) AS allow_server_side,
                 ${isoTimestamp(sql, "s.updated_at")} AS updated_at
          FROM tracking_keys k
          JOIN profiles p ON p.id = k.profile_id AND p.archived_at IS NULL
          LEFT JOIN tracking_settings s ON s.profile_id = k.profile_id
          WHERE k.key = ${key} AND k.revoked_at IS NULL`)

      const firstAllowed = decodeFirstRow(Schema.Struct({ allowed: Schema.Boolean }))
      const originAllowedAnywhere = (origin: string) =>
        Effect.map(
          firstAllowed(sql`
            SELECT EXISTS (
              SELECT 1 FROM tracking_settings s
              JOIN profiles p ON p.id = s.profile_id AND p.archived_at IS NULL
              WHERE s.allowed_origins @> ARRAY[${origin}]::text[]) AS allowed`),
          Option.exists((row) => row.allowed)
        )

      const countDrop = (profileId: string, reason: DropReason) =>
        Effect.asVoid(sql`
          INSERT INTO tracking_drops (profile_id, day, reason, count)
          VALUES (${profileId}, (now() AT TIME ZONE 'UTC')::date, ${reason}, 1)
          ON CONFLICT (profile_id, day, reason) DO UPDATE SET count = tracking_drops.count + 1`)

      return {
        ...atDatabaseBoundary({
          ensureKey,
          ensureTrackingKey,
          activeKeys,
          revokeKey,
          settings,
          lockSettings,
          writeSettings,
          collectorTarget,
          originAllowedAnywhere,
          countDrop
        }),
        // Outside the boundary's mapping: `retryConflicts` must see the mapped failure of the whole transaction.
        transaction: (effect) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
