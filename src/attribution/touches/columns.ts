/**
 * A touch's channel and ad columns as read back: the one row schema of them, spread where a row
 * carries them. Outside the repository so that other contexts' reads can share it without
 * importing `touches`' repository.
 */
import { Schema } from "effect"

export const TouchColumns = Schema.Struct({
  channel: Schema.NullOr(Schema.String),
  source: Schema.NullOr(Schema.String),
  medium: Schema.NullOr(Schema.String),
  campaign_external_id: Schema.NullOr(Schema.String),
  campaign_name: Schema.NullOr(Schema.String),
  ad_set_external_id: Schema.NullOr(Schema.String),
  ad_set_name: Schema.NullOr(Schema.String),
  ad_external_id: Schema.NullOr(Schema.String),
  ad_name: Schema.NullOr(Schema.String)
})
export type TouchColumns = typeof TouchColumns.Type
