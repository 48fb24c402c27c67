/**
 * SQL of the agent OAuth surface (decision 0023): clients, consent tickets, authorization codes.
 * The tokens themselves go through src/accounts/user-tokens/repo.ts.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, orDatabaseUnavailable } from "../../platform/database.ts"

export const ClientRow = Schema.Struct({
  client_id: Schema.String,
  client_name: Schema.NullOr(Schema.String),
  redirect_uris: Schema.Array(Schema.String),
  grants: Schema.Array(Schema.String),
  issued_at: Schema.Int
})
export type ClientRow = typeof ClientRow.Type

export const SessionRow = Schema.Struct({ id: Schema.String, user_id: Schema.String, email: Schema.String })
export type SessionRow = typeof SessionRow.Type

/** What a consent ticket binds: the validated authorization request, the person and the session. */
export const TicketRow = Schema.Struct({
  session_id: Schema.String,
  user_id: Schema.String,
  client_id: Schema.String,
  redirect_uri: Schema.String,
  grants: Schema.Array(Schema.String),
  state: Schema.NullOr(Schema.String),
  code_challenge: Schema.String
})
export type TicketRow = typeof TicketRow.Type

export const CodeRow = Schema.Struct({
  client_id: Schema.String,
  redirect_uri: Schema.String,
  user_id: Schema.String,
  session_id: Schema.String,
  grants: Schema.Array(Schema.String),
  code_challenge: Schema.String,
  live: Schema.Boolean,
  used: Schema.Boolean,
  token_id: Schema.NullOr(Schema.String)
})
export type CodeRow = typeof CodeRow.Type


export interface NewClient {
  readonly clientId: string
  readonly clientName: string | null
  readonly redirectUris: ReadonlyArray<string>
  readonly grants: ReadonlyArray<string>
}

export interface NewTicket {
  readonly digest: string
  readonly sessionId: string
  readonly userId: string
  readonly clientId: string
  readonly redirectUri: string
  readonly grants: ReadonlyArray<string>
  readonly state: string | null
  readonly codeChallenge: string
  readonly minutes: number
}

export interface NewCode {
  readonly digest: string
  readonly ticket: TicketRow
  readonly minutes: number
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class McpOAuthRepo extends Context.Service<McpOAuthRepo, {
  readonly insertClient: (client: NewClient) => Repo<ClientRow>
  readonly findClient: (clientId: string) => Repo<Option.Option<ClientRow>>
  /** A live (not revoked, not expired) session by the digest of its cookie, with the person's email. */
  readonly findSession: (secretDigest: string) => Repo<Option.Option<SessionRow>>
  /** Stores a ticket, dropping the session's expired ones. */
  readonly insertTicket: (ticket: NewTicket) => Repo<void>
  /**
   * Uses a ticket up: only a live, unused ticket issued to this session, whose client still
   * exists. A ticket of another session is left untouched.
   */
  readonly consumeTicket: (digest: string, sessionId: string) => Repo<Option.Option<TicketRow>>
  readonly insertCode: (code: NewCode) => Repo<void>
  /** The code row, locked until the transaction ends, with whether it is still live and already used. */
  readonly lockCode: (digest: string) => Repo<Option.Option<CodeRow>>
  /** Spends the code; `tokenId` null when it was refused (a wrong or missing PKCE verifier) and minted nothing. */
  readonly markCodeUsed: (digest: string, tokenId: string | null) => Repo<void>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/McpOAuthRepo") {
  static readonly layer = Layer.effect(McpOAuthRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient

      const firstClient = decodeFirstRow(ClientRow)
      const firstSession = decodeFirstRow(SessionRow)
      const firstTicket = decodeFirstRow(TicketRow)
      const firstCode = decodeFirstRow(CodeRow)
      const run = Effect.asVoid

      const clientColumns = sql`client_id, client_name, redirect_uris, grants,
        extract(epoch FROM date_trunc('second', created_at))::float8 AS issued_at`

      const insertClient = (client: NewClient) =>
        firstClient(sql`
          INSERT INTO mcp_clients (client_id, client_name, redirect_uris, grants)
          VALUES (${client.clientId}, ${client.clientName}, ${client.redirectUris}, ${client.grants})
          RETURNING ${clientColumns}`).pipe(
            Effect.flatMap(Option.match({
              onNone: () => Effect.die(new Error("INSERT ... RETURNING returned no row")),
              onSome: Effect.succeed
            }))
          )

      const findClient = (clientId: string) =>
        firstClient(sql`SELECT ${clientColumns} FROM mcp_clients WHERE client_id = ${clientId}`)

      const findSession = (secretDigest: string) =>
        firstSession(sql`
          SELECT s.id, s.user_id, u.email FROM sessions s JOIN users u ON u.id = s.user_id
          WHERE s.secret_hash = ${secretDigest} AND s.revoked_at IS NULL AND s.expires_at > now()`)

      const insertTicket = (ticket: NewTicket) =>
        Effect.andThen(
          run(sql`DELETE FROM mcp_consent_tickets WHERE session_id = ${ticket.sessionId} AND expires_at < now()`),
          run(sql`
            INSERT INTO mcp_consent_tickets
              (ticket_hash, session_id, user_id, client_id, redirect_uri, grants, state, code_challenge, expires_at)
            VALUES (${ticket.digest}, ${ticket.sessionId}, ${ticket.userId}, ${ticket.clientId}, ${ticket.redirectUri},
                    ${ticket.grants}, ${ticket.state}, ${ticket.codeChallenge},
                    now() + make_interval(mins => ${ticket.minutes}))`)
        )

      const consumeTicket = (digest: string, sessionId: string) =>
        firstTicket(sql`
          UPDATE mcp_consent_tickets t SET used_at = now()
          FROM mcp_clients c
          WHERE t.ticket_hash = ${digest} AND t.session_id = ${sessionId} AND t.used_at IS NULL
            AND t.expires_at > now() AND c.client_id = t.client_id
          RETURNING t.session_id, t.user_id, t.client_id, t.redirect_uri, t.grants, t.state, t.code_challenge`)

      const insertCode = (code: NewCode) =>
        run(sql`
          INSERT INTO mcp_authorization_codes
            (code_hash, client_id, redirect_uri, user_id, session_id, grants, code_challenge, expires_at)
          VALUES (${code.digest}, ${code.ticket.client_id}, ${code.ticket.redirect_uri}, ${code.ticket.user_id},
                  ${code.ticket.session_id}, ${code.ticket.grants}, ${code.ticket.code_challenge},
                  now() + make_interval(mins => ${code.minutes}))`)

      const lockCode = (digest: string) =>
        firstCode(sql`
          SELECT client_id, redirect_uri, user_id, session_id, grants, code_challenge,
                 expires_at > now() AS live, used_at IS NOT NULL AS used, token_id
          FROM mcp_authorization_codes WHERE code_hash = ${digest}
          FOR UPDATE`)

      const markCodeUsed = (digest: string, tokenId: string | null) =>
        run(sql`UPDATE mcp_authorization_codes SET used_at = now(), token_id = ${tokenId} WHERE code_hash = ${digest}`)

      return {
        ...atDatabaseBoundary({
          insertClient,
          findClient,
          findSession,
          insertTicket,
          consumeTicket,
          insertCode,
          lockCode,
          markCodeUsed
        }),
        // BEGIN and COMMIT fail with SqlError; the statements inside are already mapped.
        transaction: (effect) => orDatabaseUnavailable(sql.withTransaction(effect))
      }
    })
  )
}
