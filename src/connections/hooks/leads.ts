/**
 * The lead a `leadgen` callback names, read from the ad platform on one of the account's
 * connections (what `leadgen.received` merges over the webhook value).
 */
import { Context, Effect, Layer } from "effect"
import type { ProviderError } from "../../providers/errors.ts"
import type { ProviderSession } from "../../providers/oauth/port.ts"

export class LeadSource extends Context.Service<LeadSource, {
  readonly getLead: (
    session: ProviderSession,
    leadgenId: string
  ) => Effect.Effect<Readonly<Record<string, unknown>> | null, ProviderError>
}>()("svc/LeadSource") {
  static readonly layer = Layer.succeed(LeadSource)({ getLead: () => Effect.succeed(null) })
}
