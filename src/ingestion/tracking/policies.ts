/** Access policies of the tracking routes (src/ingestion/tracking/tracker/api.ts and setup-api.ts). */
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"


/** Tracking writes: keys, custom domains, verification attempts. No entitlement gate (decision 0034). */
export const trackingWrite = policy({ scopes: ["tracking:write"], auth: PROFILE_PRINCIPALS, idempotency: "optional", grain: "profile" })

/** Tracking reads: whoever manages tracking or reads analytics. */
export const trackingRead = policy({
  scopes: ["tracking:write", "analytics:read"],
  scopeMode: "any",
  auth: PROFILE_PRINCIPALS,
  idempotency: "none",
  grain: "profile"
})

/** Reads for whoever manages tracking only: the settings and the raw event feed (a debugging view). */
export const trackingManagerRead = policy({ scopes: ["tracking:write"], auth: PROFILE_PRINCIPALS, idempotency: "none", grain: "profile" })

/** A settings change queues an attribution replay: a write of the attribution tier. */
export const settingsWrite = policy({
  scopes: ["tracking:write"],
  auth: PROFILE_PRINCIPALS,
  idempotency: "optional",
  grain: "profile",
  entitlement: "svc_attribution"
})
