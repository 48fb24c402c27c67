/**
 * A port (src/README.md, Layers): which paying customers an upload leaves out because an
 * experiment holds them out (issue 32, audience_holdout). Declared here, implemented by the
 * experiments context (the same hash its results use), wired in src/main/ports.ts: exports never
 * reads experiments' tables.
 */
import { Context, type Effect } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"

export class AudienceHoldouts extends Context.Service<AudienceHoldouts, {
  /** Today's rule for the profile's uploads: true for a customer held out by a running experiment. */
  readonly heldOut: (profileId: string) => Effect.Effect<(customerId: string) => boolean, DatabaseUnavailable>
  /** After a successful upload to `audienceId`: `candidates` were the list before holdouts (the experiments record what each left out). */
  readonly uploaded: (profileId: string, candidates: ReadonlyArray<string>, audienceId: string | null) => Effect.Effect<void, DatabaseUnavailable>
}>()("svc/AudienceHoldouts") {}
