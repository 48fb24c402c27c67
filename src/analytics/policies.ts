/** Access policies and errors shared by the analytics routes (api.ts, insights-api.ts, campaigns-api.ts). */
import {
  DatabaseUnavailable,
  InsufficientScope,
  InvalidDateRange,
  InvalidParameter,
  InvalidRequest,
  NotFound,
  wire
} from "../../schema/errors.ts"
import { policy } from "../http/policy.ts"

/** What every analytics read may answer besides its data. */
export const analyticsErrors = [
  wire(NotFound),
  wire(InvalidRequest),
  wire(InsufficientScope),
  wire(DatabaseUnavailable),
  wire(InvalidParameter),
  wire(InvalidDateRange)
] as const

/** A profile-grain read under one scope, for keys, user tokens and console sessions. */
export const profileRead = (scope: "analytics:read" | "campaigns:read" | "realtime:read") =>
  policy({ scopes: [scope], auth: ["api_key", "user_token", "session"], grain: "profile", idempotency: "none" })
