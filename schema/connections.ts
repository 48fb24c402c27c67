/** Provider connections of a profile, connect hand-offs and the pending account selection. */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Page } from "./common.ts"

export const Connection = Schema.Struct({
  id: Schema.String,
  provider: Schema.String,
  /** `active`, `needs_action`, `reconnect_required`. */
  status: Schema.String,
  status_reason: Schema.NullOr(Schema.String),
  /** False while the attribution add-on is off for an ad-platform connection (and for other kinds). */
  delivers_spend: Schema.Boolean,
  display_name: Schema.String,
  /** The provider's account the connection is for (ad account, portal, shop, business number, mailbox). */
  provider_account_id: Schema.NullOr(Schema.String),
  currency: Schema.NullOr(Schema.String),
  /** What the person granted at the provider. */
  scopes: Schema.Array(Schema.String),
  last_synced_at: Schema.NullOr(Schema.String),
  created_at: Schema.String
}).annotate({ identifier: "Connection" })
export type Connection = typeof Connection.Type

export const ConnectionPage = Page(Connection)

/** `POST /api/v1/connections/{provider}/handoff`. */
export const MintHandoff = Schema.Struct({
  /** Where the person lands when the hand-off ends; its origin must be registered (decision 0057). */
  return_url: Schema.optionalKey(Schema.String),
  /** Commerce only: the store's handle, `<handle>.<store-domain>` or its admin URL. */
  shop: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "MintHandoff" })
export type MintHandoff = typeof MintHandoff.Type

export const HandoffStatus = Schema.Literals(["minted", "in_consent", "success", "pending_selection", "failed", "cancelled"])
export type HandoffStatus = typeof HandoffStatus.Type

/** The settled outcome: the same `status` and `reason` the person is returned with. */
export const HandoffResult = Schema.Struct({
  status: Schema.String,
  reason: Schema.NullOr(Schema.String),
  connection_id: Schema.NullOr(Schema.String)
})

export const Handoff = Schema.Struct({
  handoff_id: Schema.String,
  provider: Schema.String,
  status: HandoffStatus,
  /** The provider's consent address, with the OAuth `state`. */
  start_url: Schema.String,
  /** The `/h/<handle>` page: redirects to `start_url` (with a `return_url`) or shows a Continue card. */
  handoff_url: Schema.String,
  return_url: Schema.NullOr(Schema.String),
  shop: Schema.NullOr(Schema.String),
  expires_at: Schema.String,
  created_at: Schema.String,
  /** Null until the hand-off settles; `handoff_expired` once it expired unsettled. */
  result: Schema.NullOr(HandoffResult)
}).annotate({ identifier: "Handoff" })
export type Handoff = typeof Handoff.Type

export const HandoffMinted = Schema.Struct({ data: Handoff }).pipe(HttpApiSchema.status(201))
export const HandoffBody = Schema.Struct({ data: Handoff })

/** An account a pending grant reaches, and whether it is live on another profile of the workspace. */
export const PendingAccount = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  currency: Schema.NullOr(Schema.String),
  timezone: Schema.NullOr(Schema.String),
  connected_elsewhere: Schema.Boolean,
  connected_here: Schema.Boolean
})

export const PendingSelection = Schema.Struct({
  id: Schema.String,
  handoff_id: Schema.String,
  provider: Schema.String,
  accounts: Schema.Array(PendingAccount),
  created_at: Schema.String,
  expires_at: Schema.String
}).annotate({ identifier: "PendingSelection" })
export type PendingSelection = typeof PendingSelection.Type

export const PendingSelections = Schema.Struct({ data: Schema.Array(PendingSelection) })

export const FinalizePending = Schema.Struct({
  /** The account to connect (one of the pending selection's `accounts`). */
  account_id: Schema.String,
  /** Which pending selection; default the newest of the provider. */
  handoff_id: Schema.optionalKey(Schema.String)
}).annotate({ identifier: "FinalizePending" })
export type FinalizePending = typeof FinalizePending.Type

export const ConnectionBody = Schema.Struct({ data: Connection })

export const Disconnected = Schema.Struct({
  data: Schema.Struct({ id: Schema.String, provider: Schema.String, disconnected: Schema.Literal(true) })
})

export const GrantReleased = Schema.Struct({
  data: Schema.Struct({
    id: Schema.String,
    /** The app's grant on the connection is given up (the connection stays). */
    released: Schema.Boolean,
    /** Keys of the app on the profile revoked with it (older key generations included). */
    revoked_keys: Schema.Int
  })
})

/** The `/h/<handle>` page and the provider callback's landing page. */
export const HandoffPage = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" })).annotate({
  description: "HTML page: the Continue card, or the hand-off's outcome when there is no return_url"
})
export const HandoffErrorPage = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" }), HttpApiSchema.status(400))
  .annotate({ description: "HTML page: the link is unknown, expired (handoff_expired) or used (handoff_used)" })

/** `POST /hooks/{provider}` answer. */
export const HookAccepted = Schema.Struct({
  received: Schema.Literal(true),
  /** False when the provider's event id was already handled (a redelivery). */
  fresh: Schema.Boolean
})
