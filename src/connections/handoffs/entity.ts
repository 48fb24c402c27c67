/**
 * The HandOff entity's protocol (its behaviour is registered by cluster/HandOff.ts): one instance per hand-off id. Its messages run one at a time on the runner
 * owning the shard, so one consent per hand-off holds across runners: a double click on the
 * provider's screen (two callbacks) runs twice in a row, and the second sees the first's outcome
 * and writes nothing (decision 0057).
 *
 * `Consent` is not persisted: a provider's code works once, so a replay after a crash could only
 * fail; the hand-off row is the durable state instead (`in_consent` since `consent_started_at`),
 * and a consent stopped partway makes the link usable again after 3 minutes. It is
 * uninterruptible from the client, so a person closing the tab mid-consent does not cut a code
 * exchange between the provider's answer and the write.
 */
import { Schema } from "effect"
import { ClusterSchema, Entity } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { DatabaseUnavailable } from "../../../schema/errors.ts"

export const ConsentOutcome = Schema.Struct({
  handoffId: Schema.String,
  status: Schema.Literals(["success", "pending_selection", "failed", "cancelled"]),
  reason: Schema.NullOr(Schema.String),
  connectionId: Schema.NullOr(Schema.String),
  returnUrl: Schema.NullOr(Schema.String)
})

/** The provider's callback for this hand-off: `code` on approval, `error` on cancel. */
export const Consent = Rpc.make("Consent", {
  payload: { code: Schema.NullOr(Schema.String), error: Schema.NullOr(Schema.String) },
  success: ConsentOutcome,
  error: DatabaseUnavailable
}).annotate(ClusterSchema.Uninterruptible, "client")

export const HandOff = Entity.make("HandOff", [Consent])
