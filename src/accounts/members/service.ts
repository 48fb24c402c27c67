/**
 * Workspace members, managed by the OAuth app that provisioned the workspace: the Workspace
 * membership table of the specification. One transaction per change with the workspace row
 * locked, so changes of one workspace's team happen one at a time.
 */
import { Context, Effect, Layer, Option } from "effect"
import { isUuid } from "../../../schema/common.ts"
import { type DatabaseUnavailable, type InvalidParameter, InvalidState, NotFound, ValidationError } from "../../../schema/errors.ts"
import {
  isPermissionKey,
  type Member,
  type MemberProfile,
  normalizePermissions,
  type PermissionKey,
  type ProfileRole,
  type PutMember,
  type ReconciledMember,
  ROLE_DEFAULT_PERMISSIONS
} from "../../../schema/members.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import { CredentialStore } from "../../kernel/principal.ts"
import type { AppPrincipal } from "../../kernel/principal.ts"
import { DEFAULT_PAGE_SIZE, keysetCursor, toPage } from "../../platform/pagination.ts"
import { WorkspacesRepo } from "../workspaces/repo.ts"
import { PeopleRepo } from "../people/repo.ts"
import { type MemberRow, MembersRepo, type ProfileMembershipRow } from "./repo.ts"

/** Unknown, another app's, archived and malformed workspaces: one identical answer. */
const noSuchWorkspace = () => new NotFound({ message: "No such workspace." })

const ownerIsFixed = () =>
  new InvalidState({
    message: "The workspace owner is set by provisioning; the owner's membership cannot be changed or removed.",
    reason: "workspace_owner"
  })

/** A profile membership as the service compares it: explicit permissions normalized, null for the role's bundle. */
interface Access {
  readonly role: ProfileRole
  readonly permissions: ReadonlyArray<PermissionKey> | null
}

const sameAccess = (a: Access, b: Access) =>
  a.role === b.role &&
  (a.permissions === null || b.permissions === null
    ? a.permissions === b.permissions
    : a.permissions.length === b.permissions.length && a.permissions.every((key, i) => b.permissions?.[i] === key))

const storedAccess = (row: ProfileMembershipRow): Access => ({
  role: row.role,
  permissions: row.permissions === null ? null : normalizePermissions(row.permissions.filter(isPermissionKey))
})

const renderProfile = (row: ProfileMembershipRow): MemberProfile => ({
  profile_id: row.profile_id,
  profile_role: row.role,
  permissions: row.permissions ?? ROLE_DEFAULT_PERMISSIONS[row.role],
  permissions_source: row.permissions === null ? "role_default" : "explicit"
})

const renderMember = (row: MemberRow, profiles: ReadonlyArray<ProfileMembershipRow>): Member => ({
  user_id: row.id,
  email: row.email,
  workspace_role: row.role,
  profiles: profiles.filter((profile) => profile.user_id === row.id).map(renderProfile),
  created_at: row.created_at
})

export interface MemberPage {
  readonly data: ReadonlyArray<Member>
  readonly pagination: { readonly has_next: boolean; readonly cursor: string | null }
}

export class Members extends Context.Service<Members, {
  /** members PUT: none or removed → active (created), active → active; the owner is 409. */
  readonly reconcile: (
    app: AppPrincipal,
    workspaceId: string,
    input: PutMember
  ) => Effect.Effect<ReconciledMember, NotFound | ValidationError | InvalidState | DatabaseUnavailable>
  /** members DELETE: active → removed (true); removed or never a member → unchanged (false); the owner is 409. */
  readonly remove: (
    app: AppPrincipal,
    workspaceId: string,
    userId: string
  ) => Effect.Effect<boolean, NotFound | InvalidState | DatabaseUnavailable>
  /** The team: active members with their profile access, keyset-paginated. */
  readonly list: (
    app: AppPrincipal,
    workspaceId: string,
    options: { readonly limit?: number; readonly cursor?: string }
  ) => Effect.Effect<MemberPage, NotFound | InvalidParameter | DatabaseUnavailable>
}>()("svc/Members") {
  static readonly layer = Layer.effect(Members)(
    Effect.gen(function*() {
      const repo = yield* MembersRepo
      const workspaces = yield* WorkspacesRepo
      const people = yield* PeopleRepo
      const audit = yield* AuditLog
      const credentials = yield* CredentialStore

      /** The workspace id, lower-cased, when the app manages it; the one 404 otherwise. */
      const managed = (app: AppPrincipal, workspaceId: string, lock: boolean) =>
        Effect.gen(function*() {
          if (!isUuid(workspaceId)) return yield* noSuchWorkspace()
          const id = workspaceId.toLowerCase()
          if (!(yield* repo.managedWorkspace(app.appId, id, lock))) return yield* noSuchWorkspace()
          return id
        })

      const inTransaction = repo.transaction

      /** A committed membership change: this runner's cached memberships go at once (others within 5 s). */
      const changingAccess = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.tap(inTransaction(effect), () => credentials.forget)

      /** The requested profile access, keyed by profile id; every id must be a live profile of the workspace, once. */
      const requestedAccess = Effect.fn("Members.requestedAccess")(function*(workspaceId: string, input: PutMember) {
        if (input.profiles === undefined) return Option.none<ReadonlyMap<string, Access>>()
        const live = new Set(yield* repo.liveProfileIds(workspaceId))
        const access = new Map<string, Access>()
        for (const [index, entry] of input.profiles.entries()) {
          const profileId = entry.profile_id.toLowerCase()
          if (!isUuid(profileId) || !live.has(profileId)) {
            return yield* new ValidationError({
              message: `body.profiles.${index}.profile_id: not a live profile of this workspace`
            })
          }
          if (access.has(profileId)) {
            return yield* new ValidationError({ message: `body.profiles.${index}.profile_id: listed more than once` })
          }
          access.set(profileId, {
            role: entry.profile_role,
            permissions: entry.permissions === undefined ? null : normalizePermissions(entry.permissions)
          })
        }
        return Option.some<ReadonlyMap<string, Access>>(access)
      })

      const render = Effect.fn("Members.render")(function*(workspaceId: string, userId: string) {
        const row = yield* repo.findMember(workspaceId, userId)
        if (Option.isNone(row)) return yield* Effect.die("member vanished inside its transaction")
        return renderMember(row.value, yield* repo.profileMemberships(workspaceId, [userId]))
      })

      const reconcile = Effect.fn("Members.reconcile")(function*(app: AppPrincipal, workspaceId: string, input: PutMember) {
        return yield* changingAccess(Effect.gen(function*() {
          const workspace = yield* managed(app, workspaceId, true)
          const requested = yield* requestedAccess(workspace, input)
          const existingUser = yield* repo.findUserByEmail(input.email)
          const membership = Option.isSome(existingUser)
            ? yield* repo.findMembership(workspace, existingUser.value.id)
            : Option.none()
          if (Option.isSome(membership) && membership.value.role === "owner") return yield* ownerIsFixed()

          const user = Option.isSome(existingUser) ? existingUser.value : yield* people.ensure(input.email)
          const active = Option.isSome(membership) && !membership.value.removed
          const created = !active
          let changed = created
          if (created || (Option.isSome(membership) && membership.value.role !== input.workspace_role)) {
            yield* workspaces.activateMembership(workspace, user.id, input.workspace_role, Option.isSome(membership))
            changed = true
          }

          const profileChanges: Array<Record<string, unknown>> = []
          if (Option.isSome(requested)) {
            const current = new Map(
              (yield* repo.profileMemberships(workspace, [user.id])).map((row) => [row.profile_id, storedAccess(row)] as const)
            )
            for (const [profileId, access] of requested.value) {
              const before = current.get(profileId)
              if (before !== undefined && sameAccess(before, access)) continue
              yield* repo.upsertProfileMembership(profileId, user.id, access.role, access.permissions)
              profileChanges.push({ profile_id: profileId, profile_role: access.role, permissions: access.permissions })
            }
            const removed = [...current.keys()].filter((profileId) => !requested.value.has(profileId))
            if (removed.length > 0) {
              yield* repo.removeProfileMembershipsExcept(workspace, user.id, [...requested.value.keys()])
              for (const profileId of removed) profileChanges.push({ profile_id: profileId, removed: true })
            }
            if (profileChanges.length > 0) changed = true
          }

          if (changed) {
            yield* audit.record({
              actor: app,
              action: created ? "member.added" : "member.updated",
              targetKind: "user",
              targetId: user.id,
              workspaceId: workspace,
              details: {
                workspace_role: input.workspace_role,
                ...(Option.isSome(membership) && membership.value.role !== input.workspace_role && !created
                  ? { previous_role: membership.value.role }
                  : {}),
                ...(Option.isSome(existingUser) ? {} : { user_created: true }),
                ...(Option.isSome(requested) ? { profiles: profileChanges } : {})
              }
            })
          }
          return { member: yield* render(workspace, user.id), created, changed } satisfies ReconciledMember
        }))
      })

      const remove = Effect.fn("Members.remove")(function*(app: AppPrincipal, workspaceId: string, userId: string) {
        return yield* changingAccess(Effect.gen(function*() {
          const workspace = yield* managed(app, workspaceId, true)
          // A malformed id names nobody: never a member.
          if (!isUuid(userId)) return false
          const user = userId.toLowerCase()
          const membership = yield* repo.findMembership(workspace, user)
          if (Option.isNone(membership) || membership.value.removed) return false
          if (membership.value.role === "owner") return yield* ownerIsFixed()
          // The workspace membership and every live profile membership of the person in it.
          yield* workspaces.endMembership(workspace, user)
          const profiles = yield* repo.removeProfileMembershipsExcept(workspace, user, [])
          yield* audit.record({
            actor: app,
            action: "member.removed",
            targetKind: "user",
            targetId: user,
            workspaceId: workspace,
            details: { workspace_role: membership.value.role, profile_memberships_removed: profiles }
          })
          return true
        }))
      })

      const list = Effect.fn("Members.list")(function*(
        app: AppPrincipal,
        workspaceId: string,
        options: { readonly limit?: number; readonly cursor?: string }
      ) {
        const workspace = yield* managed(app, workspaceId, false)
        const limit = options.limit ?? DEFAULT_PAGE_SIZE
        const rows = yield* repo.listMembers(workspace, { limit, after: yield* keysetCursor(options.cursor) })
        const page = rows.slice(0, limit)
        const profiles = yield* repo.profileMemberships(workspace, page.map((row) => row.id))
        return toPage(rows, limit, (row) => renderMember(row, profiles))
      })

      return { reconcile, remove, list }
    })
  ).pipe(Layer.provide([MembersRepo.layer, WorkspacesRepo.layer, PeopleRepo.layer, AuditLog.layer]))
}
