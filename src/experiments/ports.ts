/**
 * A port (src/README.md, Layers): the customer list's upload, which exports owns on the same
 * layer. An audience_holdout's start re-uploads the list without its holdout, its stop with it
 * again; wired in src/main/ports.ts.
 */
import { Context, type Effect } from "effect"

export class ExperimentAudiences extends Context.Service<ExperimentAudiences, {
  /**
   * Re-uploads the profile's enabled customer list now. Never fails: a list that is off or busy,
   * or a platform that refuses, is logged and caught up by the list's daily refresh.
   */
  readonly refresh: (profileId: string) => Effect.Effect<void>
}>()("svc/ExperimentAudiences") {}
