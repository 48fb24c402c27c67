/** Provider connections of a profile. */
import { Schema } from "effect"
import { Page } from "./common.ts"

export const Connection = Schema.Struct({
  id: Schema.String,
  provider: Schema.String,
  status: Schema.String,
  status_reason: Schema.NullOr(Schema.String),
  /** False while the attribution add-on is off for an ad-platform connection (and for other kinds). */
  delivers_spend: Schema.Boolean,
  display_name: Schema.String,
  created_at: Schema.String
}).annotate({ identifier: "Connection" })
export type Connection = typeof Connection.Type

export const ConnectionPage = Page(Connection)
