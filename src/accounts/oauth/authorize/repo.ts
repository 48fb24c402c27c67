/**
 * SQL of partner consent (`/oauth/authorize`) and of the authorization-code exchange: the
 * authorizing app, email-matched profiles, consent tickets and authorization codes (both
 * stored as SHA-256 digests). Grants go through src/accounts/admin/repo.ts, provisioning through
 * src/accounts/profiles/repo.ts and keys through src/accounts/api-keys/repo.ts.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../../schema/errors.ts"
import type { ConnectScope, Scope } from "../../../../schema/scopes.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows } from "../../../platform/database.ts"

export const AuthorizingAppRow = Schema.Struct({
  id: Schema.String,
  client_id: Schema.String,
  name: Schema.String,
  redirect_uris: Schema.Array(Schema.String),
  profile_resolution: Schema.Literals(["email", "external_ref"]),
  rate_tier: Schema.Literals(["standard", "elevated", "internal"]),
  jwt_secret_encrypted: Schema.String
})
export type AuthorizingAppRow = typeof AuthorizingAppRow.Type

/** A live profile the app provisioned whose owner contact email matches, with what decides S5. */
export const CandidateRow = Schema.Struct({
  profile_id: Schema.String,
  workspace_id: Schema.String,
  name: Schema.String,
  workspace_name: Schema.String,
  privacy_mode: Schema.String,
  is_healthcare_agency: Schema.Boolean
})
export type CandidateRow = typeof CandidateRow.Type

export const TicketRow = Schema.Struct({
  id: Schema.String,
  cookie_hash: Schema.String,
  app_id: Schema.String,
  redirect_uri: Schema.String,
  state: Schema.NullOr(Schema.String),
  connect_scopes: Schema.Array(Schema.String),
  subject: Schema.String,
  email: Schema.String,
  name: Schema.NullOr(Schema.String),
  profile_ids: Schema.Array(Schema.String),
  code_challenge: Schema.NullOr(Schema.String),
  used: Schema.Boolean,
  expired: Schema.Boolean
})
export type TicketRow = typeof TicketRow.Type

/** A code just spent by its own client, with whether it had already expired. */
export const SpentCodeRow = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  grant_id: Schema.String,
  redirect_uri: Schema.String,
  scopes: Schema.Array(Schema.String),
  /** The S256 challenge of the authorization request (decision 0106); null without PKCE. */
  code_challenge: Schema.NullOr(Schema.String),
  expired: Schema.Boolean
})
export type SpentCodeRow = typeof SpentCodeRow.Type

export interface NewTicket {
  readonly ticketHash: string
  readonly cookieHash: string
  readonly appId: string
  readonly redirectUri: string
  readonly state: string | null
  readonly connectScopes: ReadonlyArray<ConnectScope>
  readonly subject: string
  readonly email: string
  readonly name: string | null
  readonly profileIds: ReadonlyArray<string>
  readonly codeChallenge: string | null
  readonly expiresAt: Date
}

export interface NewCode {
  readonly codeHash: string
  readonly appId: string
  readonly profileId: string
  readonly grantId: string
  readonly redirectUri: string
  readonly connectScopes: ReadonlyArray<ConnectScope>
  readonly scopes: ReadonlyArray<Scope>
  readonly subject: string
  readonly codeChallenge: string | null
  readonly expiresAt: Date
}

/** Codes and consent tickets: 43 base62 characters (~256 bits), stored as SHA-256 digests. */
export const SECRET_LENGTH = 43
const SECRET_SHAPE = /^[0-9A-Za-z]{43}$/

/** Whether `value` could be a code or ticket this service minted (no look-up for anything else). */
export const isSecretShaped = (value: string) => SECRET_SHAPE.test(value)

/** How many email-matched profiles a consent screen offers at most. */
export const MAX_CANDIDATES = 20

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class AuthorizeRepo extends Context.Service<AuthorizeRepo, {
  /** A live app by client id, with its sealed jwt secret. */
  readonly findApp: (clientId: string) => Repo<Option.Option<AuthorizingAppRow>>
  /** A live app by id. */
  readonly findAppById: (appId: string) => Repo<Option.Option<AuthorizingAppRow>>
  /** The app's live profiles (live workspace) whose owner contact email matches, case-insensitively, oldest first. */
  readonly findEmailCandidates: (appId: string, email: string) => Repo<ReadonlyArray<CandidateRow>>
  readonly insertTicket: (ticket: NewTicket) => Repo<void>
  /** The ticket by digest, locked for the rest of the transaction; `used` and `expired` as of `now`. */
  readonly lockTicket: (ticketHash: string, now: Date) => Repo<Option.Option<TicketRow>>
  readonly markTicketUsed: (ticketId: string, now: Date) => Repo<void>
  readonly insertCode: (code: NewCode) => Repo<void>
  /** Spends an unspent code of this app (committed on its own); None for unknown, foreign or already spent. */
  readonly spendCode: (appId: string, codeHash: string, now: Date) => Repo<Option.Option<SpentCodeRow>>
  /**
   * Notes a second use of a spent code of this app; answers the key minted from it (null when
   * none was, or not yet: the mint in flight then sees the replay and mints nothing). None when
   * the digest names no spent code of this app.
   */
  readonly markReplay: (appId: string, codeHash: string, now: Date) => Repo<Option.Option<{ readonly api_key_id: string | null }>>
  /** Records the key minted from a code; false when a replay was noted first (the key must not survive). */
  readonly attachKey: (codeId: string, keyId: string) => Repo<boolean>
}>()("svc/AuthorizeRepo") {
  static readonly layer = Layer.effect(AuthorizeRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const write = <A, E, R>(statement: Effect.Effect<A, E, R>) => Effect.asVoid(statement)
      const firstApp = decodeFirstRow(AuthorizingAppRow)
      const firstTicket = decodeFirstRow(TicketRow)
      const firstSpent = decodeFirstRow(SpentCodeRow)
      const firstReplay = decodeFirstRow(Schema.Struct({ api_key_id: Schema.NullOr(Schema.String) }))
      const candidates = decodeRows(CandidateRow)

      const appColumns = sql`id, client_id, name, redirect_uris, profile_resolution, rate_tier, jwt_secret_encrypted`

      const findApp = (clientId: string) =>
        firstApp(sql`SELECT ${appColumns} FROM oauth_apps WHERE client_id = ${clientId} AND deleted_at IS NULL`)

      const findAppById = (appId: string) =>
        firstApp(sql`SELECT ${appColumns} FROM oauth_apps WHERE id = ${appId} AND deleted_at IS NULL`)

      const findEmailCandidates = (appId: string, email: string) =>
        candidates(sql`
          SELECT p.id AS profile_id, p.workspace_id, p.name, w.name AS workspace_name, p.privacy_mode,
                 w.is_healthcare_agency
          FROM profiles p JOIN workspaces w ON w.id = p.workspace_id AND w.archived_at IS NULL
          WHERE p.provisioned_by_app_id = ${appId} AND p.archived_at IS NULL AND lower(p.email) = lower(${email})
          ORDER BY p.created_at, p.id
          LIMIT ${MAX_CANDIDATES}`)

      const insertTicket = (t: NewTicket) =>
        write(sql`
          INSERT INTO oauth_consent_tickets (id, ticket_hash, cookie_hash, app_id, redirect_uri, state, connect_scopes,
                                             subject, email, name, profile_ids, code_challenge, expires_at)
          VALUES (${crypto.randomUUID()}, ${t.ticketHash}, ${t.cookieHash}, ${t.appId}, ${t.redirectUri}, ${t.state},
                  ${t.connectScopes}::text[], ${t.subject}, ${t.email}, ${t.name}, ${t.profileIds}::uuid[],
                  ${t.codeChallenge}, ${t.expiresAt})`)

      const lockTicket = (ticketHash: string, now: Date) =>
        firstTicket(sql`
          SELECT id, cookie_hash, app_id, redirect_uri, state, connect_scopes, subject, email, name,
                 profile_ids::text[] AS profile_ids, code_challenge, (used_at IS NOT NULL) AS used, (expires_at <= ${now}) AS expired
          FROM oauth_consent_tickets WHERE ticket_hash = ${ticketHash}
          FOR UPDATE`)

      const markTicketUsed = (ticketId: string, now: Date) =>
        write(sql`UPDATE oauth_consent_tickets SET used_at = ${now} WHERE id = ${ticketId}`)

      const insertCode = (c: NewCode) =>
        write(sql`
          INSERT INTO oauth_authorization_codes (id, code_hash, app_id, profile_id, grant_id, redirect_uri, connect_scopes,
                                                 scopes, subject, code_challenge, expires_at)
          VALUES (${crypto.randomUUID()}, ${c.codeHash}, ${c.appId}, ${c.profileId}, ${c.grantId}, ${c.redirectUri},
                  ${c.connectScopes}::text[], ${c.scopes}::text[], ${c.subject}, ${c.codeChallenge}, ${c.expiresAt})`)

      const spendCode = (appId: string, codeHash: string, now: Date) =>
        firstSpent(sql`
          UPDATE oauth_authorization_codes SET used_at = ${now}
          WHERE code_hash = ${codeHash} AND app_id = ${appId} AND used_at IS NULL
          RETURNING id, profile_id, grant_id, redirect_uri, scopes, code_challenge, (expires_at <= ${now}) AS expired`)

      const markReplay = (appId: string, codeHash: string, now: Date) =>
        firstReplay(sql`
          UPDATE oauth_authorization_codes SET replayed_at = COALESCE(replayed_at, ${now})
          WHERE code_hash = ${codeHash} AND app_id = ${appId} AND used_at IS NOT NULL
          RETURNING api_key_id`)

      const attachKey = (codeId: string, keyId: string) =>
        Effect.map(
          sql`UPDATE oauth_authorization_codes SET api_key_id = ${keyId}
              WHERE id = ${codeId} AND replayed_at IS NULL RETURNING id`,
          (rows) => rows.length > 0
        )

      return atDatabaseBoundary({
        findApp,
        findAppById,
        findEmailCandidates,
        insertTicket,
        lockTicket,
        markTicketUsed,
        insertCode,
        spendCode,
        markReplay,
        attachKey
      })
    })
  )
}
