/**
 * Workspace API keys: who may manage them, and the create / edit / revoke / rotate rules.
 *
 * Callers: a signed-in owner or admin of the workspace, the OAuth app that created the
 * workspace, and (for the list only) an owner's or admin's user token. A workspace the caller
 * cannot reach and a key that is not the workspace's answer one identical 404. Every change
 * is audited in the transaction that makes it. Decision 0019.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { ApiKey, CreateApiKey, UpdateApiKey } from "../../../schema/api-keys.ts"
import { isUuid } from "../../../schema/common.ts"
import {
  type DatabaseUnavailable,
  type InvalidParameter,
  InsufficientScope,
  InvalidState,
  NotFound,
  ValidationError
} from "../../../schema/errors.ts"
import {
  type ConnectScope,
  ConnectScopes,
  DEFAULT_KEY_SCOPES,
  isHealthcareFamily,
  mintableScopes,
  type Scope,
  Scopes,
  withholdPersonScopes
} from "../../../schema/scopes.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import { CredentialStore, type PrincipalShape } from "../../kernel/principal.ts"
import { DEFAULT_PAGE_SIZE, keysetCursor, toPage } from "../../platform/pagination.ts"
import { ApiKeysRepo, DEFAULT_RATE_LIMIT_PER_MINUTE, type GrantRow, type KeyChanges, type KeyRow } from "./repo.ts"

/** Rotation: the old key keeps working this long beside its successor, then expires by itself. */
export const ROTATION_GRACE_HOURS = 48

/** Workspace roles that manage keys. */
const MANAGING_ROLES: ReadonlyArray<string> = ["owner", "admin"]

/** Unknown, foreign or archived workspace; unknown key or another workspace's: one answer. */
const notFound = () => new NotFound({ message: "No such workspace or API key." })

const isScope = (value: string): value is Scope => (Scopes as ReadonlyArray<string>).includes(value)
const isConnectScope = (value: string): value is ConnectScope => (ConnectScopes as ReadonlyArray<string>).includes(value)

const render = (row: KeyRow): ApiKey => ({
  id: row.id,
  workspace_id: row.workspace_id,
  profile_id: row.profile_id,
  name: row.name,
  prefix: row.prefix,
  scopes: row.scopes,
  rate_limit_per_minute: row.rate_limit_per_minute,
  oauth_app_id: row.oauth_app_id,
  rotated_from_id: row.rotated_from_id,
  status: row.status,
  created_at: row.created_at,
  expires_at: row.expires_at,
  revoked_at: row.revoked_at
})

/** The person behind a session or user token; apps have none. */
const userIdOf = (actor: PrincipalShape): string | null =>
  actor.kind === "session" || actor.kind === "user_token" ? actor.userId : null

/** Known scopes, de-duplicated in the order asked; an unknown one is a 400 naming it. */
const parseScopes = (field: string, asked: ReadonlyArray<string>) => {
  const unknown = asked.filter((scope) => !isScope(scope))
  if (unknown.length > 0) {
    return Effect.fail(
      new ValidationError({ message: `${field}: unknown scope ${unknown.map((scope) => JSON.stringify(scope)).join(", ")}` })
    )
  }
  return Effect.succeed<ReadonlyArray<Scope>>([...new Set(asked.filter(isScope))])
}

export interface NewKey {
  readonly key: ApiKey
  /** The plaintext, shown this once. */
  readonly plaintext: string
  /** Asked-for scopes left out on a healthcare-family profile. */
  readonly withheld: ReadonlyArray<Scope>
}

export interface RotatedKey extends NewKey {
  /** The rotated-away key, with its new `expires_at`. */
  readonly previous: ApiKey
}

export interface EditedKey {
  readonly key: ApiKey
  readonly withheld: ReadonlyArray<Scope>
}

type Errors = NotFound | InsufficientScope | DatabaseUnavailable
type Keys<A, E = never> = Effect.Effect<A, E | Errors>

export class ApiKeysService extends Context.Service<ApiKeysService, {
  readonly list: (
    actor: PrincipalShape,
    workspaceId: string,
    page: { readonly limit?: number; readonly cursor?: string }
  ) => Keys<{
    readonly data: ReadonlyArray<ApiKey>
    readonly pagination: { readonly has_next: boolean; readonly cursor: string | null }
  }, InvalidParameter>
  readonly create: (actor: PrincipalShape, workspaceId: string, input: CreateApiKey) => Keys<NewKey, ValidationError>
  readonly update: (
    actor: PrincipalShape,
    workspaceId: string,
    keyId: string,
    patch: UpdateApiKey
  ) => Keys<EditedKey, ValidationError | InvalidState>
  /** Instant revocation (DELETE and POST .../revoke alike); repeating it answers the revoked key unchanged. */
  readonly revoke: (actor: PrincipalShape, workspaceId: string, keyId: string, via: "delete" | "revoke") => Keys<ApiKey>
  readonly rotate: (actor: PrincipalShape, workspaceId: string, keyId: string) => Keys<RotatedKey, InvalidState>
  /**
   * The app's keys on the profile minted before `keyId` revoked (an app giving up its grant on a
   * connection keeps only the calling key); answers how many. In the caller's transaction, unaudited
   * here: the caller's audit entry counts them.
   */
  readonly revokeOlderAppKeys: (appId: string, profileId: string, keyId: string) => Effect.Effect<number, DatabaseUnavailable>
}>()("svc/ApiKeysService") {
  static readonly layer = Layer.effect(ApiKeysService)(
    Effect.gen(function*() {
      const repo = yield* ApiKeysRepo
      const audit = yield* AuditLog
      const credentials = yield* CredentialStore

      /**
       * The workspace id (lower-cased) when `actor` may act on it: 404 when it cannot reach the
       * workspace at all, 403 when it is a member without the role, or a user token writing.
       */
      const authorize = Effect.fn("ApiKeysService.authorize")(function*(
        actor: PrincipalShape,
        rawWorkspaceId: string,
        mode: "read" | "manage"
      ) {
        if (!isUuid(rawWorkspaceId)) return yield* notFound()
        const workspaceId = rawWorkspaceId.toLowerCase()
        switch (actor.kind) {
          case "session":
          case "user_token": {
            // The policy already refuses user tokens on writes; this keeps the rule here too.
            if (actor.kind === "user_token" && mode === "manage") {
              return yield* new InsufficientScope({
                message: "A user token can list a workspace's API keys but never create, edit, revoke or rotate them.",
                reason: "credential_kind_not_accepted"
              })
            }
            const role = yield* repo.memberRole(workspaceId, actor.userId)
            if (Option.isNone(role)) return yield* notFound()
            if (!MANAGING_ROLES.includes(role.value)) {
              return yield* new InsufficientScope({
                message: `Managing API keys needs the workspace role owner or admin; this person is ${role.value}.`,
                reason: "workspace_role"
              })
            }
            return workspaceId
          }
          case "app_client": {
            if (!(yield* repo.createdByApp(workspaceId, actor.appId))) return yield* notFound()
            return workspaceId
          }
          default:
            return yield* new InsufficientScope({
              message: "This operation accepts session, app client credentials.",
              reason: "credential_kind_not_accepted"
            })
        }
      })

      const keyIdOf = (raw: string) => isUuid(raw) ? Effect.succeed(raw.toLowerCase()) : Effect.fail(notFound())

      const reread = (workspaceId: string, keyId: string) =>
        Effect.flatMap(
          repo.find(workspaceId, keyId),
          Option.match({ onNone: () => Effect.die("API key vanished inside its transaction"), onSome: Effect.succeed })
        )

      /**
       * Scopes a key under an app's grant may hold: what the grant mints on this profile. A key
       * minted by an app here is a delegated key like one from the token endpoint, so the
       * entitlement tiering and grant narrowing apply to it too.
       */
      const checkGrant = (grant: Option.Option<GrantRow>, healthcare: boolean, scopes: ReadonlyArray<Scope>) => {
        if (Option.isNone(grant)) {
          return Effect.fail(
            new InsufficientScope({
              message: "The app holds no live grant on this profile, so it cannot hold a key on it.",
              reason: "no_live_grant"
            })
          )
        }
        const mintable = mintableScopes(grant.value.connect_scopes.filter(isConnectScope), healthcare)
        const outside = scopes.filter((scope) => !mintable.includes(scope))
        if (outside.length === 0) return Effect.void
        return Effect.fail(
          new InsufficientScope({
            message: `Not in the app's grant on this profile: ${outside.join(", ")}.`,
            reason: `missing_scope:${outside.join(",")}`
          })
        )
      }

      /** S5.1: on a healthcare-family profile the person scopes are left out; nothing left is a 400. */
      const withhold = (field: string, requested: ReadonlyArray<Scope>, healthcare: boolean) => {
        const held = withholdPersonScopes(requested, healthcare)
        const withheld = requested.filter((scope) => !held.includes(scope))
        if (held.length === 0) {
          return Effect.fail(
            new ValidationError({
              message: `${field}: ${withheld.join(", ")} are withheld on healthcare-family profiles; no scope would be left`
            })
          )
        }
        return Effect.succeed({ held, withheld })
      }

      const list = Effect.fn("ApiKeysService.list")(function*(
        actor: PrincipalShape,
        rawWorkspaceId: string,
        page: { readonly limit?: number; readonly cursor?: string }
      ) {
        const workspaceId = yield* authorize(actor, rawWorkspaceId, "read")
        const limit = page.limit ?? DEFAULT_PAGE_SIZE
        const rows = yield* repo.list(workspaceId, limit, yield* keysetCursor(page.cursor))
        return toPage(rows, limit, render)
      })

      const create = Effect.fn("ApiKeysService.create")(function*(
        actor: PrincipalShape,
        rawWorkspaceId: string,
        input: CreateApiKey
      ) {
        const workspaceId = yield* authorize(actor, rawWorkspaceId, "manage")
        const requested = input.scopes === undefined ? DEFAULT_KEY_SCOPES : yield* parseScopes("body.scopes", input.scopes)
        const noSuchProfile = new ValidationError({ message: "body.profile_id: not a live profile of this workspace" })
        if (!isUuid(input.profile_id)) return yield* noSuchProfile
        const profileId = input.profile_id.toLowerCase()
        return yield* repo.transaction(Effect.gen(function*() {
          const profile = yield* repo.lockProfile(workspaceId, profileId)
          if (Option.isNone(profile)) return yield* noSuchProfile
          const healthcare = isHealthcareFamily(profile.value)
          const { held, withheld } = yield* withhold("body.scopes", requested, healthcare)
          let grantId: string | null = null
          if (actor.kind === "app_client") {
            const grant = yield* repo.liveGrantOfApp(actor.appId, profileId)
            yield* checkGrant(grant, healthcare, held)
            grantId = Option.getOrNull(Option.map(grant, (row) => row.id))
          }
          const minted = yield* repo.mint({
            profileId,
            workspaceId,
            scopes: held,
            name: input.name ?? "",
            rateLimitPerMinute: input.rate_limit_per_minute ?? DEFAULT_RATE_LIMIT_PER_MINUTE,
            oauthAppId: actor.kind === "app_client" ? actor.appId : null,
            grantId,
            createdByUserId: userIdOf(actor)
          })
          const row = yield* reread(workspaceId, minted.id)
          yield* audit.record({
            actor,
            action: "api_key.created",
            targetKind: "api_key",
            targetId: row.id,
            workspaceId,
            profileId,
            details: {
              prefix: row.prefix,
              scopes: row.scopes,
              rate_limit_per_minute: row.rate_limit_per_minute,
              ...(withheld.length > 0 ? { withheld_scopes: withheld } : {})
            }
          })
          return { key: render(row), plaintext: minted.key, withheld } satisfies NewKey
        }))
      })

      const update = Effect.fn("ApiKeysService.update")(function*(
        actor: PrincipalShape,
        rawWorkspaceId: string,
        rawKeyId: string,
        patch: UpdateApiKey
      ) {
        const workspaceId = yield* authorize(actor, rawWorkspaceId, "manage")
        const keyId = yield* keyIdOf(rawKeyId)
        const requested = patch.scopes === undefined ? undefined : yield* parseScopes("body.scopes", patch.scopes)
        return yield* repo.transaction(Effect.gen(function*() {
          const found = yield* repo.findForUpdate(workspaceId, keyId)
          if (Option.isNone(found)) return yield* notFound()
          const row = found.value
          if (row.status !== "active") {
            return yield* new InvalidState({ message: `The key is ${row.status}; only an active key can be edited.`, reason: `key_${row.status}` })
          }
          let withheld: ReadonlyArray<Scope> = []
          let scopes: ReadonlyArray<Scope> | undefined = undefined
          if (requested !== undefined) {
            const profile = yield* repo.lockProfile(workspaceId, row.profile_id)
            if (Option.isNone(profile)) return yield* notFound()
            const healthcare = isHealthcareFamily(profile.value)
            const narrowed = yield* withhold("body.scopes", requested, healthcare)
            if (row.grant_id !== null) yield* checkGrant(yield* repo.liveGrant(row.grant_id), healthcare, narrowed.held)
            scopes = narrowed.held
            withheld = narrowed.withheld
          }
          const changes: KeyChanges = {
            ...(patch.name === undefined ? {} : { name: patch.name }),
            ...(scopes === undefined ? {} : { scopes }),
            ...(patch.rate_limit_per_minute === undefined ? {} : { rateLimitPerMinute: patch.rate_limit_per_minute })
          }
          const fields = Object.keys(patch)
          // Nothing asked: nothing written, nothing audited.
          if (fields.length === 0) return { key: render(row), withheld } satisfies EditedKey
          yield* repo.update(keyId, changes)
          const updated = yield* reread(workspaceId, keyId)
          yield* audit.record({
            actor,
            action: "api_key.updated",
            targetKind: "api_key",
            targetId: keyId,
            workspaceId,
            profileId: row.profile_id,
            details: {
              fields,
              ...(scopes === undefined ? {} : { scopes_before: row.scopes, scopes: updated.scopes }),
              ...(patch.rate_limit_per_minute === undefined
                ? {}
                : { rate_limit_per_minute_before: row.rate_limit_per_minute, rate_limit_per_minute: updated.rate_limit_per_minute }),
              ...(withheld.length > 0 ? { withheld_scopes: withheld } : {})
            }
          })
          return { key: render(updated), withheld } satisfies EditedKey
        }))
      })

      const revoke = Effect.fn("ApiKeysService.revoke")(function*(
        actor: PrincipalShape,
        rawWorkspaceId: string,
        rawKeyId: string,
        via: "delete" | "revoke"
      ) {
        const workspaceId = yield* authorize(actor, rawWorkspaceId, "manage")
        const keyId = yield* keyIdOf(rawKeyId)
        const revoked = yield* repo.transaction(Effect.gen(function*() {
          const found = yield* repo.findForUpdate(workspaceId, keyId)
          if (Option.isNone(found)) return yield* notFound()
          // Already revoked: the same answer, nothing written, nothing audited.
          if (found.value.status === "revoked" || (yield* repo.revokeKeys({ kind: "key", keyId, workspaceId })).length === 0) return render(found.value)
          const row = yield* reread(workspaceId, keyId)
          yield* audit.record({
            actor,
            action: "api_key.revoked",
            targetKind: "api_key",
            targetId: keyId,
            workspaceId,
            profileId: row.profile_id,
            details: { via, prefix: row.prefix, was: found.value.status }
          })
          return render(row)
        }))
        yield* credentials.forget
        return revoked
      })

      const rotate = Effect.fn("ApiKeysService.rotate")(function*(
        actor: PrincipalShape,
        rawWorkspaceId: string,
        rawKeyId: string
      ) {
        const workspaceId = yield* authorize(actor, rawWorkspaceId, "manage")
        const keyId = yield* keyIdOf(rawKeyId)
        return yield* repo.transaction(Effect.gen(function*() {
          const found = yield* repo.findForUpdate(workspaceId, keyId)
          if (Option.isNone(found)) return yield* notFound()
          const old = found.value
          if (old.status !== "active") {
            return yield* new InvalidState({ message: `The key is ${old.status}; only an active key can be rotated.`, reason: `key_${old.status}` })
          }
          // The row lock above serialises concurrent rotations: the second one sees the first's successor.
          if (yield* repo.hasSuccessor(keyId)) {
            return yield* new InvalidState({
              message: "This key was already rotated; rotate its successor instead.",
              reason: "already_rotated"
            })
          }
          const profile = yield* repo.lockProfile(workspaceId, old.profile_id)
          if (Option.isNone(profile)) return yield* notFound()
          const healthcare = isHealthcareFamily(profile.value)
          const carried = old.scopes.filter(isScope)
          let held = withholdPersonScopes(carried, healthcare)
          if (old.grant_id !== null) {
            const grant = yield* repo.liveGrant(old.grant_id)
            if (Option.isNone(grant)) {
              return yield* new InvalidState({
                message: "The app grant this key was minted under is revoked; the app mints a new key instead.",
                reason: "grant_revoked"
              })
            }
            const mintable = mintableScopes(grant.value.connect_scopes.filter(isConnectScope), healthcare)
            held = held.filter((scope) => mintable.includes(scope))
          }
          const withheld = carried.filter((scope) => !held.includes(scope))
          if (held.length === 0) {
            return yield* new InvalidState({
              message: `None of this key's scopes may be held on this profile any more (${withheld.join(", ")}); create a new key.`,
              reason: "no_scope_left"
            })
          }
          const minted = yield* repo.mint({
            profileId: old.profile_id,
            workspaceId,
            scopes: held,
            name: old.name,
            rateLimitPerMinute: old.rate_limit_per_minute,
            oauthAppId: old.oauth_app_id,
            grantId: old.grant_id,
            createdByUserId: userIdOf(actor),
            rotatedFromId: old.id
          })
          yield* repo.expireIn(old.id, ROTATION_GRACE_HOURS)
          const previous = yield* reread(workspaceId, old.id)
          const successor = yield* reread(workspaceId, minted.id)
          yield* audit.record({
            actor,
            action: "api_key.rotated",
            targetKind: "api_key",
            targetId: successor.id,
            workspaceId,
            profileId: old.profile_id,
            details: {
              rotated_from_id: old.id,
              prefix: successor.prefix,
              previous_prefix: old.prefix,
              previous_expires_at: previous.expires_at,
              scopes: successor.scopes,
              ...(withheld.length > 0 ? { withheld_scopes: withheld } : {})
            }
          })
          return { key: render(successor), plaintext: minted.key, withheld, previous: render(previous) } satisfies RotatedKey
        }))
      })

      const revokeOlderAppKeys = Effect.fn("ApiKeysService.revokeOlderAppKeys")(function*(
        appId: string,
        profileId: string,
        keyId: string
      ) {
        return (yield* repo.revokeKeys({ kind: "app_older_on_profile", appId, profileId, keyId })).length
      })

      return { list, create, update, revoke, rotate, revokeOlderAppKeys }
    })
  ).pipe(Layer.provide([ApiKeysRepo.layer, AuditLog.layer]))
}
