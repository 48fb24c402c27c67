/** SQL of the tracker's custom collector domains (decision 0034). */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type { DatabaseUnavailable } from "../../../../schema/errors.ts"
import { CustomDomainStatus, MissingDnsRecord } from "../../../../schema/tracking.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../../platform/database.ts"
import { isoTimestamp } from "../../../platform/sql-time.ts"

export const DomainRow = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  hostname: Schema.String,
  verify_token: Schema.String,
  status: CustomDomainStatus,
  missing: Schema.Array(MissingDnsRecord),
  error: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  checked_at: Schema.NullOr(Schema.String),
  verified_at: Schema.NullOr(Schema.String)
})
export type DomainRow = typeof DomainRow.Type

/** What a DNS check concluded. */
export type DomainVerdict =
  | { readonly status: "verified" }
  | { readonly status: "pending"; readonly missing: ReadonlyArray<typeof MissingDnsRecord.Type> }
  | { readonly status: "failed"; readonly error: string }

/** Whom a collector `Host` belongs to. */
export const HostRow = Schema.Struct({ profile_id: Schema.String, active: Schema.Boolean })
export type HostRow = typeof HostRow.Type

/** The outcome of a registration: this profile's row (new or not), or another profile holds the hostname. */
export type Registration =
  | { readonly _tag: "Registered"; readonly row: DomainRow; readonly created: boolean }
  | { readonly _tag: "TakenElsewhere" }

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class TrackingDomainsRepo extends Context.Service<TrackingDomainsRepo, {
  readonly list: (profileId: string) => Repo<ReadonlyArray<DomainRow>>
  readonly find: (profileId: string, id: string) => Repo<Option.Option<DomainRow>>
  readonly count: (profileId: string) => Repo<number>
  /** Registers `hostname` for the profile; safe under concurrency (one row per hostname). */
  readonly register: (profileId: string, hostname: string, token: string) => Repo<Registration>
  readonly remove: (profileId: string, id: string) => Repo<Option.Option<DomainRow>>
  /** Stores a check's verdict: `verified` starts (or keeps) serving, `pending` stops, `failed` changes nothing served. */
  readonly saveVerdict: (profileId: string, id: string, verdict: DomainVerdict) => Repo<Option.Option<DomainRow>>
  /** The hostname the profile's snippet posts to: its first active domain, if any. */
  readonly activeHostname: (profileId: string) => Repo<Option.Option<string>>
  /** The profile a registered hostname belongs to, and whether it serves. */
  readonly hostOwner: (hostname: string) => Repo<Option.Option<HostRow>>
}>()("svc/TrackingDomainsRepo") {
  static readonly layer = Layer.effect(TrackingDomainsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient

      const columns = sql`
        d.id, d.profile_id, d.hostname, d.verify_token, d.status, d.missing, d.error,
        ${isoTimestamp(sql, "d.created_at")} AS created_at,
        ${isoTimestamp(sql, "d.checked_at")} AS checked_at,
        ${isoTimestamp(sql, "d.verified_at")} AS verified_at`

      const rows = decodeRows(DomainRow)
      const first = decodeFirstRow(DomainRow)

      const list = (profileId: string) =>
        rows(sql`SELECT ${columns} FROM tracking_domains d WHERE d.profile_id = ${profileId} ORDER BY d.created_at, d.id`)

      const find = (profileId: string, id: string) =>
        first(sql`SELECT ${columns} FROM tracking_domains d WHERE d.id = ${id} AND d.profile_id = ${profileId}`)

      const firstCount = decodeFirstRow(Schema.Struct({ n: Schema.Int }))
      const count = (profileId: string) =>
        Effect.map(
          firstCount(sql`SELECT count(*)::int AS n FROM tracking_domains WHERE profile_id = ${profileId}`),
          Option.match({ onNone: () => 0, onSome: (row) => row.n })
        )

      const register = (profileId: string, hostname: string, token: string): Effect.Effect<Registration, SqlError | Schema.SchemaError> =>
        Effect.gen(function*() {
          const inserted = yield* first(sql`
            INSERT INTO tracking_domains AS d (id, profile_id, hostname, verify_token)
            VALUES (${crypto.randomUUID()}, ${profileId}, ${hostname}, ${token})
            ON CONFLICT (hostname) DO NOTHING
            RETURNING ${columns}`)
          if (Option.isSome(inserted)) return { _tag: "Registered", row: inserted.value, created: true } satisfies Registration
          const existing = yield* first(sql`SELECT ${columns} FROM tracking_domains d WHERE d.hostname = ${hostname}`)
          // Removed between the two statements: register again.
          if (Option.isNone(existing)) return yield* register(profileId, hostname, token)
          return existing.value.profile_id === profileId
            ? { _tag: "Registered", row: existing.value, created: false } satisfies Registration
            : { _tag: "TakenElsewhere" } satisfies Registration
        })

      const remove = (profileId: string, id: string) =>
        first(sql`
          DELETE FROM tracking_domains d WHERE d.id = ${id} AND d.profile_id = ${profileId}
          RETURNING ${columns}`)

      const saveVerdict = (profileId: string, id: string, verdict: DomainVerdict) => {
        const missing = verdict.status === "pending" ? verdict.missing : []
        const error = verdict.status === "failed" ? verdict.error : null
        return first(sql`
          UPDATE tracking_domains d SET
            status = ${verdict.status},
            missing = ${JSON.stringify(missing)}::jsonb,
            error = ${error},
            checked_at = now(),
            verified_at = CASE ${verdict.status}::text
              WHEN 'verified' THEN COALESCE(d.verified_at, now())
              WHEN 'pending' THEN NULL
              ELSE d.verified_at END
          WHERE d.id = ${id} AND d.profile_id = ${profileId}
          RETURNING ${columns}`)
      }

      const firstHostname = decodeFirstRow(Schema.Struct({ hostname: Schema.String }))
      const activeHostname = (profileId: string) =>
        Effect.map(
          firstHostname(sql`
            SELECT hostname FROM tracking_domains
            WHERE profile_id = ${profileId} AND verified_at IS NOT NULL
            ORDER BY verified_at, hostname LIMIT 1`),
          Option.map((row) => row.hostname)
        )

      const firstHost = decodeFirstRow(HostRow)
      const hostOwner = (hostname: string) =>
        firstHost(sql`
          SELECT profile_id, (verified_at IS NOT NULL) AS active FROM tracking_domains WHERE hostname = ${hostname}`)

      return atDatabaseBoundary({ list, find, count, register, remove, saveVerdict, activeHostname, hostOwner })
    })
  )
}
