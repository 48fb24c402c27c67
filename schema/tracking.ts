/**
 * Web tracker contract: tracking keys, tracker settings, the snippet's query and the
 * collector's event body. Decision 0031.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { openObject, Pagination } from "./common.ts"
import { CursorParam, IntegerParam, LimitParam } from "./query.ts"

/** A tracking key: public (the site's snippet carries it), so it is shown on every read. */
export const TrackingKey = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  /** `svc_pub_...`. Not a secret: it only lets a browser on an allowed origin post touches. */
  key: Schema.String,
  status: Schema.Literals(["active", "revoked"]),
  created_at: Schema.String,
  revoked_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "TrackingKey" })
export type TrackingKey = typeof TrackingKey.Type

/** 201 when this call minted the key (`created: true`), 200 with the active key otherwise. */
export const TrackingKeyCreated = Schema.Struct({
  data: TrackingKey,
  meta: Schema.Struct({ created: Schema.Literal(true) })
}).pipe(HttpApiSchema.status(201))
export const TrackingKeyExisting = Schema.Struct({
  data: TrackingKey,
  meta: Schema.Struct({ created: Schema.Literal(false) })
})

export const TrackingKeyList = Schema.Struct({ data: Schema.Array(TrackingKey), pagination: Pagination })
export const TrackingKeyBody = Schema.Struct({ data: TrackingKey })

/** A cookie domain: a host name, optionally with a leading dot (`.example.com`). */
export const CookieDomain = Schema.String.check(
  Schema.isMaxLength(253),
  Schema.isPattern(/^\.?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i, {
    message: "Expected a domain such as example.com or .example.com"
  })
)

export const TrackingSettings = Schema.Struct({
  /**
   * Origins whose pages may post to the collector (https, or http on localhost for development).
   * Empty: no browser origin is accepted.
   */
  allowed_origins: Schema.Array(Schema.String),
  /** Store the click id of ad clicks (gclid, gbraid, wbraid, msclkid, fbclid, ttclid). */
  capture_click_ids: Schema.Boolean,
  /** Domain of the anonymous-id cookie (to share it across subdomains); null: the page's host. */
  cookie_domain: Schema.NullOr(Schema.String),
  /** Send nothing from browsers that ask not to be tracked (Do-Not-Track or Global Privacy Control). */
  respect_do_not_track: Schema.Boolean,
  /** Accept events without an `Origin` header (server-side senders holding the tracking key). */
  allow_server_side: Schema.Boolean,
  /** Where the tracker posts its events. */
  collector_url: Schema.String,
  /** Null until the settings were first changed. */
  updated_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "TrackingSettings" })
export type TrackingSettings = typeof TrackingSettings.Type

const LOOPBACK = ["localhost", "127.0.0.1", "[::1]"]

/**
 * A page origin: scheme, host and optional port (letter case and a trailing slash are
 * forgiven); https, or http on localhost for development.
 */
export const TrackingOrigin = Schema.String.check(
  Schema.isMaxLength(300),
  Schema.makeFilter((value: string) => {
    if (!URL.canParse(value)) return "Expected an origin such as https://shop.example.com"
    const url = new URL(value)
    if (url.origin === "null" || url.origin !== value.replace(/\/$/, "").toLowerCase()) {
      return "An origin is a scheme, a host and an optional port: no path, query or fragment"
    }
    if (url.protocol === "https:" || (url.protocol === "http:" && LOOPBACK.includes(url.hostname))) return undefined
    return "Expected https (http only for localhost)"
  })
)

export const UpdateTrackingSettings = Schema.Struct({
  allowed_origins: Schema.optionalKey(Schema.Array(TrackingOrigin).check(Schema.isMaxLength(50))),
  capture_click_ids: Schema.optionalKey(Schema.Boolean),
  cookie_domain: Schema.optionalKey(Schema.NullOr(CookieDomain)),
  respect_do_not_track: Schema.optionalKey(Schema.Boolean),
  allow_server_side: Schema.optionalKey(Schema.Boolean)
}).annotate({ identifier: "UpdateTrackingSettings" })
export type UpdateTrackingSettings = typeof UpdateTrackingSettings.Type

export const TrackingSettingsBody = Schema.Struct({ data: TrackingSettings })
export const TrackingSettingsUpdated = Schema.Struct({
  data: TrackingSettings,
  meta: Schema.Struct({
    /** The full attribution replay this change queued (or the one already queued); null when nothing changed. */
    replay_job_id: Schema.NullOr(Schema.String),
    changed: Schema.Boolean
  })
})

export const SnippetQuery = {
  key: Schema.optionalKey(Schema.String.annotate({ description: "One of the profile's active tracking keys; default: its active key" })),
  bundle: Schema.optionalKey(
    Schema.Literal("adplatform_pixel").annotate({
      description: "`adplatform_pixel`: append the ad platform's pixel loader (its only third-party request); needs `pixel_id`",
      expected: "adplatform_pixel"
    })
  ),
  pixel_id: Schema.optionalKey(
    Schema.String.annotate({ description: "The ad platform's pixel id (5 to 20 digits); only with, and required by, `bundle=adplatform_pixel`" })
      .check(Schema.isPattern(/^\d{5,20}$/u, { expected: "the ad platform's pixel id (5 to 20 digits)" }))
  )
}

/** The script, served as `application/javascript`. */
export const SnippetScript = Schema.String.pipe(HttpApiSchema.asText({ contentType: "application/javascript" })).annotate({
  identifier: "TrackerSnippet",
  description: "A dependency-free first-party tracker script"
})

/** Click-id and UTM parameters as the tracker captured them from the session's landing URL. */
const Tag = Schema.String.check(Schema.isMaxLength(512))
export const LandingAttribution = Schema.Struct({
  utm_source: Schema.optionalKey(Tag),
  utm_medium: Schema.optionalKey(Tag),
  utm_campaign: Schema.optionalKey(Tag),
  utm_term: Schema.optionalKey(Tag),
  utm_content: Schema.optionalKey(Tag),
  utm_id: Schema.optionalKey(Tag),
  gclid: Schema.optionalKey(Tag),
  gbraid: Schema.optionalKey(Tag),
  wbraid: Schema.optionalKey(Tag),
  msclkid: Schema.optionalKey(Tag),
  fbclid: Schema.optionalKey(Tag),
  ttclid: Schema.optionalKey(Tag)
})
export type LandingAttribution = typeof LandingAttribution.Type

const BrowserId = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9_-]{8,64}$/, { message: "Expected 8 to 64 letters, digits, - or _" })
)

const HttpUrl = Schema.String.check(
  Schema.isMaxLength(2048),
  Schema.makeFilter((value: string) => {
    if (!URL.canParse(value)) return "Expected an absolute URL"
    const protocol = new URL(value).protocol
    return protocol === "https:" || protocol === "http:" ? undefined : "Expected an http or https URL"
  })
)

const IsoTime = Schema.String.check(
  Schema.isMaxLength(40),
  Schema.makeFilter((value: string) =>
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/.test(value) && !Number.isNaN(Date.parse(value))
      ? undefined
      : "Expected an ISO 8601 time with a zone, such as 2026-11-21T14:20:01Z"
  )
)

/**
 * One tracker event (`POST /t/collect`, as `application/json` or `text/plain`). The collector
 * reads UTM tags and the click id from `url`, and from `attribution` (the session's landing
 * parameters) when `url` carries none; the referrer is `referrer` when it is another site,
 * else `landing_referrer`. Other keys, here and in `attribution`, are ignored (decision 0048):
 * the senders are copies of the snippet on the sites' pages, which ignore answers.
 */
export const CollectEvent = Schema.Struct({
  tracking_key: Schema.String.check(Schema.isMaxLength(100)),
  anonymous_id: BrowserId,
  session_id: Schema.optionalKey(BrowserId),
  /** A per-event id: a repeat of the same id is stored once. */
  event_id: Schema.optionalKey(BrowserId),
  type: Schema.String.check(
    Schema.isPattern(/^[a-z][a-z0-9_]{0,63}$/, { message: "Expected a lower-case name such as page_view" })
  ),
  url: HttpUrl,
  referrer: Schema.optionalKey(Schema.NullOr(Schema.String.check(Schema.isMaxLength(2048)))),
  /** Default: when the collector receives it. At most 7 days old and 5 minutes ahead. */
  occurred_at: Schema.optionalKey(IsoTime),
  attribution: Schema.optionalKey(openObject(LandingAttribution)),
  landing_referrer: Schema.optionalKey(Schema.NullOr(Schema.String.check(Schema.isMaxLength(2048)))),
  properties: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
}).annotate({ identifier: "TrackerEvent" })
export type CollectEvent = typeof CollectEvent.Type

/** The collector's body as published: JSON, also accepted as `text/plain` (what `sendBeacon` sends). */
export const CollectPayload = [
  CollectEvent,
  Schema.String.pipe(HttpApiSchema.asText()).annotate({ description: "The same JSON object sent as text/plain" })
] as const

// ---------------------------------------------------------------------------------------------
// Installation and diagnostics (decision 0034): installers, custom collector domains, install
// verification, the event feed, ops, origin and quality.

/** `?key=` of the installers: one of the profile's active keys (default: its active key). */
export const InstallerQuery = { key: Schema.optionalKey(Schema.String) }

/** The tag manager's container export (exportFormatVersion 2), answered as the file itself. */
export const TagManagerContainer = Schema.Record(Schema.String, Schema.Unknown).annotate({
  identifier: "TagManagerContainerExport",
  description: "A tag-manager container export (exportFormatVersion 2) to import as is"
})

/** The commerce platform's custom web pixel, served as `application/javascript`. */
export const CommercePixelScript = Schema.String.pipe(HttpApiSchema.asText({ contentType: "application/javascript" }))
  .annotate({ identifier: "CommercePixel", description: "The commerce platform's custom web-pixel code" })

export const DnsRecordType = Schema.Literals(["CNAME", "TXT"])

/** A record the customer creates at their DNS provider. */
export const DnsRecord = Schema.Struct({ type: DnsRecordType, name: Schema.String, value: Schema.String })

/** A record the latest check did not find, with what the name answered instead. */
export const MissingDnsRecord = Schema.Struct({
  type: DnsRecordType,
  name: Schema.String,
  expected: Schema.String,
  found: Schema.Array(Schema.String)
})

export const CustomDomainStatus = Schema.Literals(["pending", "verified", "failed"])

export const CustomDomain = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  hostname: Schema.String,
  /** The latest check's verdict: `pending` (records missing), `verified`, `failed` (the resolver could not answer). */
  status: CustomDomainStatus,
  /** The snippet posts here and the collector accepts it (verified; a later failed check keeps it serving). */
  active: Schema.Boolean,
  dns_records: Schema.Array(DnsRecord),
  missing: Schema.Array(MissingDnsRecord),
  error: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  checked_at: Schema.NullOr(Schema.String),
  verified_at: Schema.NullOr(Schema.String)
}).annotate({ identifier: "TrackingCustomDomain" })
export type CustomDomain = typeof CustomDomain.Type

export const RegisterCustomDomain = Schema.Struct({
  /** A public DNS name (a subdomain such as `t.shop.example.com`), not an IP address. */
  hostname: Schema.String.check(Schema.isMaxLength(255))
}).annotate({ identifier: "RegisterTrackingCustomDomain" })

export const CustomDomainCreated = Schema.Struct({
  data: CustomDomain,
  meta: Schema.Struct({ created: Schema.Literal(true) })
}).pipe(HttpApiSchema.status(201))
export const CustomDomainExisting = Schema.Struct({
  data: CustomDomain,
  meta: Schema.Struct({ created: Schema.Literal(false) })
})
export const CustomDomainBody = Schema.Struct({ data: CustomDomain })
export const CustomDomainList = Schema.Struct({ data: Schema.Array(CustomDomain), pagination: Pagination })
export const CustomDomainRemoved = Schema.Struct({
  data: Schema.Struct({ id: Schema.String, hostname: Schema.String, removed: Schema.Literal(true) })
})

export const InstallVerification = Schema.Struct({
  id: Schema.String,
  /** `waiting` until an event arrives, `verified` once one did, `expired` when the window closed without one. */
  status: Schema.Literals(["waiting", "verified", "expired"]),
  started_at: Schema.String,
  expires_at: Schema.String,
  verified_at: Schema.NullOr(Schema.String),
  /** The first tracker event from an allowed browser origin inside the window. */
  event: Schema.NullOr(Schema.Struct({
    touch_id: Schema.String,
    origin: Schema.String,
    event_type: Schema.NullOr(Schema.String),
    received_at: Schema.String
  }))
}).annotate({ identifier: "TrackingInstallVerification" })
export type InstallVerification = typeof InstallVerification.Type

export const InstallVerificationStarted = Schema.Struct({ data: InstallVerification }).pipe(HttpApiSchema.status(201))
/** The latest attempt; null when none was started. */
export const InstallVerificationBody = Schema.Struct({ data: Schema.NullOr(InstallVerification) })

/** One stored tracker event as the feed shows it: never the click id, never browser or person identity. */
export const TrackedEvent = Schema.Struct({
  touch_id: Schema.String,
  occurred_at: Schema.String,
  received_at: Schema.String,
  event_type: Schema.NullOr(Schema.String),
  /** The browser origin the collector accepted; null for server-side and sandboxed senders. */
  origin: Schema.NullOr(Schema.String),
  url: Schema.NullOr(Schema.String),
  path: Schema.NullOr(Schema.String),
  referrer_domain: Schema.NullOr(Schema.String),
  channel: Schema.String,
  source: Schema.NullOr(Schema.String),
  medium: Schema.NullOr(Schema.String),
  campaign: Schema.Struct({ external_id: Schema.NullOr(Schema.String), name: Schema.NullOr(Schema.String) }),
  click_id_kind: Schema.NullOr(Schema.String),
  join_method: Schema.NullOr(Schema.String),
  utm: Schema.Record(Schema.String, Schema.String),
  /** Names of the event's custom properties (their values are not shown). */
  property_keys: Schema.Array(Schema.String),
  device: Schema.NullOr(Schema.String),
  browser: Schema.NullOr(Schema.String),
  os: Schema.NullOr(Schema.String),
  country: Schema.NullOr(Schema.String),
  city: Schema.NullOr(Schema.String)
}).annotate({ identifier: "TrackedEvent" })
export type TrackedEvent = typeof TrackedEvent.Type

export const TrackedEventPage = Schema.Struct({ data: Schema.Array(TrackedEvent), pagination: Pagination })

export const TrackedEventsQuery = {
  limit: Schema.optionalKey(LimitParam(100, 50)),
  cursor: Schema.optionalKey(CursorParam())
}

const DropCounts = Schema.Struct({ bot: Schema.Number, do_not_track: Schema.Number })

export const TrackingOps = Schema.Struct({
  generated_at: Schema.String,
  /** Tracker touches by `occurred_at`. */
  touches: Schema.Struct({ last_24h: Schema.Number, last_7d: Schema.Number }),
  /** Events answered but not stored, by UTC day: today, and the last 7 days including today. */
  drops: Schema.Struct({ today: DropCounts, last_7d: DropCounts }),
  /** When the newest tracker touch was received; null when none was. */
  last_event_at: Schema.NullOr(Schema.String),
  /** received_at − occurred_at of the touches received in the last 24 hours, in milliseconds. */
  collector_lag_ms: Schema.Struct({
    sample_size: Schema.Number,
    p50: Schema.NullOr(Schema.Number),
    p95: Schema.NullOr(Schema.Number),
    max: Schema.NullOr(Schema.Number)
  }),
  active_tracking_keys: Schema.Number
}).annotate({ identifier: "TrackingOps" })
export type TrackingOps = typeof TrackingOps.Type

export const TrackerOrigin = Schema.Struct({
  /** Where the snippet posts: the first active custom domain, else the service's own collector. */
  collector_url: Schema.String,
  default_collector_url: Schema.String,
  custom_domains: Schema.Array(Schema.Struct({
    id: Schema.String,
    hostname: Schema.String,
    status: CustomDomainStatus,
    active: Schema.Boolean,
    collector_url: Schema.String
  })),
  allowed_origins: Schema.Array(Schema.String),
  allow_server_side: Schema.Boolean
}).annotate({ identifier: "TrackerOrigin" })
export type TrackerOrigin = typeof TrackerOrigin.Type

/** An exact count and its share of the denominator (4 decimals; null when the denominator is 0). */
export const Share = Schema.Struct({ count: Schema.Number, ratio: Schema.NullOr(Schema.Number) })

export const TrackingQuality = Schema.Struct({
  window: Schema.Struct({ days: Schema.Number, since: Schema.String }),
  /** Tracker touches in the window (by `occurred_at`): the denominator of the shares below. */
  touches: Schema.Number,
  with_utm: Share,
  with_click_id: Share,
  direct: Share,
  /** Tagged or referred, but nothing named a source (`source` is `(not set)`). */
  unclassified: Share,
  /** Joined to a customer (`join_method` set). */
  identified: Share,
  by_channel: Schema.Array(Schema.Struct({ channel: Schema.String, count: Schema.Number, ratio: Schema.NullOr(Schema.Number) })),
  /** Events dropped in the window's UTC days, as a share of everything received (stored + dropped). */
  bot_drops: Share,
  do_not_track_drops: Share
}).annotate({ identifier: "TrackingQuality" })
export type TrackingQuality = typeof TrackingQuality.Type

export const QualityQuery = {
  days: Schema.optionalKey(IntegerParam({ min: 1, max: 90, default: 30, description: "The window in days, ending now: 1 to 90, default 30" }))
}

export const TrackingOpsBody = Schema.Struct({ data: TrackingOps })
export const TrackingOriginBody = Schema.Struct({ data: TrackerOrigin })
export const TrackingQualityBody = Schema.Struct({ data: TrackingQuality })
