/**
 * People's passwords and their one-time links (decision 0053). The owner of `users` (the rows
 * an invitation, a provisioning or a local invitation creates, and the password columns
 * `password_hash`, `password_set_at`) and of `password_links`.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { PasswordLinkPurpose } from "../../../schema/people.ts"
import { atDatabaseBoundary, decodeFirstRow, orDatabaseUnavailable } from "../../platform/database.ts"

const PersonRow = Schema.Struct({ id: Schema.String, email: Schema.String, created: Schema.Boolean, has_password: Schema.Boolean })
const UserRow = Schema.Struct({ id: Schema.String, email: Schema.String })
const NamedUserRow = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  first_name: Schema.NullOr(Schema.String),
  last_name: Schema.NullOr(Schema.String)
})
export type NamedUserRow = typeof NamedUserRow.Type
const LinkRow = Schema.Struct({
  user_id: Schema.String,
  email: Schema.String,
  purpose: Schema.Literals(["invite", "reset"]),
  expires_at: Schema.String
})
const ExpiresRow = Schema.Struct({ expires_at: Schema.String })

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export type PersonRow = typeof PersonRow.Type
export type LinkRow = typeof LinkRow.Type

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS"Z"'`

export class PeopleRepo extends Context.Service<PeopleRepo, {
  /** The person with this email (case-insensitive), created without a password when missing. */
  readonly ensure: (email: string) => Repo<PersonRow>
  readonly findByEmail: (email: string) => Repo<Option.Option<typeof UserRow.Type>>
  /** The person by id, with their name. */
  readonly find: (userId: string) => Repo<Option.Option<NamedUserRow>>
  /** A new link; the person's earlier unused links stop working. */
  readonly insertLink: (userId: string, purpose: PasswordLinkPurpose, tokenHash: string, ttlMinutes: number) => Repo<string>
  /** The live (unused, unexpired) link with this digest. */
  readonly findLiveLink: (tokenHash: string) => Repo<Option.Option<LinkRow>>
  /** Marks the live link used, in the same statement that finds it: two uses cannot both win. */
  readonly consumeLink: (tokenHash: string) => Repo<Option.Option<LinkRow>>
  readonly setPasswordHash: (userId: string, hash: string) => Repo<void>
  /** Runs `effect` in one transaction: a failure rolls back everything it wrote. */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/PeopleRepo") {
  static readonly layer = Layer.effect(PeopleRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const firstPerson = decodeFirstRow(PersonRow)
      const firstUser = decodeFirstRow(UserRow)
      const firstLink = decodeFirstRow(LinkRow)
      const firstExpires = decodeFirstRow(ExpiresRow)

      const ensure = (email: string) =>
        Effect.flatMap(
          // xmax = 0 only on a row this statement inserted.
          firstPerson(sql`
            INSERT INTO users (id, email) VALUES (${crypto.randomUUID()}, ${email})
            ON CONFLICT (lower(email)) DO UPDATE SET email = users.email
            RETURNING id, email, (xmax = 0) AS created, (password_hash IS NOT NULL) AS has_password`),
          (row) => Option.isSome(row) ? Effect.succeed(row.value) : Effect.die("INSERT ... RETURNING gave no user")
        )

      const findByEmail = (email: string) =>
        firstUser(sql`SELECT id, email FROM users WHERE lower(email) = lower(${email.trim()})`)

      const firstNamed = decodeFirstRow(NamedUserRow)
      const find = (userId: string) =>
        firstNamed(sql`SELECT id, email, first_name, last_name FROM users WHERE id = ${userId}`)

      const insertLink = (userId: string, purpose: PasswordLinkPurpose, tokenHash: string, ttlMinutes: number) =>
        Effect.gen(function*() {
          yield* sql`UPDATE password_links SET used_at = now() WHERE user_id = ${userId} AND used_at IS NULL`
          const row = yield* firstExpires(sql`
            INSERT INTO password_links (id, user_id, purpose, token_hash, expires_at)
            VALUES (${crypto.randomUUID()}, ${userId}, ${purpose}, ${tokenHash}, now() + make_interval(mins => ${ttlMinutes}))
            RETURNING to_char(expires_at AT TIME ZONE 'UTC', ${sql.literal(ISO)}) AS expires_at`)
          return Option.isSome(row) ? row.value.expires_at : yield* Effect.die("INSERT ... RETURNING gave no link")
        })

      const findLiveLink = (tokenHash: string) =>
        firstLink(sql`
          SELECT l.user_id, u.email, l.purpose, to_char(l.expires_at AT TIME ZONE 'UTC', ${sql.literal(ISO)}) AS expires_at
          FROM password_links l JOIN users u ON u.id = l.user_id
          WHERE l.token_hash = ${tokenHash} AND l.used_at IS NULL AND l.expires_at > now()`)

      const consumeLink = (tokenHash: string) =>
        firstLink(sql`
          UPDATE password_links l SET used_at = now()
          FROM users u
          WHERE u.id = l.user_id AND l.token_hash = ${tokenHash} AND l.used_at IS NULL AND l.expires_at > now()
          RETURNING l.user_id, u.email, l.purpose, to_char(l.expires_at AT TIME ZONE 'UTC', ${sql.literal(ISO)}) AS expires_at`)

      const setPasswordHash = (userId: string, hash: string) =>
        Effect.asVoid(sql`UPDATE users SET password_hash = ${hash}, password_set_at = now() WHERE id = ${userId}`)

      return {
        ...atDatabaseBoundary({ ensure, findByEmail, find, insertLink, findLiveLink, consumeLink, setPasswordHash }),
        // BEGIN and COMMIT fail with SqlError; the statements inside are already mapped.
        transaction: (effect) => orDatabaseUnavailable(sql.withTransaction(effect))
      }
    })
  )
}
