/**
 * A port (src/README.md, Layers): the measured incrementality of the profile's campaigns under a
 * credit model (`?calibrated=true` on the campaign and overview reads, decision 0124). Declared
 * here, implemented by the experiments context, wired in src/main/ports.ts. The reads add it
 * beside their modelled figures and never change those.
 */
import { Context, type Effect } from "effect"
import type { CalibrationFactor } from "../../schema/analytics.ts"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import type { ProfileContext } from "../kernel/principal.ts"

export class Calibrations extends Context.Service<Calibrations, {
  /** One factor per campaign that has one (the latest completed experiment on it, at most 365 days old). */
  readonly factors: (profile: ProfileContext, model: string) => Effect.Effect<ReadonlyArray<CalibrationFactor>, DatabaseUnavailable>
}>()("svc/Calibrations") {}
