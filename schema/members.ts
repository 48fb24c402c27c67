/**
 * Workspace members contract (`/api/v1/workspaces/{workspaceId}/members`, OAuth-app client
 * credential): who belongs to a workspace the app provisioned, with which workspace role, and
 * which profiles a person reaches with which profile role and permissions.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Page } from "./common.ts"
import { type Scope, Scopes } from "./scopes.ts"

/**
 * The permission catalogue, in display order. A profile membership without `permissions`
 * holds its role's default bundle; with `permissions` it holds exactly that list.
 *
 * | key | grants |
 * |---|---|
 * | `view:dashboard` | the profile's dashboard and report pages |
 * | `view:attribution` | attribution results and credit-model comparisons |
 * | `view:campaigns` | campaign, ad set and spend reads |
 * | `view:customers` | customer and visitor records (person data) |
 * | `manage:connections` | connect, finalize and disconnect providers |
 * | `manage:team` | invite and remove people on the profile |
 * | `manage:exports` | conversion exports and scheduled reports |
 */
export const PERMISSION_KEYS = [
  "view:dashboard",
  "view:attribution",
  "view:campaigns",
  "view:customers",
  "manage:connections",
  "manage:team",
  "manage:exports"
] as const
export type PermissionKey = (typeof PERMISSION_KEYS)[number]

const permissionKeys: ReadonlySet<string> = new Set(PERMISSION_KEYS)
export const isPermissionKey = (key: string): key is PermissionKey => permissionKeys.has(key)

/** `owner` is set by provisioning only; a partner assigns one of the other three. */
export const WorkspaceRole = Schema.Literals(["owner", "admin", "analyst", "guest"])
export type WorkspaceRole = typeof WorkspaceRole.Type
export const AssignableWorkspaceRole = Schema.Literals(["admin", "analyst", "guest"])
export type AssignableWorkspaceRole = typeof AssignableWorkspaceRole.Type

export const ProfileRole = Schema.Literals(["viewer", "manager"])
export type ProfileRole = typeof ProfileRole.Type

/**
 * Each profile role's default bundle. A viewer reads the aggregate pages; a manager also
 * reads person data and runs connections and exports. `manage:team` is in no bundle: it is
 * only ever granted by name.
 */
export const ROLE_DEFAULT_PERMISSIONS: Readonly<Record<ProfileRole, ReadonlyArray<PermissionKey>>> = {
  viewer: ["view:dashboard", "view:attribution", "view:campaigns"],
  manager: ["view:dashboard", "view:attribution", "view:campaigns", "view:customers", "manage:connections", "manage:exports"]
}

/** A list of keys, deduplicated, in catalogue order: how explicit permissions are stored and compared. */
export const normalizePermissions = (keys: ReadonlyArray<PermissionKey>): ReadonlyArray<PermissionKey> =>
  PERMISSION_KEYS.filter((key) => keys.includes(key))

/** One permission key; an unknown one fails with a message that names it. */
export const PermissionKeySchema = Schema.String.check(
  Schema.makeFilter(
    (key: string) =>
      isPermissionKey(key)
        ? undefined
        : `Unknown permission key ${JSON.stringify(key.slice(0, 64))}; known keys: ${PERMISSION_KEYS.join(", ")}`,
    { expected: "a permission key", toJsonSchema: () => ({ enum: [...PERMISSION_KEYS] }) },
    true
  )
).pipe(Schema.refine(isPermissionKey))

const Email = Schema.String.check(
  Schema.isMaxLength(320),
  Schema.isPattern(/^[^\s@]+@[^\s@]+\.[^\s@]+$/, { message: "Expected an email address" })
)

export const MemberProfileInput = Schema.Struct({
  profile_id: Schema.String,
  profile_role: ProfileRole,
  /** Absent: the role's default bundle. Present: exactly these keys (may be empty). */
  permissions: Schema.optionalKey(Schema.Array(PermissionKeySchema).check(Schema.isMaxLength(PERMISSION_KEYS.length * 4)))
})
export type MemberProfileInput = typeof MemberProfileInput.Type

export const PutMember = Schema.Struct({
  email: Email,
  workspace_role: AssignableWorkspaceRole,
  /** Present: the person's whole profile access in this workspace (unlisted profiles are removed). Absent: unchanged. */
  profiles: Schema.optionalKey(Schema.Array(MemberProfileInput).check(Schema.isMaxLength(500)))
})
export type PutMember = typeof PutMember.Type

export const MemberProfile = Schema.Struct({
  profile_id: Schema.String,
  profile_role: ProfileRole,
  /** The effective list: the stored one, or the role's default bundle. */
  permissions: Schema.Array(Schema.String),
  /** `role_default` when no list was given (the bundle follows the role), `explicit` otherwise. */
  permissions_source: Schema.Literals(["role_default", "explicit"])
}).annotate({ identifier: "MemberProfile" })
export type MemberProfile = typeof MemberProfile.Type

export const Member = Schema.Struct({
  user_id: Schema.String,
  email: Schema.String,
  workspace_role: WorkspaceRole,
  /** Live profile memberships on live profiles of the workspace. */
  profiles: Schema.Array(MemberProfile),
  /** When this membership (last) became active. */
  created_at: Schema.String
}).annotate({ identifier: "Member" })
export type Member = typeof Member.Type

export const MemberPage = Page(Member)

export interface ReconciledMember {
  readonly member: Member
  /** The membership did not exist, or had been removed: 201. */
  readonly created: boolean
  /** Anything was written. */
  readonly changed: boolean
}

/** 201 on the first reconcile (`created: true`), 200 afterwards: the flag picks the status. */
export const MemberCreated = Schema.Struct({
  data: Schema.Struct({ ...Member.fields, created: Schema.Literal(true), changed: Schema.Boolean })
}).pipe(HttpApiSchema.status(201))
export const MemberReconciled = Schema.Struct({
  data: Schema.Struct({ ...Member.fields, created: Schema.Literal(false), changed: Schema.Boolean })
})

export const RemovedMember = Schema.Struct({
  data: Schema.Struct({ removed: Schema.Boolean })
})

/** What a person's membership on one profile allows, before any credential narrows it. */
export interface ProfileMembership {
  readonly workspaceRole: WorkspaceRole
  /** Null when the person has no live profile membership (owners, admins and analysts reach every profile). */
  readonly profileRole: ProfileRole | null
  /** Null: the role's default bundle. */
  readonly permissions: ReadonlyArray<string> | null
}

const READ_ALL: ReadonlyArray<Scope> = [
  "analytics:read",
  "campaigns:read",
  "conversions:read",
  "realtime:read",
  "customers:read",
  "visitors:read",
  "exports:read",
  "commerce:read",
  "connections:read",
  "conversations:read"
]

/** What each permission key lets a guest's credential do on the profile (decision 0026). */
const scopesOfPermission: Readonly<Record<PermissionKey, ReadonlyArray<Scope>>> = {
  "view:dashboard": ["analytics:read", "realtime:read", "connections:read"],
  "view:attribution": ["conversions:read"],
  "view:campaigns": ["campaigns:read"],
  "view:customers": ["customers:read", "visitors:read", "conversations:read"],
  "manage:connections": ["connections:read", "connections:write"],
  "manage:team": [],
  "manage:exports": ["exports:read", "exports:write"]
}

/** A profile manager also runs the profile's configuration writes, whatever its permission list. */
const MANAGER_WRITES: ReadonlyArray<Scope> = ["goals:write", "attribution:write", "tracking:write", "reports:write", "campaigns:apply"]

/**
 * The API scopes a membership allows on a profile: everything for owners and admins, every
 * read for analysts, and for guests what their profile role and permission keys name. A user
 * token holds the intersection of this and its MCP grant.
 */
export const scopesOfMembership = (membership: ProfileMembership): ReadonlyArray<Scope> => {
  switch (membership.workspaceRole) {
    case "owner":
    case "admin":
      return Scopes
    case "analyst":
      return READ_ALL
    case "guest": {
      if (membership.profileRole === null) return []
      const keys = (membership.permissions ?? ROLE_DEFAULT_PERMISSIONS[membership.profileRole]).filter(isPermissionKey)
      const granted = keys.flatMap((key) => scopesOfPermission[key])
      return [...new Set(membership.profileRole === "manager" ? [...granted, ...MANAGER_WRITES] : granted)]
    }
  }
}
