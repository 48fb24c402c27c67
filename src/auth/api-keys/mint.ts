/** API keys: minted (plaintext returned once, digest stored) and revoked. */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { Scope } from "../../../schema/scopes.ts"
import { orDatabaseUnavailable } from "../../platform/database.ts"
import { CredentialPrefix, displayPrefix, mintSecret, secretDigest } from "../credentials/tokens.ts"

export const DEFAULT_RATE_LIMIT_PER_MINUTE = 60

export interface NewApiKey {
  readonly profileId: string
  readonly workspaceId: string
  readonly scopes: ReadonlyArray<Scope>
  readonly name?: string
  readonly rateLimitPerMinute?: number
  readonly oauthAppId?: string | null
  readonly grantId?: string | null
  readonly createdByUserId?: string | null
  readonly rotatedFromId?: string | null
}

export interface MintedApiKey {
  readonly id: string
  /** The plaintext: returned to the caller once, never stored. */
  readonly key: string
  readonly prefix: string
}

export class ApiKeys extends Context.Service<ApiKeys, {
  readonly mint: (key: NewApiKey) => Effect.Effect<MintedApiKey, DatabaseUnavailable>
  /** Revokes the live keys of a grant that hold a scope beyond `keepingScopes`; answers how many stopped. */
  readonly revokeForGrant: (grantId: string, keepingScopes: ReadonlyArray<Scope>) => Effect.Effect<number, DatabaseUnavailable>
}>()("svc/ApiKeys") {
  static readonly layer = Layer.effect(ApiKeys)(
    Effect.gen(function*() {
      const sql = yield* SqlClient

      const mint = Effect.fn("ApiKeys.mint")(function*(input: NewApiKey) {
        const key = mintSecret(CredentialPrefix.apiKey)
        const id = crypto.randomUUID()
        const prefix = displayPrefix(key, CredentialPrefix.apiKey)
        yield* orDatabaseUnavailable(sql`
          INSERT INTO api_keys (id, profile_id, workspace_id, name, prefix, secret_hash, scopes, rate_limit_per_minute,
                                oauth_app_id, grant_id, created_by_user_id, rotated_from_id)
          VALUES (${id}, ${input.profileId}, ${input.workspaceId}, ${input.name ?? ""}, ${prefix}, ${secretDigest(key)},
                  ${input.scopes}, ${input.rateLimitPerMinute ?? DEFAULT_RATE_LIMIT_PER_MINUTE},
                  ${input.oauthAppId ?? null}, ${input.grantId ?? null}, ${input.createdByUserId ?? null},
                  ${input.rotatedFromId ?? null})`)
        return { id, key, prefix }
      })

      /** Keys minted under a grant that carry any scope beyond `keepingScopes` (a narrowed grant). */
      const revokeForGrant = Effect.fn("ApiKeys.revokeForGrant")(function*(grantId: string, keepingScopes: ReadonlyArray<Scope>) {
        const revoked = yield* orDatabaseUnavailable(sql`
          UPDATE api_keys SET revoked_at = now()
          WHERE grant_id = ${grantId} AND revoked_at IS NULL AND NOT (scopes <@ ${keepingScopes}::text[])
          RETURNING id`)
        return revoked.length
      })

      return { mint, revokeForGrant }
    })
  )
}
