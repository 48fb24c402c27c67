/** Access policies and errors shared by the analytics routes (api.ts, insights-api.ts, campaigns-api.ts). */
import { InvalidDateRange, InvalidParameter, profileErrors } from "../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../http/policy.ts"

/** What every analytics read may answer besides its data. */
export const analyticsErrors = [...profileErrors, InvalidParameter.wire, InvalidDateRange.wire] as const

/** A profile-grain read under one scope, for keys, user tokens and console sessions. */
export const profileRead = (scope: "analytics:read" | "campaigns:read" | "realtime:read") =>
  policy({ scopes: [scope], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none" })

/**
 * The description of every read served from the rollups (decision 0051): a newcomer who sends an
 * event and reads zeros should learn from the reference, not from support, that this is lag.
 */
export const ROLLUP_FRESHNESS =
  "Served from daily rollups, which trail writes by a few seconds: a day is recomputed once its oldest change is 3 s old, " +
  "polled every second, so about 4 s after an event under light load. `meta.as_of` (ISO 8601 UTC) is the instant up to which " +
  "the rollups are complete: every write answered before it is counted; later writes may not be yet. It is the time of the " +
  "oldest change to the profile not yet rolled up, or the time of the read when none is pending; read again after a few " +
  "seconds when it is older than your last write."
