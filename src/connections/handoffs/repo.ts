/**
 * The owner of `connect_handoffs` (one row per minted hand-off, its state and outcome) and of
 * `pending_connections` (a grant reaching several accounts, parked until the person picks one).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isUuid } from "../../../schema/common.ts"
import { HandoffStatus } from "../../../schema/connections.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

export const HandoffRow = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  provider: Schema.String,
  handle: Schema.String,
  return_url: Schema.NullOr(Schema.String),
  shop: Schema.NullOr(Schema.String),
  app_id: Schema.NullOr(Schema.String),
  status: HandoffStatus,
  reason: Schema.NullOr(Schema.String),
  connection_id: Schema.NullOr(Schema.String),
  expires_at: Schema.String,
  created_at: Schema.String,
  expired: Schema.Boolean,
  /** In consent for longer than the recovery delay: a consent stopped partway. */
  consent_stale: Schema.Boolean
})
export type HandoffRow = typeof HandoffRow.Type

export const PendingAccountRecord = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  currency: Schema.NullOr(Schema.String),
  timezone: Schema.NullOr(Schema.String)
})
export type PendingAccountRecord = typeof PendingAccountRecord.Type

export const PendingRow = Schema.Struct({
  id: Schema.String,
  handoff_id: Schema.String,
  profile_id: Schema.String,
  provider: Schema.String,
  provider_user_id: Schema.NullOr(Schema.String),
  scopes: Schema.Array(Schema.String),
  accounts: Schema.Array(PendingAccountRecord),
  access_token_sealed: Schema.String,
  refresh_token_sealed: Schema.NullOr(Schema.String),
  token_expires_at: Schema.NullOr(Schema.String),
  shop: Schema.NullOr(Schema.String),
  app_id: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  expires_at: Schema.String
})
export type PendingRow = typeof PendingRow.Type

export interface NewHandoff {
  readonly id: string
  readonly profileId: string
  readonly provider: string
  readonly handle: string
  readonly stateHash: string
  readonly returnUrl: string | null
  readonly shop: string | null
  readonly appId: string | null
  readonly apiKeyId: string | null
  readonly ttlSeconds: number
}

export interface NewPending {
  readonly handoffId: string
  readonly profileId: string
  readonly provider: string
  readonly providerUserId: string
  readonly scopes: ReadonlyArray<string>
  readonly accounts: ReadonlyArray<PendingAccountRecord>
  readonly accessTokenSealed: string
  readonly refreshTokenSealed: string | null
  readonly tokenExpiresAt: Date | null
  readonly ttlSeconds: number
}

/** What a minted handle looks like (base64url). */
const HANDLE = /^[A-Za-z0-9_-]{8,64}$/

/** A consent stopped partway makes the link usable again after this long (api-concepts.md, Connect hand-off). */
export const CONSENT_RECOVERY_SECONDS = 180

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class HandoffsRepo extends Context.Service<HandoffsRepo, {
  readonly insert: (handoff: NewHandoff) => Repo<HandoffRow>
  readonly find: (id: string) => Repo<Option.Option<HandoffRow>>
  readonly findByHandle: (handle: string) => Repo<Option.Option<HandoffRow>>
  readonly findByState: (provider: string, stateHash: string) => Repo<Option.Option<HandoffRow>>
  /**
   * Claims the hand-off for one consent: `minted`, `failed` with `internal_error`, or a consent
   * stopped partway, moves to `in_consent`. Answers false when another consent holds or settled it.
   */
  readonly beginConsent: (id: string) => Repo<boolean>
  /** Settles the hand-off (in the caller's transaction). */
  readonly settle: (id: string, status: HandoffStatus, reason: string | null, connectionId: string | null) => Repo<void>
  readonly insertPending: (pending: NewPending) => Repo<void>
  /** Unfinalized, unexpired pending selections of a profile's provider, newest first. */
  readonly pendingFor: (profileId: string, provider: string) => Repo<ReadonlyArray<PendingRow>>
  /** Marks the pending selection finalized; false when it already was. */
  readonly finalizePending: (id: string) => Repo<boolean>
  /** Deletes the profile's hand-offs and pending selections (archiving it). */
  readonly deleteForProfile: (profileId: string) => Repo<void>
}>()("svc/HandoffsRepo") {
  static readonly layer = Layer.effect(HandoffsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const first = decodeFirstRow(HandoffRow)
      const pendingRows = decodeRows(PendingRow)
      const columns = sql`
        id, profile_id, provider, handle, return_url, shop, app_id, status, reason, connection_id,
        ${isoTimestamp(sql, "expires_at")} AS expires_at, ${isoTimestamp(sql, "created_at")} AS created_at,
        (expires_at <= now()) AS expired,
        (status = 'in_consent' AND consent_started_at <= now() - make_interval(secs => ${CONSENT_RECOVERY_SECONDS})) AS consent_stale`

      const insert = (h: NewHandoff) =>
        Effect.flatMap(
          first(sql`
            INSERT INTO connect_handoffs (id, profile_id, provider, handle, state_hash, return_url, shop, app_id, api_key_id, expires_at)
            VALUES (${h.id}, ${h.profileId}, ${h.provider}, ${h.handle}, ${h.stateHash}, ${h.returnUrl}, ${h.shop}, ${h.appId},
                    ${h.apiKeyId}, now() + make_interval(secs => ${h.ttlSeconds}))
            RETURNING ${columns}`),
          (row) => Option.match(row, { onNone: () => Effect.die("insert answered no row"), onSome: Effect.succeed })
        )

      // Ids and handles of another shape name nothing (and must not reach a uuid cast or carry a NUL).
      const find = (id: string) =>
        !isUuid(id) ? Effect.succeed(Option.none()) : first(sql`SELECT ${columns} FROM connect_handoffs WHERE id = ${id}`)
      const findByHandle = (handle: string) =>
        !HANDLE.test(handle)
          ? Effect.succeed(Option.none())
          : first(sql`SELECT ${columns} FROM connect_handoffs WHERE handle = ${handle}`)
      const findByState = (provider: string, stateHash: string) =>
        first(sql`SELECT ${columns} FROM connect_handoffs WHERE provider = ${provider} AND state_hash = ${stateHash}`)

      const beginConsent = (id: string) =>
        Effect.map(
          sql`UPDATE connect_handoffs SET status = 'in_consent', reason = NULL, consent_started_at = now(), updated_at = now()
              WHERE id = ${id} AND expires_at > now()
                AND (status = 'minted' OR (status = 'failed' AND reason = 'internal_error')
                     OR (status = 'in_consent' AND consent_started_at <= now() - make_interval(secs => ${CONSENT_RECOVERY_SECONDS})))
              RETURNING id`,
          (rows) => rows.length > 0
        )

      const settle = (id: string, status: HandoffStatus, reason: string | null, connectionId: string | null) =>
        Effect.asVoid(sql`
          UPDATE connect_handoffs SET status = ${status}, reason = ${reason}, connection_id = ${connectionId}, updated_at = now()
          WHERE id = ${id}`)

      const insertPending = (p: NewPending) =>
        Effect.asVoid(sql`
          INSERT INTO pending_connections (id, handoff_id, profile_id, provider, provider_user_id, scopes, accounts,
                                           access_token_sealed, refresh_token_sealed, token_expires_at, expires_at)
          VALUES (${crypto.randomUUID()}, ${p.handoffId}, ${p.profileId}, ${p.provider}, ${p.providerUserId},
                  ${p.scopes}::text[], ${JSON.stringify(p.accounts)}::jsonb, ${p.accessTokenSealed}, ${p.refreshTokenSealed},
                  ${p.tokenExpiresAt?.toISOString() ?? null}::timestamptz, now() + make_interval(secs => ${p.ttlSeconds}))
          ON CONFLICT (handoff_id) DO NOTHING`)

      const pendingFor = (profileId: string, provider: string) =>
        pendingRows(sql`
          SELECT pc.id, pc.handoff_id, pc.profile_id, pc.provider, pc.provider_user_id, pc.scopes, pc.accounts,
                 pc.access_token_sealed, pc.refresh_token_sealed, ${isoTimestamp(sql, "pc.token_expires_at")} AS token_expires_at,
                 h.shop, h.app_id,
                 ${isoTimestamp(sql, "pc.created_at")} AS created_at, ${isoTimestamp(sql, "pc.expires_at")} AS expires_at
          FROM pending_connections pc JOIN connect_handoffs h ON h.id = pc.handoff_id
          WHERE pc.profile_id = ${profileId} AND pc.provider = ${provider} AND pc.finalized_at IS NULL AND pc.expires_at > now()
          ORDER BY pc.created_at DESC, pc.id`)

      const finalizePending = (id: string) =>
        Effect.map(
          sql`UPDATE pending_connections SET finalized_at = now() WHERE id = ${id} AND finalized_at IS NULL RETURNING id`,
          (rows) => rows.length > 0
        )

      const deleteForProfile = (profileId: string) =>
        Effect.andThen(
          sql`DELETE FROM pending_connections WHERE profile_id = ${profileId}`,
          sql`DELETE FROM connect_handoffs WHERE profile_id = ${profileId}`
        ).pipe(Effect.asVoid)

      return atDatabaseBoundary({
        insert,
        find,
        findByHandle,
        findByState,
        beginConsent,
        settle,
        insertPending,
        pendingFor,
        finalizePending,
        deleteForProfile
      })
    })
  )
}
