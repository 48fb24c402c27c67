/**
 * What the console offers a person on a profile, from the scopes and roles GET /api/v1/me/profiles
 * answers (decision 0126). Hiding is a courtesy: the API refuses a call these rules would hide.
 */
import type { MyProfile } from "./client.ts"

export const holds = (profile: MyProfile, scope: string): boolean => profile.scopes.includes(scope)

/** API keys are the workspace's, managed (and listed) by its owners and admins only (decision 0019). */
export const managesKeys = (profile: MyProfile): boolean =>
  profile.workspace_role === "owner" || profile.workspace_role === "admin"

/** Webhook endpoints and their deliveries: read under `connections:read`, changed under `connections:write`. */
export const readsWebhooks = (profile: MyProfile): boolean => holds(profile, "connections:read")
export const writesWebhooks = (profile: MyProfile): boolean => holds(profile, "connections:write")

/** The profile's request log: read under `connections:read`, as the webhook delivery log (decision 0130). */
export const readsRequestLogs = (profile: MyProfile): boolean => holds(profile, "connections:read")

/** The Developers screen is offered when any of its sections is. */
export const seesDevelopers = (profile: MyProfile): boolean => managesKeys(profile) || readsWebhooks(profile) || readsRequestLogs(profile)

/** A journey is read under `conversions:read` (by customer key; email and phone need `customers:read` too). */
export const readsJourneys = (profile: MyProfile): boolean => holds(profile, "conversions:read")

/** The profile's connections are listed under `connections:read`. */
export const readsConnections = (profile: MyProfile): boolean => holds(profile, "connections:read")

/** Saved reports are listed, made and generated under `reports:write` (the spec names no read scope for them). */
export const usesReports = (profile: MyProfile): boolean => holds(profile, "reports:write")
