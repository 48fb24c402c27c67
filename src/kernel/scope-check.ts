/**
 * The scope check of every adapter (HTTP middleware, RPC middleware): what a principal holds
 * against what an operation requires, and the 403 `insufficient_scope` that says what is missing.
 */
import { InsufficientScope } from "../../schema/errors.ts"
import { type PrincipalShape, scopesOf } from "./principal.ts"

/** What an operation requires: every scope (`all`, the default) or one of them (`any`). */
export interface ScopeRequirement {
  readonly scopes: ReadonlyArray<string>
  readonly scopeMode?: "all" | "any"
  /** The body field naming the one scope of `scopes` needed (see `checkNamedScope`). */
  readonly scopeFrom?: string
}

/**
 * What a user token lacks, and why: its MCP grant, the person's membership on the profile, or
 * both (the two halves of its effective scopes).
 */
export interface UserTokenHalves {
  readonly grant: ReadonlyArray<string>
  readonly membership: ReadonlyArray<string>
  readonly workspaceRole: string
}

const describeMissing = (missing: ReadonlyArray<string>, halves: UserTokenHalves) => {
  const grantLacks = missing.filter((scope) => !halves.grant.includes(scope))
  const membershipLacks = missing.filter((scope) => !halves.membership.includes(scope))
  return [
    grantLacks.length > 0 ? `the token's MCP grant does not include ${grantLacks.join(", ")}` : "the token's MCP grant allows it",
    membershipLacks.length > 0
      ? `the person's membership (${halves.workspaceRole}) does not allow ${membershipLacks.join(", ")}`
      : "the person's membership allows it"
  ].join("; ")
}

export const checkScopes = (
  principal: PrincipalShape,
  policy: ScopeRequirement,
  halves?: UserTokenHalves
): InsufficientScope | undefined => {
  const held = scopesOf(principal)
  return held === undefined ? undefined : checkHeldScopes(principal.kind, held, policy, halves)
}

/** The same check on scopes held by a credential of `kind` (e.g. an RPC credential on a call naming no profile). */
export const checkHeldScopes = (
  kind: PrincipalShape["kind"],
  held: ReadonlyArray<string>,
  policy: ScopeRequirement,
  halves?: UserTokenHalves
): InsufficientScope | undefined => {
  if (policy.scopes.length === 0) return undefined
  // The common answer (allowed) without building the list of what is missing.
  if (policy.scopeMode === "any" ? policy.scopes.some((scope) => held.includes(scope)) : policy.scopes.every((scope) => held.includes(scope))) {
    return undefined
  }
  const missing = policy.scopes.filter((scope) => !held.includes(scope))
  const satisfied = policy.scopeMode === "any" ? missing.length < policy.scopes.length : missing.length === 0
  if (satisfied) return undefined
  const needed = policy.scopeMode === "any" ? policy.scopes.join(" or ") : missing.join(", ")
  const message = kind === "user_token"
    ? halves === undefined
      ? `This token lacks ${needed}: the token's grant and the person's membership must both allow it.`
      : `This token lacks ${needed}: ${describeMissing(missing, halves)}.`
    : kind === "session"
    ? `Your membership on this profile does not allow ${needed}.`
    : `This credential lacks the scope ${needed}.`
  return new InsufficientScope({ message, reason: `missing_scope:${missing.join(",")}` })
}

/**
 * The second half of a `scopeFrom` requirement: the scope the body named (one of the operation's
 * `scopes`, which the middleware checked as `any`) must be held itself.
 */
export const checkNamedScope = (
  principal: PrincipalShape,
  policy: ScopeRequirement,
  named: string
): InsufficientScope | undefined => checkScopes(principal, { scopes: policy.scopes.includes(named) ? [named] : policy.scopes })
