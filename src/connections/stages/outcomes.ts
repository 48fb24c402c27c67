/**
 * The profile's outcome keys and conversion definitions, which decide a stage's mapping. The
 * definitions are attribution's (above connections): a port it implements, provided by src/main/.
 */
import { Context, type Effect } from "effect"
import type { OutcomeDefinitions } from "../../../schema/attribution.ts"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { ProfileContext } from "../../kernel/principal.ts"

export class StageOutcomes extends Context.Service<StageOutcomes, {
  /** As `GET .../outcome-definitions` answers them (none while the profile lacks attribution). */
  readonly outcomeDefinitions: (profile: ProfileContext) => Effect.Effect<OutcomeDefinitions, DatabaseUnavailable>
}>()("svc/StageOutcomes") {}
