/** SQL of audiences: the owner of `audience_exclusions` (decision 0099) and `customer_list_audiences` (decision 0100). */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { CustomerListConsentVersion } from "../../../schema/audiences.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../../platform/database.ts"

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

/** A profile's customer list (decision 0100). */
export const CustomerListRow = Schema.Struct({
  profile_id: Schema.String,
  status: Schema.Literals(["off", "enabled"]),
  consent_version: Schema.NullOr(CustomerListConsentVersion),
  connection_id: Schema.NullOr(Schema.String),
  ad_account_id: Schema.NullOr(Schema.String),
  platform_audience_id: Schema.NullOr(Schema.String),
  member_count: Schema.Int,
  excluded_count: Schema.Int,
  skipped_count: Schema.Int,
  last_synced_at: Schema.NullOr(Schema.String),
  lookalike_id: Schema.NullOr(Schema.String),
  lookalike_country: Schema.NullOr(Schema.String),
  lookalike_created_at: Schema.NullOr(Schema.String)
})
export type CustomerListRow = typeof CustomerListRow.Type

/** A live paying customer of the profile, with what a customer list may hash. */
export const PayingCustomer = Schema.Struct({
  id: Schema.String,
  email: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String),
  first_name: Schema.NullOr(Schema.String),
  last_name: Schema.NullOr(Schema.String),
  country: Schema.NullOr(Schema.String),
  excluded: Schema.Boolean
})
export type PayingCustomer = typeof PayingCustomer.Type

/**
 * A held sync lease of a profile's list (decision 0119): the token fences its renewal and every
 * write of the sync, so a holder whose lease ran out and was taken over writes nothing.
 */
export interface ListLease {
  readonly profileId: string
  readonly token: string
}

/**
 * The renewal of a list's sync lease by its holder, through the primary key and fenced by the
 * token. test/api/lease-takeover.test.ts checks its generic plan.
 */
export const renewListStatement = (sql: SqlClient, lease: ListLease, seconds: number) =>
  sql`
    UPDATE customer_list_audiences SET sync_lease_until = now() + make_interval(secs => ${seconds})
    WHERE profile_id = ${lease.profileId} AND sync_lease_token = ${lease.token}
    RETURNING profile_id`

export interface SyncedList {
  readonly consentVersion: CustomerListConsentVersion
  /** Undefined keeps the stored consent (a re-sync). */
  readonly consent: unknown
  readonly memberCount: number
  readonly excludedCount: number
  readonly skippedCount: number
}

export class AudiencesRepo extends Context.Service<AudiencesRepo, {
  /** Which of `ids` are live customers of the profile. */
  readonly liveCustomers: (profileId: string, ids: ReadonlyArray<string>) => Repo<ReadonlyArray<string>>
  /** Replaces the profile's exclusions with `ids`, in one transaction. */
  readonly replaceExclusions: (profileId: string, ids: ReadonlyArray<string>) => Repo<ReadonlyArray<string>>
  // Customer lists (decision 0100).
  /** Live (not merged, not erased) customers with at least one payment, each flagged when excluded. */
  readonly payingCustomers: (profileId: string) => Repo<ReadonlyArray<PayingCustomer>>
  readonly findList: (profileId: string) => Repo<Option.Option<CustomerListRow>>
  /**
   * Takes the list's sync lease for `seconds` (creating its row) unless another sync holds it (a
   * failed refresh holding the list back does not count); answers the lease when taken.
   */
  readonly claimList: (profileId: string, seconds: number) => Repo<Option.Option<ListLease>>
  /** Extends the lease `seconds` from now while it is still this holder's; answers whether it was. */
  readonly renewList: (lease: ListLease, seconds: number) => Repo<boolean>
  /** Gives the lease up (nothing when it is no longer this holder's). */
  readonly releaseList: (lease: ListLease) => Repo<void>
  /** Gives the lease up but holds the list back from the daily refresh for `seconds` (its retry after a failure). */
  readonly holdList: (lease: ListLease, seconds: number) => Repo<void>
  // The writes of a sync, fenced by its lease: false (nothing written) when the lease is another's.
  /** Records the platform audience the moment the platform answers (a retry reuses it). */
  readonly saveAudience: (
    lease: ListLease,
    audience: { readonly connectionId: string; readonly adAccountId: string; readonly audienceId: string }
  ) => Repo<boolean>
  readonly saveSynced: (lease: ListLease, synced: SyncedList) => Repo<boolean>
  readonly saveLookalike: (lease: ListLease, lookalikeId: string | null, country: string | null) => Repo<boolean>
  /**
   * Takes the lease of one enabled list last synced before `olderThanSeconds` ago whose profile may
   * upload (not hipaa; Platform-Safe with the switch on), unless held or held back.
   */
  readonly claimDue: (olderThanSeconds: number, leaseSeconds: number) => Repo<Option.Option<ListLease>>
  /** Off: no platform audience, no lookalike, counts zero, consent dropped. */
  readonly markOff: (lease: ListLease) => Repo<boolean>
}>()("svc/AudiencesRepo") {
  static readonly layer = Layer.effect(AudiencesRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const idRows = decodeRows(Schema.Struct({ id: Schema.String }))
      const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

      const liveCustomers = (profileId: string, ids: ReadonlyArray<string>) => {
        // Non-uuid strings would fail the cast; they are never customers.
        const valid = ids.filter((id) => uuid.test(id))
        return valid.length === 0 ? Effect.succeed<ReadonlyArray<string>>([]) : Effect.map(
          idRows(sql`
            SELECT id::text AS id FROM customers
            WHERE profile_id = ${profileId} AND id = ANY(${valid}::uuid[])
              AND merged_into_id IS NULL AND erased_at IS NULL`),
          (rows) => rows.map((row) => row.id)
        )
      }

      const exclusions = (profileId: string) =>
        Effect.map(
          idRows(sql`SELECT customer_id::text AS id FROM audience_exclusions WHERE profile_id = ${profileId} ORDER BY customer_id`),
          (rows) => rows.map((row) => row.id)
        )

      const replace = (profileId: string, ids: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          yield* sql`DELETE FROM audience_exclusions WHERE profile_id = ${profileId}`
          for (const id of ids) {
            yield* sql`
              INSERT INTO audience_exclusions (profile_id, customer_id) VALUES (${profileId}, ${id})
              ON CONFLICT DO NOTHING`
          }
          return yield* exclusions(profileId)
        })

      const payingRows = decodeRows(PayingCustomer)
      // Email and phone: the primary live identifier, else the oldest. Country: of the latest touch that has one.
      const payingCustomers = (profileId: string) =>
        payingRows(sql`
          SELECT c.id::text AS id, c.first_name, c.last_name,
                 (SELECT i.value FROM customer_identifiers i
                  WHERE i.profile_id = c.profile_id AND i.customer_id = c.id AND i.kind = 'email' AND i.removed_at IS NULL
                  ORDER BY i.is_primary DESC, i.created_at, i.id LIMIT 1) AS email,
                 (SELECT i.value FROM customer_identifiers i
                  WHERE i.profile_id = c.profile_id AND i.customer_id = c.id AND i.kind = 'phone' AND i.removed_at IS NULL
                  ORDER BY i.is_primary DESC, i.created_at, i.id LIMIT 1) AS phone,
                 (SELECT t.country FROM touches t
                  WHERE t.customer_id = c.id AND t.country IS NOT NULL
                  ORDER BY t.occurred_at DESC LIMIT 1) AS country,
                 EXISTS (SELECT 1 FROM audience_exclusions x WHERE x.profile_id = c.profile_id AND x.customer_id = c.id) AS excluded
          FROM customers c
          WHERE c.profile_id = ${profileId} AND c.merged_into_id IS NULL AND c.erased_at IS NULL
            AND EXISTS (SELECT 1 FROM conversions v WHERE v.profile_id = c.profile_id AND v.customer_id = c.id AND v.counts_as_cash)
          ORDER BY c.id`)

      const listRow = decodeFirstRow(CustomerListRow)
      const findList = (profileId: string) =>
        listRow(sql`
          SELECT profile_id::text AS profile_id, status, consent_version, connection_id::text AS connection_id, ad_account_id,
                 platform_audience_id, member_count, excluded_count, skipped_count,
                 ${isoTimestamp(sql, "last_synced_at")} AS last_synced_at, lookalike_id, lookalike_country,
                 ${isoTimestamp(sql, "lookalike_created_at")} AS lookalike_created_at
          FROM customer_list_audiences WHERE profile_id = ${profileId}`)

      const leaseRow = decodeFirstRow(Schema.Struct({ profile_id: Schema.String, token: Schema.String }))
      const leaseOf = (row: Option.Option<{ readonly profile_id: string; readonly token: string }>) =>
        Option.map(row, (r): ListLease => ({ profileId: r.profile_id, token: r.token }))

      // A lease with no token is a failed refresh's hold-back (`holdList`): a request may sync through it.
      const claimList = (profileId: string, seconds: number) =>
        Effect.gen(function*() {
          yield* sql`INSERT INTO customer_list_audiences (profile_id) VALUES (${profileId}) ON CONFLICT DO NOTHING`
          return leaseOf(yield* leaseRow(sql`
            UPDATE customer_list_audiences
            SET sync_lease_until = now() + make_interval(secs => ${seconds}), sync_lease_token = ${crypto.randomUUID()}
            WHERE profile_id = ${profileId} AND (sync_lease_until IS NULL OR sync_lease_until < now() OR sync_lease_token IS NULL)
            RETURNING profile_id::text AS profile_id, sync_lease_token::text AS token`))
        })

      // Suspended: each run of the claim draws its own token, even when the effect is run again.
      const claimDue = (olderThanSeconds: number, leaseSeconds: number) =>
        Effect.suspend(() =>
          Effect.map(
            leaseRow(sql`
              UPDATE customer_list_audiences
              SET sync_lease_until = now() + make_interval(secs => ${leaseSeconds}), sync_lease_token = ${crypto.randomUUID()}
              WHERE profile_id = (
                SELECT l.profile_id FROM customer_list_audiences l
                JOIN profiles p ON p.id = l.profile_id
                LEFT JOIN conversion_sync_settings s ON s.profile_id = l.profile_id
                WHERE l.status = 'enabled'
                  AND (l.last_synced_at IS NULL OR l.last_synced_at < now() - make_interval(secs => ${olderThanSeconds}))
                  AND (l.sync_lease_until IS NULL OR l.sync_lease_until < now())
                  AND p.privacy_mode <> 'hipaa'
                  AND (p.privacy_mode <> 'platform_safe' OR COALESCE(s.platform_safe_audiences, 'disabled') = 'enabled')
                ORDER BY l.last_synced_at NULLS FIRST
                LIMIT 1
                FOR UPDATE OF l SKIP LOCKED)
              RETURNING profile_id::text AS profile_id, sync_lease_token::text AS token`),
            leaseOf
          )
        )

      const changed = (rows: ReadonlyArray<unknown>) => rows.length > 0
      const ours = (lease: ListLease) => sql`profile_id = ${lease.profileId} AND sync_lease_token = ${lease.token}`

      const renewList = (lease: ListLease, seconds: number) => Effect.map(renewListStatement(sql, lease, seconds), changed)

      const releaseList = (lease: ListLease) =>
        Effect.asVoid(sql`UPDATE customer_list_audiences SET sync_lease_until = NULL, sync_lease_token = NULL WHERE ${ours(lease)}`)

      const holdList = (lease: ListLease, seconds: number) =>
        Effect.asVoid(sql`
          UPDATE customer_list_audiences SET sync_lease_until = now() + make_interval(secs => ${seconds}), sync_lease_token = NULL
          WHERE ${ours(lease)}`)

      const saveAudience = (lease: ListLease, a: { readonly connectionId: string; readonly adAccountId: string; readonly audienceId: string }) =>
        Effect.map(
          sql`
            UPDATE customer_list_audiences
            SET connection_id = ${a.connectionId}, ad_account_id = ${a.adAccountId}, platform_audience_id = ${a.audienceId},
                lookalike_id = NULL, lookalike_country = NULL, lookalike_created_at = NULL, updated_at = now()
            WHERE ${ours(lease)} RETURNING profile_id`,
          changed
        )

      const saveSynced = (lease: ListLease, synced: SyncedList) =>
        Effect.map(
          sql`
            UPDATE customer_list_audiences
            SET status = 'enabled', consent_version = ${synced.consentVersion}, consent = COALESCE(${synced.consent === undefined ? null : JSON.stringify(synced.consent)}::jsonb, consent),
                member_count = ${synced.memberCount}, excluded_count = ${synced.excludedCount}, skipped_count = ${synced.skippedCount},
                last_synced_at = now(), updated_at = now()
            WHERE ${ours(lease)} RETURNING profile_id`,
          changed
        )

      const saveLookalike = (lease: ListLease, lookalikeId: string | null, country: string | null) =>
        Effect.map(
          sql`
            UPDATE customer_list_audiences
            SET lookalike_id = ${lookalikeId}, lookalike_country = ${country},
                lookalike_created_at = ${lookalikeId === null ? null : new Date().toISOString()}::timestamptz, updated_at = now()
            WHERE ${ours(lease)} RETURNING profile_id`,
          changed
        )

      const markOff = (lease: ListLease) =>
        Effect.map(
          sql`
            UPDATE customer_list_audiences
            SET status = 'off', consent_version = NULL, consent = NULL, platform_audience_id = NULL, member_count = 0,
                excluded_count = 0, skipped_count = 0, lookalike_id = NULL, lookalike_country = NULL, lookalike_created_at = NULL,
                updated_at = now()
            WHERE ${ours(lease)} RETURNING profile_id`,
          changed
        )

      return {
        ...atDatabaseBoundary({
          liveCustomers,
          payingCustomers,
          findList,
          claimList,
          renewList,
          releaseList,
          holdList,
          claimDue,
          saveAudience,
          saveSynced,
          saveLookalike,
          markOff
        }),
        replaceExclusions: (profileId: string, ids: ReadonlyArray<string>) =>
          retryConflicts(orDatabaseUnavailable(sql.withTransaction(replace(profileId, ids))))
      }
    })
  )
}
