/**
 * Console sessions and password hashing (decision 0021).
 *
 * Passwords are hashed with scrypt (memory-hard): N=2^15, r=8, p=1, a 16-byte salt and a
 * 64-byte key, stored as `scrypt$N$r$p$salt_b64$hash_b64` so the parameters can be raised
 * later without invalidating old hashes. The KDF runs on libuv's thread pool (node's async
 * `scrypt`), never on the event loop. A session secret and its CSRF token are random
 * high-entropy strings stored as SHA-256 digests.
 */
import { Context, Effect, Layer, Option } from "effect"
import { HttpServerRequest } from "effect/http"
import { RateLimiter } from "effect/persistence/RateLimiter"
import { randomBytes, scrypt, timingSafeEqual } from "node:crypto"
import { type DatabaseUnavailable, InsufficientScope, type RateLimitExceeded, Unauthorized } from "../../../schema/errors.ts"
import type { CreateMcpToken } from "../../../schema/sessions.ts"
import type { McpGrant } from "../../../schema/scopes.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import { CredentialStore, type PrincipalShape } from "../../kernel/principal.ts"
import { consumeBucket } from "../../platform/rate-limit.ts"
import { peerAddressOf } from "../../platform/request-info.ts"
import { v6Groups } from "../../platform/public-address.ts"
import { CredentialPrefix, mintSecret, randomBase62, secretDigest } from "../../kernel/credentials/tokens.ts"
import { UserTokensRepo } from "../user-tokens/repo.ts"
import { DEFAULT_USER_TOKEN_UNITS_PER_MINUTE, type NewMcpToken, userTokenMinter } from "../user-tokens/service.ts"
import { SessionsRepo } from "./repo.ts"
import { digestsEqual } from "../../platform/secrets.ts"

export const SESSION_COOKIE = "svc_session"
export const SESSION_HOURS = 12
export const CSRF_HEADER = "x-csrf-token"

const SCRYPT = { N: 2 ** 15, r: 8, p: 1, saltBytes: 16, keyBytes: 64 } as const
/** 128 * N * r is 32 MiB, node's default cap; leave headroom. */
const MAX_MEM = 64 * 1024 * 1024

const derive = (password: string, salt: Buffer, N: number, r: number, p: number, keyBytes: number) =>
  Effect.callback<Buffer>((resume) => {
    scrypt(password.normalize("NFC"), salt, keyBytes, { N, r, p, maxmem: MAX_MEM }, (error, key) =>
      resume(error === null ? Effect.succeed(key) : Effect.die(error)))
  })

/** The stored form of a password. */
export const hashPassword = (password: string): Effect.Effect<string> => {
  const salt = randomBytes(SCRYPT.saltBytes)
  return Effect.map(
    derive(password, salt, SCRYPT.N, SCRYPT.r, SCRYPT.p, SCRYPT.keyBytes),
    (key) => `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${salt.toString("base64")}$${key.toString("base64")}`
  )
}

const parseHash = (stored: string) => {
  const parts = stored.split("$")
  if (parts.length !== 6 || parts[0] !== "scrypt") return undefined
  const [N, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])]
  if (![N, r, p].every((n) => Number.isSafeInteger(n) && n > 0) || N > 2 ** 20 || r > 32 || p > 16) return undefined
  const salt = Buffer.from(parts[4] ?? "", "base64")
  const hash = Buffer.from(parts[5] ?? "", "base64")
  if (salt.length === 0 || hash.length === 0) return undefined
  return { N, r, p, salt, hash }
}

/** Whether `password` matches `stored`; constant-time compare. A malformed hash matches nothing. */
export const verifyPassword = (password: string, stored: string): Effect.Effect<boolean> => {
  const parsed = parseHash(stored)
  if (parsed === undefined) return Effect.succeed(false)
  return Effect.map(
    derive(password, parsed.salt, parsed.N, parsed.r, parsed.p, parsed.hash.length),
    (key) => key.length === parsed.hash.length && timingSafeEqual(key, parsed.hash)
  )
}

/** The same work as a verification, for an unknown email or a person without a password. */
const burnVerification = (password: string) =>
  Effect.as(derive(password, randomBytes(SCRYPT.saltBytes), SCRYPT.N, SCRYPT.r, SCRYPT.p, SCRYPT.keyBytes), false)



export interface NewSession {
  readonly userId: string
  readonly email: string
  readonly secret: string
  readonly csrfToken: string
  readonly expiresAt: string
}

export type { NewMcpToken } from "../user-tokens/service.ts"

/**
 * Login throttling (decisions 0025, 0107): failed sign-ins per (email, client address) and per
 * client address, counted in the shared rate limiter (memory, or Redis with REDIS_URL). Each
 * failure raises its counter by one and extends its life by window / limit; the counter clears
 * when it lapses, so a burst of `limit` failures refuses further attempts for about the window.
 * Nothing counts per email alone: failures from one address never refuse the right password
 * from another (no one can lock a person out from afar).
 */
export const LOGIN_FAILURE_WINDOW_MINUTES = 15
/** Failures for one email from one client address. */
export const LOGIN_FAILURES_PER_EMAIL_AND_ADDRESS = 10
/** Failures from one client address, whatever the emails. */
export const LOGIN_FAILURES_PER_ADDRESS = 50

interface FailureBucket {
  readonly key: string
  readonly limit: number
  readonly message: string
  readonly reason: string
}

/**
 * The throttled client: the directly connected peer (as everywhere in the service: no proxy
 * header is trusted), an IPv6 peer by its /64, the block one subscriber is handed.
 */
export const throttleAddressOf = (address: string): string => {
  if (!address.includes(":")) return address
  const groups = v6Groups(address)
  return groups === undefined ? address : `${groups.slice(0, 4).map((group) => group.toString(16)).join(":")}::/64`
}

/** The calling peer's address for throttling, when there is a request. */
const clientAddress = Effect.map(
  Effect.serviceOption(HttpServerRequest.HttpServerRequest),
  (request) => Option.getOrUndefined(Option.map(Option.flatMap(request, peerAddressOf), throttleAddressOf))
)

const failureBuckets = (email: string, address: string | undefined): ReadonlyArray<FailureBucket> => {
  // Without a peer address (the service serves TCP only, so never in practice) they share one.
  const from = address === undefined || address === "" ? "unknown" : address
  return [
    {
      // The digest keeps email addresses out of the counter store's keys.
      key: `login:email-address:${secretDigest(email.trim().toLowerCase())}:${from}`,
      limit: LOGIN_FAILURES_PER_EMAIL_AND_ADDRESS,
      message: "Too many failed sign-ins for this email from this address. Wait before trying again.",
      reason: "login_throttled_email"
    },
    {
      key: `login:address:${from}`,
      limit: LOGIN_FAILURES_PER_ADDRESS,
      message: "Too many failed sign-ins from this address. Wait before trying again.",
      reason: "login_throttled_address"
    }
  ]
}

const badLogin = () => new Unauthorized({ message: "Unknown email or wrong password." })
const sessionOnly = () =>
  new InsufficientScope({ message: "Only a signed-in session can do this.", reason: "credential_kind_not_accepted" })

export class Sessions extends Context.Service<Sessions, {
  /**
   * A new session for a person whose password matches; the same 401 for every failure. After
   * repeated failures for the email from the client's address (or from that address for any
   * email), 429 without checking the password; another address is not affected.
   */
  readonly login: (
    email: string,
    password: string
  ) => Effect.Effect<NewSession, Unauthorized | RateLimitExceeded | DatabaseUnavailable>
  /** Revokes the calling session. */
  readonly logout: (principal: PrincipalShape) => Effect.Effect<void, InsufficientScope | DatabaseUnavailable>
  /** Whether `token` is the CSRF token of a live session; none when the session is gone. */
  readonly csrfMatches: (
    sessionId: string,
    token: string | undefined
  ) => Effect.Effect<Option.Option<boolean>, DatabaseUnavailable>
  /**
   * A session for the person opened by the service itself (the operator's quickstart acts as
   * the person through it), with no cookie ever issued; revoke it with `revokeAllOf` or `close`.
   */
  readonly openFor: (
    actor: PrincipalShape,
    userId: string
  ) => Effect.Effect<Extract<PrincipalShape, { readonly kind: "session" }>, DatabaseUnavailable>
  /** Revokes one session (audited). */
  readonly close: (actor: PrincipalShape, sessionId: string) => Effect.Effect<void, DatabaseUnavailable>
  /** Revokes every live session of the person (a password change); answers how many. */
  readonly revokeAllOf: (actor: PrincipalShape, userId: string) => Effect.Effect<number, DatabaseUnavailable>
  /** Mints an MCP user token for the signed-in person (audited). */
  readonly mintMcpToken: (
    principal: PrincipalShape,
    input: CreateMcpToken
  ) => Effect.Effect<NewMcpToken, InsufficientScope | DatabaseUnavailable>
}>()("svc/Sessions") {
  static readonly layer = Layer.effect(Sessions)(
    Effect.gen(function*() {
      const repo = yield* SessionsRepo
      const audit = yield* AuditLog
      const credentials = yield* CredentialStore
      const limiter = yield* RateLimiter
      const mintUserToken = yield* userTokenMinter

      const transaction = repo.transaction

      const window = `${LOGIN_FAILURE_WINDOW_MINUTES} minutes` as const

      /**
       * Takes one failure from the bucket before the password is checked, so concurrent attempts
       * cannot all slip under the limit: a full bucket is the 429. Some when a token was taken.
       */
      const reserveFailure = (bucket: FailureBucket) =>
        consumeBucket(limiter, {
          key: bucket.key,
          limit: bucket.limit,
          window,
          exceeded: { message: bucket.message, reason: bucket.reason }
        })

      /**
       * Gives a reserved failure back (the attempt did not fail): the fixed-window counter takes
       * a negative count, which lowers it and shortens its life by the same step, in memory and
       * in Redis alike. A counter-store error only means the failure stays counted.
       */
      const releaseFailures = (buckets: ReadonlyArray<FailureBucket>) =>
        Effect.forEach(buckets, (bucket) =>
          Effect.ignore(limiter.consume({
            algorithm: "fixed-window",
            onExceeded: "fail",
            window,
            limit: bucket.limit,
            key: bucket.key,
            tokens: -1
          })), { discard: true })

      const login = Effect.fn("Sessions.login")(function*(email: string, password: string) {
        const reserved: Array<FailureBucket> = []
        for (const bucket of failureBuckets(email, yield* clientAddress)) {
          // A throttled attempt checks nothing: the reservations made so far are given back.
          const taken = yield* reserveFailure(bucket).pipe(Effect.tapError(() => releaseFailures(reserved)))
          if (Option.isSome(taken)) reserved.push(bucket)
        }
        const user = yield* repo.findLoginUser(email).pipe(
            // The attempt never reached the password: it is not a failure.
            Effect.tapError(() => releaseFailures(reserved))
          )
        const stored = Option.flatMap(user, (row) => Option.fromNullishOr(row.password_hash))
        const matches = Option.isSome(stored)
          ? yield* verifyPassword(password, stored.value)
          : yield* burnVerification(password)
        // A failure keeps its reservations: they are what the buckets count.
        if (!matches || Option.isNone(user)) return yield* badLogin()
        yield* releaseFailures(reserved)
        const secret = mintSecret(CredentialPrefix.session)
        const csrfToken = randomBase62(43)
        const sessionId = crypto.randomUUID()
        const created = yield* transaction(Effect.gen(function*() {
          const expiresAt = yield* repo.insert({
            id: sessionId,
            userId: user.value.id,
            secretHash: secretDigest(secret),
            csrfTokenHash: secretDigest(csrfToken),
            lifetime: { hours: SESSION_HOURS }
          })
          yield* audit.record({
            actor: { kind: "session", userId: user.value.id, sessionId },
            action: "session.created",
            targetKind: "session",
            targetId: sessionId
          })
          return expiresAt
        }))
        if (Option.isNone(created)) return yield* Effect.die(new Error("INSERT ... RETURNING returned no row"))
        return { userId: user.value.id, email: user.value.email, secret, csrfToken, expiresAt: created.value }
      })

      const logout = Effect.fn("Sessions.logout")(function*(principal: PrincipalShape) {
        if (principal.kind !== "session") return yield* sessionOnly()
        yield* transaction(Effect.gen(function*() {
          yield* repo.revoke(principal.sessionId)
          yield* audit.record({ actor: principal, action: "session.revoked", targetKind: "session", targetId: principal.sessionId })
        }))
        yield* credentials.forget
      })

      const openFor = Effect.fn("Sessions.openFor")(function*(actor: PrincipalShape, userId: string) {
        const sessionId = crypto.randomUUID()
        yield* transaction(Effect.gen(function*() {
          // Random digests: no cookie or CSRF token exists for this session, so none can match.
          yield* repo.insert({
            id: sessionId,
            userId,
            secretHash: secretDigest(mintSecret(CredentialPrefix.session)),
            csrfTokenHash: secretDigest(randomBase62(43)),
            lifetime: { minutes: 10 }
          })
          yield* audit.record({ actor, action: "session.created", targetKind: "session", targetId: sessionId, details: { internal: true } })
        }))
        return { kind: "session" as const, userId, sessionId }
      })

      const close = Effect.fn("Sessions.close")(function*(actor: PrincipalShape, sessionId: string) {
        yield* transaction(Effect.gen(function*() {
          yield* repo.revoke(sessionId)
          yield* audit.record({ actor, action: "session.revoked", targetKind: "session", targetId: sessionId })
        }))
        yield* credentials.forget
      })

      const revokeAllOf = Effect.fn("Sessions.revokeAllOf")(function*(actor: PrincipalShape, userId: string) {
        const revoked = yield* transaction(Effect.gen(function*() {
          const ids = yield* repo.revokeAllOf(userId)
          for (const id of ids) {
            yield* audit.record({ actor, action: "session.revoked", targetKind: "session", targetId: id, details: { reason: "password_changed" } })
          }
          return ids.length
        }))
        yield* credentials.forget
        return revoked
      })

      const csrfMatches = Effect.fn("Sessions.csrfMatches")(function*(sessionId: string, token: string | undefined) {
        const stored = yield* repo.csrfTokenHash(sessionId)
        return Option.map(stored, (hash) => token !== undefined && token !== "" && digestsEqual(hash, secretDigest(token)))
      })

      const mintMcpToken = Effect.fn("Sessions.mintMcpToken")(function*(principal: PrincipalShape, input: CreateMcpToken) {
        if (principal.kind !== "session") return yield* sessionOnly()
        const requested: ReadonlyArray<McpGrant> = input.grants ?? ["mcp:read"]
        return yield* transaction(mintUserToken({
          actor: principal,
          userId: principal.userId,
          grants: requested,
          rateLimitUnitsPerMinute: input.rate_limit_units_per_minute ?? DEFAULT_USER_TOKEN_UNITS_PER_MINUTE,
          expiresInDays: input.expires_in_days ?? null,
          mcpClientId: null
        }))
      })

      return { login, logout, openFor, close, revokeAllOf, csrfMatches, mintMcpToken }
    })
  ).pipe(Layer.provide([SessionsRepo.layer, UserTokensRepo.layer, AuditLog.layer]))
}
