/**
 * Minting MCP user tokens (`svc_user_...`): one implementation behind both
 * `POST /api/v1/me/mcp-tokens` (decision 0021) and the agent OAuth code exchange
 * `POST /oauth/mcp/token` (decision 0023). Only the SHA-256 digest is stored; the plaintext
 * is returned once.
 */
import { Effect } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { McpGrant } from "../../../schema/scopes.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import type { PrincipalShape } from "../../kernel/principal.ts"
import { CredentialPrefix, displayPrefix, mintSecret, secretDigest } from "../../kernel/credentials/tokens.ts"
import { UserTokensRepo } from "./repo.ts"

/** Units per minute of a user token when none are asked for. */
export const DEFAULT_USER_TOKEN_UNITS_PER_MINUTE = 120

export interface NewMcpToken {
  readonly id: string
  readonly token: string
  readonly prefix: string
  readonly grants: ReadonlyArray<McpGrant>
  readonly rate_limit_units_per_minute: number
  readonly expires_at: string | null
}

export interface UserTokenRequest {
  /** Who mints it, for the audit trail. */
  readonly actor: PrincipalShape
  /** The person the token names. */
  readonly userId: string
  readonly grants: ReadonlyArray<McpGrant>
  readonly rateLimitUnitsPerMinute: number
  /** Null: the token does not expire. */
  readonly expiresInDays: number | null
  /** The registered agent client the token was issued to through `/oauth/mcp/token`. */
  readonly mcpClientId: string | null
  /** Extra fields of the audit event. */
  readonly details?: Record<string, unknown>
}

/**
 * A function that inserts a user token and its `user_token.created` audit event. It runs no
 * transaction of its own: call it inside the caller's, so the token and its audit row commit
 * or roll back together.
 */
export const userTokenMinter: Effect.Effect<
  (request: UserTokenRequest) => Effect.Effect<NewMcpToken, DatabaseUnavailable>,
  never,
  UserTokensRepo | AuditLog
> = Effect.gen(function*() {
  const repo = yield* UserTokensRepo
  const audit = yield* AuditLog

  return Effect.fn("UserTokens.mint")(function*(request: UserTokenRequest) {
    const grants = [...new Set(request.grants)]
    const rate = request.rateLimitUnitsPerMinute
    const days = request.expiresInDays
    const token = mintSecret(CredentialPrefix.userToken)
    const prefix = displayPrefix(token, CredentialPrefix.userToken)
    const id = crypto.randomUUID()
    const expiresAt = yield* repo.insert({
      id,
      userId: request.userId,
      prefix,
      secretHash: secretDigest(token),
      grants,
      rateLimitUnitsPerMinute: rate,
      mcpClientId: request.mcpClientId,
      expiresInDays: days
    })
    yield* audit.record({
      actor: request.actor,
      action: "user_token.created",
      targetKind: "user_token",
      targetId: id,
      details: {
        prefix,
        grants,
        rate_limit_units_per_minute: rate,
        expires_in_days: days,
        ...(request.mcpClientId === null ? {} : { mcp_client_id: request.mcpClientId }),
        ...request.details
      }
    })
    return {
      id,
      token,
      prefix,
      grants,
      rate_limit_units_per_minute: rate,
      expires_at: expiresAt
    } satisfies NewMcpToken
  })
})
