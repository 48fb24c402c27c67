/**
 * The operator surface: registers OAuth apps (partner credentials) and commerce apps, and sets
 * a workspace's healthcare-agency flag (S5.3).
 */
import { Context, Effect, Layer, Option } from "effect"
import type {
  CommerceApp,
  CreateCommerceApp,
  CreateOAuthApp,
  OAuthApp,
  UpdateOAuthApp,
  WorkspaceFlags
} from "../../../schema/admin.ts"
import { isUuid, originOf } from "../../../schema/common.ts"
import { type DatabaseUnavailable, type InvalidParameter, InvalidState, NotFound, ValidationError } from "../../../schema/errors.ts"
import { PERSON_SCOPES } from "../../../schema/scopes.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import { ApiKeysRepo } from "../api-keys/repo.ts"
import { CredentialPrefix, mintClientId, mintSecret, mintSigningSecret, secretDigest } from "../../kernel/credentials/tokens.ts"
import { CredentialStore, type PrincipalShape } from "../../kernel/principal.ts"
import { DEFAULT_PAGE_SIZE, keysetCursor, toPage } from "../../platform/pagination.ts"
import { SecretBox } from "../../platform/secret-box.ts"
import { WorkspacesRepo } from "../workspaces/repo.ts"
import { AdminRepo, type CommerceAppRow, type OAuthAppRow } from "./repo.ts"

const noSuchApp = () => new NotFound({ message: "No such OAuth app." })

/** Origins a hand-off may return to: those of the redirect URIs plus the extra allowed ones. */
export const effectiveReturnOrigins = (row: Pick<OAuthAppRow, "redirect_uris" | "allowed_return_origins">) =>
  [...new Set([...row.redirect_uris.map(originOf), ...row.allowed_return_origins.map((origin) => originOf(origin))])]

export const renderApp = (row: OAuthAppRow): OAuthApp => ({
  ...row,
  effective_return_origins: effectiveReturnOrigins(row)
})

const renderCommerceApp = (row: CommerceAppRow): CommerceApp => row

type Admin<A, E = never> = Effect.Effect<A, E | DatabaseUnavailable>

export class AdminService extends Context.Service<AdminService, {
  readonly createApp: (
    actor: PrincipalShape,
    input: CreateOAuthApp
  ) => Admin<OAuthApp & { readonly client_secret: string; readonly jwt_secret: string }, ValidationError>
  readonly listApps: (options: { readonly limit?: number; readonly cursor?: string }) => Admin<{
    readonly data: ReadonlyArray<OAuthApp>
    readonly pagination: { readonly has_next: boolean; readonly cursor: string | null }
  }, InvalidParameter>
  readonly getApp: (id: string) => Admin<OAuthApp, NotFound>
  readonly updateApp: (actor: PrincipalShape, id: string, patch: UpdateOAuthApp) => Admin<OAuthApp, NotFound | ValidationError>
  readonly deleteApp: (actor: PrincipalShape, id: string) => Admin<{ readonly revokedKeys: number }, NotFound>
  readonly rotateClientSecret: (actor: PrincipalShape, id: string) => Admin<{ readonly clientId: string; readonly clientSecret: string }, NotFound>
  readonly rotateJwtSecret: (actor: PrincipalShape, id: string) => Admin<string, NotFound>
  readonly createCommerceApp: (actor: PrincipalShape, input: CreateCommerceApp) => Admin<CommerceApp, InvalidState>
  readonly listCommerceApps: Admin<ReadonlyArray<CommerceApp>>
  /**
   * S5.3: turning the flag on makes every profile of the workspace healthcare-family, so the
   * live delegated keys carrying customers:read or visitors:read are revoked in the same
   * transaction (workspace row locked); turning it off revokes nothing. Unknown or archived: 404.
   */
  readonly setHealthcareAgency: (actor: PrincipalShape, workspaceId: string, flag: boolean) => Admin<WorkspaceFlags, NotFound>
}>()("svc/AdminService") {
  static readonly layer = Layer.effect(AdminService)(
    Effect.gen(function*() {
      const repo = yield* AdminRepo
      const keys = yield* ApiKeysRepo
      const workspaces = yield* WorkspacesRepo
      const audit = yield* AuditLog
      const box = yield* SecretBox
      const credentials = yield* CredentialStore

      const requireWorkspace = Effect.fn("AdminService.requireWorkspace")(function*(id: string | null | undefined) {
        if (id === null || id === undefined) return
        if (!(yield* repo.workspaceExists(id))) {
          return yield* new ValidationError({ message: "body.owner_workspace_id: no such workspace" })
        }
      })

      const orNotFound = <A>(option: Option.Option<A>) =>
        Option.match(option, { onNone: () => Effect.fail(noSuchApp()), onSome: Effect.succeed })

      /** A malformed id names no app: the same 404 as an unknown one. */
      const appId = (id: string) => isUuid(id) ? Effect.succeed(id) : Effect.fail(noSuchApp())

      const createApp = Effect.fn("AdminService.createApp")(function*(actor: PrincipalShape, input: CreateOAuthApp) {
        yield* requireWorkspace(input.owner_workspace_id)
        const clientSecret = mintSecret(CredentialPrefix.clientSecret)
        const jwtSecret = mintSigningSecret()
        const row = yield* repo.insertApp({
          id: crypto.randomUUID(),
          name: input.name,
          clientId: mintClientId(),
          clientSecretHash: secretDigest(clientSecret),
          jwtSecretEncrypted: box.seal(jwtSecret),
          redirectUris: input.redirect_uris,
          allowedReturnOrigins: (input.allowed_return_origins ?? []).map(originOf),
          profileResolution: input.profile_resolution ?? "email",
          rateTier: input.rate_tier ?? "standard",
          ownerWorkspaceId: input.owner_workspace_id ?? null
        })
        yield* audit.record({ actor, action: "oauth_app.created", targetKind: "oauth_app", targetId: row.id })
        return { ...renderApp(row), client_secret: clientSecret, jwt_secret: jwtSecret }
      })

      const listApps = Effect.fn("AdminService.listApps")(function*(options: { readonly limit?: number; readonly cursor?: string }) {
        const limit = options.limit ?? DEFAULT_PAGE_SIZE
        const rows = yield* repo.listApps({ limit, after: yield* keysetCursor(options.cursor) })
        return toPage(rows, limit, renderApp)
      })

      const getApp = Effect.fn("AdminService.getApp")(function*(id: string) {
        yield* appId(id)
        return renderApp(yield* orNotFound(yield* repo.findApp(id)))
      })

      const updateApp = Effect.fn("AdminService.updateApp")(function*(actor: PrincipalShape, id: string, patch: UpdateOAuthApp) {
        yield* appId(id)
        yield* requireWorkspace(patch.owner_workspace_id)
        const normalised: UpdateOAuthApp = patch.allowed_return_origins === undefined
          ? patch
          : { ...patch, allowed_return_origins: patch.allowed_return_origins.map(originOf) }
        const row = yield* orNotFound(yield* repo.updateApp(id, normalised))
        yield* audit.record({
          actor,
          action: "oauth_app.updated",
          targetKind: "oauth_app",
          targetId: id,
          details: { fields: Object.keys(patch) }
        })
        return renderApp(row)
      })

      const deleteApp = Effect.fn("AdminService.deleteApp")(function*(actor: PrincipalShape, id: string) {
        yield* appId(id)
        // The app, its grants and every key minted for it go in one transaction.
        const result = yield* orNotFound(yield* repo.transaction(Effect.gen(function*() {
          if (!(yield* repo.deleteApp(id))) return Option.none()
          yield* repo.revokeGrants({ appId: id })
          const revoked = yield* keys.revokeKeys({ kind: "app", appId: id })
          return Option.some({ revokedKeys: revoked.length })
        })))
        yield* audit.record({
          actor,
          action: "oauth_app.deleted",
          targetKind: "oauth_app",
          targetId: id,
          details: { revoked_keys: result.revokedKeys }
        })
        return result
      })

      const rotateClientSecret = Effect.fn("AdminService.rotateClientSecret")(function*(actor: PrincipalShape, id: string) {
        yield* appId(id)
        const clientSecret = mintSecret(CredentialPrefix.clientSecret)
        const row = yield* orNotFound(yield* repo.setClientSecret(id, secretDigest(clientSecret)))
        yield* audit.record({ actor, action: "oauth_app.client_secret_rotated", targetKind: "oauth_app", targetId: id })
        return { clientId: row.client_id, clientSecret }
      })

      const rotateJwtSecret = Effect.fn("AdminService.rotateJwtSecret")(function*(actor: PrincipalShape, id: string) {
        yield* appId(id)
        const jwtSecret = mintSigningSecret()
        yield* orNotFound(yield* repo.setJwtSecret(id, box.seal(jwtSecret)))
        yield* audit.record({ actor, action: "oauth_app.jwt_secret_rotated", targetKind: "oauth_app", targetId: id })
        return jwtSecret
      })

      const createCommerceApp = Effect.fn("AdminService.createCommerceApp")(function*(actor: PrincipalShape, input: CreateCommerceApp) {
        const created = yield* repo.insertCommerceApp({
          shop: input.shop,
          name: input.name,
          clientId: input.client_id,
          clientSecretEncrypted: box.seal(input.client_secret),
          scopes: input.scopes
        })
        if (Option.isNone(created)) {
          return yield* new InvalidState({
            message: `A commerce app is already registered for the store ${input.shop}; delete it first.`
          })
        }
        yield* audit.record({ actor, action: "commerce_app.created", targetKind: "commerce_app", targetId: created.value.id })
        return renderCommerceApp(created.value)
      })

      const setHealthcareAgency = Effect.fn("AdminService.setHealthcareAgency")(function*(
        actor: PrincipalShape,
        rawWorkspaceId: string,
        flag: boolean
      ) {
        const noSuchWorkspace = () => new NotFound({ message: "No such workspace." })
        if (!isUuid(rawWorkspaceId)) return yield* noSuchWorkspace()
        const workspaceId = rawWorkspaceId.toLowerCase()
        const result = yield* Effect.gen(function*() {
          const held = yield* repo.lockWorkspaceFlag(workspaceId)
          if (Option.isNone(held)) return yield* noSuchWorkspace()
          const changed = held.value !== flag
          if (changed) yield* workspaces.setHealthcareFlag(workspaceId, flag)
          // On: every profile of the workspace is healthcare-family; sweep even when the flag was
          // already on, so a key that slipped through is caught. Off: nothing is revoked.
          const revokedKeys = flag
            ? (yield* keys.revokeKeys({ kind: "delegated_in_workspace", workspaceId, scopes: PERSON_SCOPES })).length
            : 0
          if (changed || revokedKeys > 0) {
            yield* audit.record({
              actor,
              action: "workspace.healthcare_agency_changed",
              targetKind: "workspace",
              targetId: workspaceId,
              workspaceId,
              details: { from: held.value, to: flag, revoked_keys: revokedKeys }
            })
          }
          return { workspace_id: workspaceId, is_healthcare_agency: flag, changed, revoked_keys: revokedKeys }
        }).pipe(repo.transaction)
        // Committed: this runner stops the revoked keys at once (others within their cache's lifetime).
        if (result.revoked_keys > 0) yield* credentials.forget
        return result
      })

      return {
        setHealthcareAgency,
        createApp,
        listApps,
        getApp,
        updateApp,
        deleteApp,
        rotateClientSecret,
        rotateJwtSecret,
        createCommerceApp,
        listCommerceApps: Effect.map(repo.listCommerceApps, (rows) => rows.map(renderCommerceApp))
      }
    })
  ).pipe(Layer.provide([AdminRepo.layer, ApiKeysRepo.layer, WorkspacesRepo.layer, AuditLog.layer]))
}
