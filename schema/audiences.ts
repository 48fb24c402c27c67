import { Schema } from "effect"

/** Replaces the profile's audience exclusions (decision 0099). */
export const SetAudienceExclusions = Schema.Struct({
  customer_ids: Schema.Array(Schema.String).check(Schema.isMaxLength(1000))
})

export const AudienceExclusions = Schema.Struct({
  profile_id: Schema.String,
  customer_ids: Schema.Array(Schema.String)
})

export const AudienceExclusionsBody = Schema.Struct({ data: AudienceExclusions })
