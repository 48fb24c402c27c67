/**
 * People who sign in (decision 0053): one-time links that set a password (an invitation) or a
 * new one (a reset). A link is 43 random base62 characters, stored as its SHA-256 digest, used
 * once; issuing a new link voids the person's earlier ones. Setting a password signs the person
 * out everywhere. Hashing is the sessions' scrypt (decision 0021).
 */
import { Context, Effect, Layer, Option } from "effect"
import { type DatabaseUnavailable, InvalidRequest, NotFound, ValidationError } from "../../../schema/errors.ts"
import type { PasswordLink, PasswordLinkPurpose } from "../../../schema/people.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import { hashPassword, Sessions } from "../sessions/service.ts"
import { randomBase62, secretDigest } from "../../kernel/credentials/tokens.ts"
import type { PrincipalShape } from "../../kernel/principal.ts"
import { AppConfig } from "../../platform/config.ts"
import { PeopleRepo, type PersonRow } from "./repo.ts"

/** An invitation is read when it is read (days); a reset is acted on at once (an hour). */
export const LINK_MINUTES: Record<PasswordLinkPurpose, number> = { invite: 7 * 24 * 60, reset: 60 }

/** The page a link opens (GET shows the form, POST sets the password). */
export const PASSWORD_PAGE_PATH = "/account/password"

const unusableLink = () =>
  new InvalidRequest({
    message: "This password link is unknown, expired or already used. Ask for a new one.",
    reason: "password_link_unusable"
  })

export interface LinkView {
  readonly email: string
  readonly purpose: PasswordLinkPurpose
  readonly expiresAt: string
}

export interface PasswordChanged {
  readonly user_id: string
  readonly email: string
  readonly revoked_sessions: number
}

export class People extends Context.Service<People, {
  /** The person with this email, created (without a password) when missing. */
  readonly ensure: (email: string) => Effect.Effect<PersonRow, DatabaseUnavailable>
  /** A one-time link; `reset` needs an existing person (404 otherwise). */
  readonly issueLink: (
    actor: PrincipalShape,
    email: string,
    purpose: PasswordLinkPurpose
  ) => Effect.Effect<PasswordLink, NotFound | DatabaseUnavailable>
  /** What a live link is for; none when it is unknown, expired or used. */
  readonly viewLink: (token: string) => Effect.Effect<Option.Option<LinkView>, DatabaseUnavailable>
  /** Sets the password of the link's person and uses the link up. */
  readonly setPassword: (
    token: string,
    password: string
  ) => Effect.Effect<PasswordChanged, InvalidRequest | ValidationError | DatabaseUnavailable>
}>()("svc/People") {
  static readonly layer = Layer.effect(People)(
    Effect.gen(function*() {
      const repo = yield* PeopleRepo
      const audit = yield* AuditLog
      const sessions = yield* Sessions
      const settings = yield* AppConfig

      const inTransaction = repo.transaction

      const ensure = Effect.fn("People.ensure")(function*(email: string) {
        return yield* repo.ensure(email.trim())
      })

      const issueLink = Effect.fn("People.issueLink")(function*(actor: PrincipalShape, rawEmail: string, purpose: PasswordLinkPurpose) {
        const email = rawEmail.trim()
        const token = randomBase62(43)
        return yield* inTransaction(Effect.gen(function*() {
          const person = purpose === "invite"
            ? yield* repo.ensure(email)
            : yield* Effect.flatMap(repo.findByEmail(email), (found) =>
              Option.isSome(found)
                ? Effect.succeed({ ...found.value, created: false })
                : Effect.fail(new NotFound({ message: "No person has this email." })))
          const expiresAt = yield* repo.insertLink(person.id, purpose, secretDigest(token), LINK_MINUTES[purpose])
          yield* audit.record({
            actor,
            action: "password_link.created",
            targetKind: "user",
            targetId: person.id,
            details: { purpose, created_person: person.created }
          })
          return {
            user_id: person.id,
            email: person.email,
            purpose,
            url: `${settings.baseUrl}${PASSWORD_PAGE_PATH}?token=${token}`,
            expires_at: expiresAt,
            created_person: person.created
          } satisfies PasswordLink
        }))
      })

      const viewLink = Effect.fn("People.viewLink")(function*(token: string) {
        if (token === "") return Option.none()
        const row = yield* repo.findLiveLink(secretDigest(token))
        return Option.map(row, (link): LinkView => ({ email: link.email, purpose: link.purpose, expiresAt: link.expires_at }))
      })

      const setPassword = Effect.fn("People.setPassword")(function*(token: string, password: string) {
        if (password.length < 8 || password.length > 1024) {
          return yield* new ValidationError({ message: "The password must have 8 to 1024 characters.", reason: "weak_password" })
        }
        if (token === "") return yield* unusableLink()
        // The KDF runs before the transaction: no row stays locked while it works.
        const hash = yield* hashPassword(password)
        const changed = yield* inTransaction(Effect.gen(function*() {
          const link = yield* repo.consumeLink(secretDigest(token))
          if (Option.isNone(link)) return yield* unusableLink()
          if (link.value.email.trim().toLowerCase() === password.trim().toLowerCase()) {
            return yield* new ValidationError({ message: "The password must not be the email address.", reason: "weak_password" })
          }
          yield* repo.setPasswordHash(link.value.user_id, hash)
          const actor: PrincipalShape = { kind: "anonymous" }
          yield* audit.record({
            actor,
            action: "user.password_set",
            targetKind: "user",
            targetId: link.value.user_id,
            details: { purpose: link.value.purpose }
          })
          return link.value
        }))
        // Every earlier session ends: a reset is often a response to someone else holding one.
        const revoked = yield* sessions.revokeAllOf({ kind: "anonymous" }, changed.user_id)
        return { user_id: changed.user_id, email: changed.email, revoked_sessions: revoked }
      })

      return { ensure, issueLink, viewLink, setPassword }
    })
  ).pipe(Layer.provide([PeopleRepo.layer, AuditLog.layer, Sessions.layer]))
}
