/**
 * Internal-service credentials for `/rpc` (decision 0081): the operator mints, lists, rotates and
 * revokes them (src/main/cli.ts); the RPC middleware resolves a presented secret here.
 */
import { Context, Effect, Layer, Option } from "effect"
import { isUuid } from "../../../schema/common.ts"
import { type DatabaseUnavailable, NotFound, ValidationError } from "../../../schema/errors.ts"
import { type MintedRpcCredential, type RpcCredential, RPC_ONLY_SCOPES } from "../../../schema/rpc.ts"
import { Scopes } from "../../../schema/scopes.ts"
import { ROTATION_GRACE_HOURS } from "../../accounts/api-keys/service.ts"
import { CredentialPrefix, displayPrefix, isWellFormed, mintSecret, secretDigest } from "../../kernel/credentials/tokens.ts"
import { type CredentialRow, RpcCredentialsRepo } from "./repo.ts"

/** Calls per minute unless the operator says otherwise: internal traffic, ten times a key's default. */
export const DEFAULT_RPC_RATE_LIMIT_PER_MINUTE = 6000

export interface MintRpcCredential {
  readonly name: string
  readonly scopes: ReadonlyArray<string>
  /** None: every profile. */
  readonly profileIds?: ReadonlyArray<string> | undefined
  readonly rateLimitPerMinute?: number | undefined
}

const render = (row: CredentialRow): RpcCredential => ({ ...row })

const knownScopes: ReadonlyArray<string> = [...Scopes, ...RPC_ONLY_SCOPES]

export class RpcCredentials extends Context.Service<RpcCredentials, {
  readonly mint: (input: MintRpcCredential) => Effect.Effect<MintedRpcCredential, ValidationError | DatabaseUnavailable>
  readonly list: Effect.Effect<ReadonlyArray<RpcCredential>, DatabaseUnavailable>
  /** A successor with the same scopes and profiles; the old one stays valid 48 hours. */
  readonly rotate: (id: string) => Effect.Effect<MintedRpcCredential, NotFound | DatabaseUnavailable>
  readonly revoke: (id: string) => Effect.Effect<RpcCredential, NotFound | DatabaseUnavailable>
  /** The active credential a presented secret names, or none (malformed, unknown, expired, revoked). */
  readonly authenticate: (secret: string) => Effect.Effect<Option.Option<CredentialRow>, DatabaseUnavailable>
}>()("svc/RpcCredentials") {
  static readonly layer = Layer.effect(RpcCredentials)(
    Effect.gen(function*() {
      const repo = yield* RpcCredentialsRepo
      const noSuchCredential = () => new NotFound({ message: "No such RPC credential." })

      const insert = Effect.fn("RpcCredentials.insert")(function*(
        input: { readonly name: string; readonly scopes: ReadonlyArray<string>; readonly profileIds: ReadonlyArray<string> | null; readonly rateLimitPerMinute: number },
        rotatedFromId: string | null
      ) {
        const secret = mintSecret(CredentialPrefix.rpcCredential)
        const id = crypto.randomUUID()
        yield* repo.insert({
          id,
          name: input.name,
          prefix: displayPrefix(secret, CredentialPrefix.rpcCredential),
          digest: secretDigest(secret),
          scopes: input.scopes,
          profileIds: input.profileIds,
          rateLimitPerMinute: input.rateLimitPerMinute,
          rotatedFromId
        })
        const row = yield* repo.byId(id)
        if (Option.isNone(row)) return yield* Effect.die("the credential just inserted is not readable")
        return { credential: render(row.value), secret }
      })

      const mint = Effect.fn("RpcCredentials.mint")(function*(input: MintRpcCredential) {
        const name = input.name.trim()
        if (name === "" || name.length > 200) {
          return yield* new ValidationError({ message: "name: 1 to 200 characters" })
        }
        const unknown = input.scopes.filter((scope) => !knownScopes.includes(scope))
        if (input.scopes.length === 0 || unknown.length > 0) {
          return yield* new ValidationError({
            message: input.scopes.length === 0 ? "scopes: at least one scope" : `scopes: unknown scope ${unknown.join(", ")}`
          })
        }
        const profileIds = input.profileIds === undefined ? null : input.profileIds.map((id) => id.toLowerCase())
        if (profileIds !== null && (profileIds.length === 0 || !profileIds.every(isUuid))) {
          return yield* new ValidationError({ message: "profile_ids: one or more profile UUIDs (omit for every profile)" })
        }
        const rate = input.rateLimitPerMinute ?? DEFAULT_RPC_RATE_LIMIT_PER_MINUTE
        if (!Number.isInteger(rate) || rate < 1 || rate > 1_000_000) {
          return yield* new ValidationError({ message: "rate_limit_per_minute: an integer from 1 to 1000000" })
        }
        return yield* insert({ name, scopes: [...new Set(input.scopes)], profileIds, rateLimitPerMinute: rate }, null)
      })

      const rotate = Effect.fn("RpcCredentials.rotate")(function*(id: string) {
        if (!isUuid(id)) return yield* noSuchCredential()
        return yield* repo.transaction(Effect.gen(function*() {
          const found = yield* repo.byId(id.toLowerCase())
          if (Option.isNone(found) || found.value.status !== "active") return yield* noSuchCredential()
          const old = found.value
          const minted = yield* insert(
            { name: old.name, scopes: old.scopes, profileIds: old.profile_ids, rateLimitPerMinute: old.rate_limit_per_minute },
            old.id
          )
          yield* repo.expireIn(old.id, ROTATION_GRACE_HOURS)
          const previous = yield* repo.byId(old.id)
          return Option.isSome(previous) ? { ...minted, rotated_from: render(previous.value) } : minted
        }))
      })

      const revoke = Effect.fn("RpcCredentials.revoke")(function*(id: string) {
        if (!isUuid(id)) return yield* noSuchCredential()
        const revoked = yield* repo.revoke(id.toLowerCase())
        const row = yield* repo.byId(id.toLowerCase())
        if (!revoked && Option.isNone(row)) return yield* noSuchCredential()
        if (Option.isNone(row)) return yield* noSuchCredential()
        return render(row.value)
      })

      const authenticate = (secret: string) =>
        isWellFormed(secret, CredentialPrefix.rpcCredential)
          ? Effect.map(repo.byDigest(secretDigest(secret)), Option.filter((row) => row.status === "active"))
          : Effect.succeed(Option.none())

      return RpcCredentials.of({ mint, list: Effect.map(repo.list, (rows) => rows.map(render)), rotate, revoke, authenticate })
    })
  ).pipe(Layer.provide(RpcCredentialsRepo.layer))
}
