/** The owner of `sessions`: console sessions, stored as digests of their secret and CSRF token. */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable } from "../../platform/database.ts"

const LoginRow = Schema.Struct({ id: Schema.String, email: Schema.String, password_hash: Schema.NullOr(Schema.String) })
export type LoginRow = typeof LoginRow.Type
const ExpiresRow = Schema.Struct({ expires_at: Schema.String })
const CsrfRow = Schema.Struct({ csrf_token_hash: Schema.String })

export interface NewSessionRow {
  readonly id: string
  readonly userId: string
  readonly secretHash: string
  readonly csrfTokenHash: string
  /** How long the session lasts from now. */
  readonly lifetime: { readonly hours: number } | { readonly minutes: number }
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class SessionsRepo extends Context.Service<SessionsRepo, {
  /** The person signing in with this email (case-insensitive, trimmed), with the stored password hash. */
  readonly findLoginUser: (email: string) => Repo<Option.Option<LoginRow>>
  /** Stores a session; answers its expiry as an ISO timestamp (None when the row did not come back). */
  readonly insert: (session: NewSessionRow) => Repo<Option.Option<string>>
  /** Ends a live session. */
  readonly revoke: (sessionId: string) => Repo<void>
  /** Ends every live, unexpired session of the person; answers their ids. */
  readonly revokeAllOf: (userId: string) => Repo<ReadonlyArray<string>>
  /** The CSRF token digest of a live, unexpired session. */
  readonly csrfTokenHash: (sessionId: string) => Repo<Option.Option<string>>
  /** Runs `effect` in one transaction: a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/SessionsRepo") {
  static readonly layer = Layer.effect(SessionsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const firstUser = decodeFirstRow(LoginRow)
      const firstExpires = decodeFirstRow(ExpiresRow)
      const firstCsrf = decodeFirstRow(CsrfRow)

      const findLoginUser = (email: string) =>
        firstUser(sql`SELECT id, email, password_hash FROM users WHERE lower(email) = lower(${email.trim()})`)

      const insert = (session: NewSessionRow) =>
        Effect.map(
          firstExpires(sql`
            INSERT INTO sessions (id, user_id, secret_hash, csrf_token_hash, expires_at)
            VALUES (${session.id}, ${session.userId}, ${session.secretHash}, ${session.csrfTokenHash},
                    now() + ${
            "hours" in session.lifetime
              ? sql`make_interval(hours => ${session.lifetime.hours})`
              : sql`make_interval(mins => ${session.lifetime.minutes})`
          })
            RETURNING to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS expires_at`),
          Option.map((row) => row.expires_at)
        )

      const revoke = (sessionId: string) =>
        Effect.asVoid(sql`UPDATE sessions SET revoked_at = now() WHERE id = ${sessionId} AND revoked_at IS NULL`)

      const idRows = decodeRows(Schema.Struct({ id: Schema.String }))
      const revokeAllOf = (userId: string) =>
        Effect.map(
          idRows(sql`
            UPDATE sessions SET revoked_at = now()
            WHERE user_id = ${userId} AND revoked_at IS NULL AND expires_at > now()
            RETURNING id`),
          (rows) => rows.map((row) => row.id)
        )

      const csrfTokenHash = (sessionId: string) =>
        Effect.map(
          firstCsrf(sql`
            SELECT csrf_token_hash FROM sessions
            WHERE id = ${sessionId} AND revoked_at IS NULL AND expires_at > now()`),
          Option.map((row) => row.csrf_token_hash)
        )

      return {
        ...atDatabaseBoundary({ findLoginUser, insert, revoke, revokeAllOf, csrfTokenHash }),
        // BEGIN and COMMIT fail with SqlError; the statements inside are already mapped.
        transaction: (effect) => orDatabaseUnavailable(sql.withTransaction(effect))
      }
    })
  )
}
