/** `POST /api/v1/legal/dpa/handoff` (decision 0098): a single-use URL for a profile's owner to accept the DPA. */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Uuid } from "./common.ts"

export const DEFAULT_HANDOFF_MINUTES = 7 * 24 * 60
export const MAX_HANDOFF_MINUTES = 30 * 24 * 60

export const MintDpaHandoff = Schema.Struct({
  /** The profile whose own owner or admin is to accept. */
  profile_id: Uuid,
  /** How long the link works; default 7 days, at most 30. */
  expires_in_minutes: Schema.optionalKey(
    Schema.Int.check(Schema.isGreaterThanOrEqualTo(5), Schema.isLessThanOrEqualTo(MAX_HANDOFF_MINUTES))
  )
})
export type MintDpaHandoff = typeof MintDpaHandoff.Type

export const DpaHandoff = Schema.Struct({
  profile_id: Uuid,
  /** Open in a browser signed in to the console as the profile's owner or admin. */
  url: Schema.String,
  expires_at: Schema.String,
  /** The DPA version the page shows and the owner accepts. */
  dpa_version: Schema.String
}).annotate({ identifier: "DpaHandoff" })
export type DpaHandoff = typeof DpaHandoff.Type

export const DpaHandoffBody = Schema.Struct({ data: DpaHandoff })

export const DpaHandoffPage = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" })).annotate({
  description: "HTML page: the DPA and its accept form, or the outcome"
})
export const DpaHandoffErrorPage = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" }), HttpApiSchema.status(400))
  .annotate({ description: "HTML page: the link is unknown, expired or used, or the person may not accept" })
