/**
 * The web tracker (decision 0031): tracking keys (one live key per profile, idempotent by that
 * natural key), tracker settings (a change queues one coalesced full attribution replay), the
 * snippet, and the collector that turns a tracker event into one `web_touch`.
 */
import { Clock, Context, Duration, Effect, Layer, Option, Redacted, Schema, SchemaIssue } from "effect"
import { RateLimiter } from "effect/persistence/RateLimiter"
import { isUuid } from "../../../../schema/common.ts"
import {
  type DatabaseUnavailable,
  InsufficientScope,
  InvalidParameter,
  NotFound,
  PayloadTooLarge,
  type RateLimitExceeded,
  Unauthorized,
  ValidationError
} from "../../../../schema/errors.ts"
import {
  type CollectEvent as CollectEventType,
  CollectEvent,
  type LandingAttribution,
  type TrackingKey,
  type TrackingSettings,
  type UpdateTrackingSettings
} from "../../../../schema/tracking.ts"
import { AttributionJobs } from "../../../attribution/recompute/service.ts"
import { Touches } from "../../../attribution/touches/service.ts"
import { AuditLog } from "../../../kernel/audit/repo.ts"
import { CredentialPrefix, isWellFormed } from "../../../kernel/credentials/tokens.ts"
import type { PrincipalShape, ProfileContext } from "../../../kernel/principal.ts"
import { deriveLinkTokenKeys, LINK_TOKEN_PARAM, type LinkTokenKeys, verifyLinkToken } from "../../../identity/link-tokens/token.ts"
import { AppConfig } from "../../../platform/config.ts"
import { consumeBucket } from "../../../platform/rate-limit.ts"
import { parseJsonOrUndefined } from "../../../platform/json.ts"
import { mediaTypeOf } from "../../../platform/request-info.ts"
import { CLICK_ID_KINDS, classify, clickIdOf, isSameSite, UTM_KEYS } from "./channels.ts"
import { CollectorHosts, customCollectorUrl } from "../domains/collector-hosts.ts"
import { TrackingDomainsRepo } from "../domains/repo.ts"
import { type CollectorTargetRow, type KeyRow, type SettingsRow, type SettingsValues, TrackingRepo } from "./repo.ts"
import { renderSnippet } from "./snippet.ts"
import { isBot, parseUserAgent } from "./user-agent.ts"

/** Largest tracker event the collector reads. */
export const MAX_EVENT_BYTES = 16 * 1024

/** How long a runner trusts what it read about a tracking key (revocations on this runner clear it at once). */
const TARGET_CACHE_MS = 5_000
const TARGET_CACHE_SIZE = 10_000

/** `occurred_at` window: a late event up to 7 days, a clock up to 5 minutes ahead. */
const MAX_AGE_MS = 7 * 24 * 60 * 60 * 1000
const MAX_AHEAD_MS = 5 * 60 * 1000

/**
 * Trusted headers carrying the visitor's country, first match wins: set by the CDN or platform
 * in front of the service (decision 0031). Without one the country is null.
 */
export const COUNTRY_HEADERS = ["cf-ipcountry", "x-vercel-ip-country", "x-country-code"] as const
const CITY_HEADERS = ["cf-ipcity", "x-vercel-ip-city"] as const
/** Country codes those headers use for "unknown" or "Tor", not countries. */
const NOT_COUNTRIES = new Set(["XX", "T1", "ZZ"])

export const REPLAY_REASON = "tracking_settings_changed"

const noSuchKey = () => new NotFound({ message: "No such tracking key." })
const unknownTrackingKey = () =>
  new Unauthorized({ message: "Unknown or revoked tracking key.", reason: "tracking_key_invalid" })

const render = (row: KeyRow): TrackingKey => ({
  id: row.id,
  profile_id: row.profile_id,
  key: row.key,
  status: row.revoked_at === null ? "active" : "revoked",
  created_at: row.created_at,
  revoked_at: row.revoked_at
})

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** A decoding failure as one line naming the field, like the API's other 400s (`body.url: ...`). */
const describeIssue = (issue: SchemaIssue.Issue): string => {
  const issues = formatIssues(issue).issues
  if (issues.length === 0) return "body: invalid"
  return issues
    .slice(0, 5)
    .map((item) => {
      const path = (item.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment))
      return `${["body", ...path].join(".")}: ${item.message}`
    })
    .join("; ")
}

const decodeEvent = Schema.decodeUnknownEffect(CollectEvent)


const hostOf = (url: string | null | undefined): string | undefined => {
  if (url === null || url === undefined || url === "" || !URL.canParse(url)) return undefined
  const host = new URL(url).hostname.toLowerCase()
  return host === "" ? undefined : host
}

const withoutWww = (host: string) => host.startsWith("www.") ? host.slice(4) : host

/** The page URL as stored: without click-id values (never shown by any route), link tokens and the fragment. */
const storedUrl = (page: URL): string => {
  const copy = new URL(page.href)
  for (const kind of CLICK_ID_KINDS) copy.searchParams.delete(kind)
  copy.searchParams.delete(LINK_TOKEN_PARAM)
  copy.hash = ""
  return copy.href.slice(0, 2048)
}

const countryOf = (headers: Readonly<Record<string, string | undefined>>): string | null => {
  for (const name of COUNTRY_HEADERS) {
    const value = headers[name]?.trim().toUpperCase()
    if (value !== undefined && /^[A-Z]{2}$/.test(value) && !NOT_COUNTRIES.has(value)) return value
  }
  return null
}

const cityOf = (headers: Readonly<Record<string, string | undefined>>): string | null => {
  for (const name of CITY_HEADERS) {
    const raw = headers[name]
    if (raw === undefined || raw.trim() === "") continue
    let value = raw
    try {
      value = decodeURIComponent(raw)
    } catch {
      // Not percent-encoded: keep it as sent.
    }
    return value.trim().slice(0, 100) || null
  }
  return null
}

const normalizeOrigins = (origins: ReadonlyArray<string>): ReadonlyArray<string> => [
  ...new Set(origins.map((origin) => new URL(origin).origin.toLowerCase()))
]

/**
 * The customer a tracker event's `link_token` names for this profile (decision 0037), or null: a
 * missing, malformed, tampered, expired or other profile's token binds nothing and is no error.
 */
const linkedCustomerOf = (
  keys: Option.Option<LinkTokenKeys>,
  body: object,
  profileId: string,
  nowMs: number
): string | null => {
  if (Option.isNone(keys) || !("link_token" in body) || typeof body.link_token !== "string") return null
  const verdict = verifyLinkToken(keys.value, body.link_token, Math.floor(nowMs / 1000))
  return verdict.valid && verdict.claims.profileId === profileId ? verdict.claims.customerId : null
}

const sameValues = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) =>
  a.length === b.length && a.every((value, index) => value === b[index])

export interface CollectRequest {
  readonly body: Uint8Array
  readonly headers: Readonly<Record<string, string | undefined>>
  /** The client's address (metered per tracking key); none when the transport has none. */
  readonly peerAddress: Option.Option<string>
  /**
   * The profile an authenticated server-side caller named (the RPC `TouchesRecord` call): a
   * tracking key of another profile is refused as an unknown one, so keys are not probed across profiles.
   */
  readonly profileId?: string
}

/**
 * Events one address may send under one tracking key per minute (decision 0031): far above what
 * a browser sends (a page view per navigation), low enough that one client cannot flood a profile.
 */
export const COLLECT_PER_ADDRESS_PER_MINUTE = 600
const COLLECT_WINDOW = Duration.minutes(1)

export interface CollectOutcome {
  /** The `Origin` to answer in `Access-Control-Allow-Origin`; null for a server-side call. */
  readonly allowOrigin: string | null
  readonly result: "stored" | "duplicate" | "dropped_bot" | "dropped_do_not_track"
}

export interface SettingsChange {
  readonly settings: TrackingSettings
  readonly changed: boolean
  readonly replayJobId: string | null
}

/** The snippet's parameters, each decoded by the contract (`SnippetQuery`). */
export interface SnippetRequest {
  readonly key?: string | undefined
  readonly bundle?: "adplatform_pixel" | undefined
  readonly pixelId?: string | undefined
}

type Errors = DatabaseUnavailable

export class TrackingService extends Context.Service<TrackingService, {
  readonly createKey: (
    actor: PrincipalShape,
    profile: ProfileContext
  ) => Effect.Effect<{ readonly key: TrackingKey; readonly created: boolean }, Errors>
  readonly listKeys: (profile: ProfileContext) => Effect.Effect<ReadonlyArray<TrackingKey>, Errors>
  readonly revokeKey: (actor: PrincipalShape, profile: ProfileContext, keyId: string) => Effect.Effect<TrackingKey, NotFound | Errors>
  readonly settings: (profile: ProfileContext) => Effect.Effect<TrackingSettings, Errors>
  readonly updateSettings: (
    actor: PrincipalShape,
    profile: ProfileContext,
    patch: UpdateTrackingSettings
  ) => Effect.Effect<SettingsChange, Errors>
  readonly snippet: (profile: ProfileContext, request: SnippetRequest) => Effect.Effect<string, NotFound | InvalidParameter | Errors>
  /**
   * `GET /t/tracker.js?key=`: the same script as the snippet, public, for a `<script src>` tag
   * (tracking keys are public). 404 for an unknown or revoked key.
   */
  readonly publicScript: (request: SnippetRequest) => Effect.Effect<string, InvalidParameter | NotFound | Errors>
  readonly collect: (
    request: CollectRequest
  ) => Effect.Effect<CollectOutcome, ValidationError | PayloadTooLarge | Unauthorized | InsufficientScope | RateLimitExceeded | Errors>
  /** The CORS pre-flight: the origin to allow, or 403 when no (named) profile allows it. */
  readonly preflight: (origin: string | undefined, key: string | undefined) => Effect.Effect<string, InsufficientScope | Errors>
  /**
   * The profile's live key (its plaintext), minted if it has none; in the caller's transaction.
   * A profile is handed it when provisioned (src/accounts/profiles, through src/main/ports.ts).
   */
  readonly ensureKeyOf: (profileId: string) => Effect.Effect<string, Errors>
}>()("svc/TrackingService") {
  static readonly layer = Layer.effect(TrackingService)(
    Effect.gen(function*() {
      const repo = yield* TrackingRepo
      const touches = yield* Touches
      const jobs = yield* AttributionJobs
      const audit = yield* AuditLog
      const config = yield* AppConfig
      const limiter = yield* RateLimiter
      const domains = yield* TrackingDomainsRepo
      const hosts = yield* CollectorHosts
      const collectorUrl = `${config.baseUrl}/t/collect`
      const linkTokenKeys = Option.map(config.linkTokenSecret ?? Option.none(), (secret) => deriveLinkTokenKeys(Redacted.value(secret)))
      /** Where the profile's tracker posts: its first active custom domain (decision 0034), else the service's collector. */
      const collectorUrlOf = (profileId: string) =>
        Effect.map(domains.activeHostname(profileId), Option.match({ onNone: () => collectorUrl, onSome: customCollectorUrl }))

      const renderSettings = (row: SettingsRow, url: string): TrackingSettings => ({
        allowed_origins: row.allowed_origins,
        capture_click_ids: row.capture_click_ids,
        cookie_domain: row.cookie_domain,
        respect_do_not_track: row.respect_do_not_track,
        allow_server_side: row.allow_server_side,
        collector_url: url,
        updated_at: row.updated_at
      })

      // What this runner read about tracking keys, for the collector's hot path.
      const targets = new Map<string, { readonly target: Option.Option<CollectorTargetRow>; readonly until: number }>()
      const targetOf = (key: string) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const cached = targets.get(key)
          if (cached !== undefined && cached.until > now) return cached.target
          const target = yield* repo.collectorTarget(key)
          if (targets.size >= TARGET_CACHE_SIZE) targets.clear()
          targets.set(key, { target, until: now + TARGET_CACHE_MS })
          return target
        })
      const forgetTargets = Effect.sync(() => targets.clear())

      const createKey = Effect.fn("Tracking.createKey")(function*(actor: PrincipalShape, profile: ProfileContext) {
        const row = yield* repo.transaction(Effect.gen(function*() {
          const ensured = yield* repo.ensureKey(profile.profileId)
          if (ensured.created) {
            yield* audit.record({
              actor,
              action: "tracking_key.created",
              targetKind: "tracking_key",
              targetId: ensured.id,
              workspaceId: profile.workspaceId,
              profileId: profile.profileId
            })
          }
          return ensured
        }))
        return { key: render(row), created: row.created }
      })

      const listKeys = Effect.fn("Tracking.listKeys")(function*(profile: ProfileContext) {
        return (yield* repo.activeKeys(profile.profileId)).map(render)
      })

      const revokeKey = Effect.fn("Tracking.revokeKey")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        rawKeyId: string
      ) {
        if (!isUuid(rawKeyId)) return yield* noSuchKey()
        const keyId = rawKeyId.toLowerCase()
        const row = yield* repo.transaction(Effect.gen(function*() {
          const revoked = yield* repo.revokeKey(profile.profileId, keyId)
          if (Option.isNone(revoked)) return yield* noSuchKey()
          if (revoked.value.revoked) {
            yield* audit.record({
              actor,
              action: "tracking_key.revoked",
              targetKind: "tracking_key",
              targetId: keyId,
              workspaceId: profile.workspaceId,
              profileId: profile.profileId
            })
          }
          return revoked.value
        }))
        yield* forgetTargets
        return render(row)
      })

      const settings = Effect.fn("Tracking.settings")(function*(profile: ProfileContext) {
        return renderSettings(yield* repo.settings(profile.profileId), yield* collectorUrlOf(profile.profileId))
      })

      const updateSettings = Effect.fn("Tracking.updateSettings")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        patch: UpdateTrackingSettings
      ) {
        const url = yield* collectorUrlOf(profile.profileId)
        const change = yield* repo.transaction(Effect.gen(function*() {
          const current = yield* repo.lockSettings(profile.profileId)
          const next: SettingsValues = {
            allowed_origins: patch.allowed_origins === undefined
              ? current.allowed_origins
              : normalizeOrigins(patch.allowed_origins),
            capture_click_ids: patch.capture_click_ids ?? current.capture_click_ids,
            cookie_domain: patch.cookie_domain === undefined
              ? current.cookie_domain
              : patch.cookie_domain === null
              ? null
              : patch.cookie_domain.toLowerCase(),
            respect_do_not_track: patch.respect_do_not_track ?? current.respect_do_not_track,
            allow_server_side: patch.allow_server_side ?? current.allow_server_side
          }
          const changed = [
            sameValues(next.allowed_origins, current.allowed_origins) ? [] : ["allowed_origins"],
            next.capture_click_ids === current.capture_click_ids ? [] : ["capture_click_ids"],
            next.cookie_domain === current.cookie_domain ? [] : ["cookie_domain"],
            next.respect_do_not_track === current.respect_do_not_track ? [] : ["respect_do_not_track"],
            next.allow_server_side === current.allow_server_side ? [] : ["allow_server_side"]
          ].flat()
          if (changed.length === 0) return { settings: renderSettings(current, url), changed: false, replayJobId: null }
          const written = yield* repo.writeSettings(profile.profileId, next)
          // Attribution's queue: the same per-profile lock and coalescing as every other enqueuer.
          const replayJobId = yield* jobs.enqueueReplay(profile.profileId, REPLAY_REASON)
          yield* audit.record({
            actor,
            action: "tracking_settings.updated",
            targetKind: "profile",
            targetId: profile.profileId,
            workspaceId: profile.workspaceId,
            profileId: profile.profileId,
            details: {
              fields: changed,
              before: { ...current, updated_at: undefined },
              after: next,
              replay_job_id: replayJobId
            }
          })
          return { settings: renderSettings(written, url), changed: true, replayJobId }
        }))
        if (change.changed) yield* forgetTargets
        return change
      })

      /** The script for a profile and one of its keys, with its current settings. */
      const renderFor = Effect.fnUntraced(function*(profileId: string, trackingKey: string, request: SnippetRequest) {
        const current = yield* repo.settings(profileId)
        return renderSnippet({
          collectorUrl: yield* collectorUrlOf(profileId),
          trackingKey,
          cookieDomain: current.cookie_domain,
          captureClickIds: current.capture_click_ids,
          respectDoNotTrack: current.respect_do_not_track,
          adplatformPixelId: request.bundle === undefined ? undefined : request.pixelId
        })
      })

      /** `bundle` and `pixel_id` go together (each alone was decoded by the contract). */
      const checkBundle = (request: SnippetRequest) => Effect.gen(function*() {
        if (request.bundle === undefined && request.pixelId !== undefined) {
          return yield* new InvalidParameter({ message: "query.pixel_id: only with bundle=adplatform_pixel", reason: "invalid_parameter:pixel_id" })
        }
        if (request.bundle !== undefined && request.pixelId === undefined) {
          return yield* new InvalidParameter({
            message: "query.pixel_id: the ad platform's pixel id (5 to 20 digits) is required with bundle=adplatform_pixel",
            reason: "invalid_parameter:pixel_id"
          })
        }
      })

      const snippet = Effect.fn("Tracking.snippet")(function*(profile: ProfileContext, request: SnippetRequest) {
        yield* checkBundle(request)
        const keys = yield* repo.activeKeys(profile.profileId)
        const key = request.key === undefined ? keys[0] : keys.find((row) => row.key === request.key)
        if (key === undefined) {
          return yield* new NotFound({
            message: request.key === undefined
              ? "The profile has no active tracking key: create one with POST /api/v1/tracking/keys."
              : "No such tracking key."
          })
        }
        return yield* renderFor(profile.profileId, key.key, request)
      })

      const publicScript = Effect.fn("Tracking.publicScript")(function*(request: SnippetRequest) {
        yield* checkBundle(request)
        const noKey = () => new NotFound({ message: "No active tracking key has this value.", reason: "tracking_key_not_found" })
        if (request.key === undefined || !isWellFormed(request.key, CredentialPrefix.trackingKey)) return yield* noKey()
        const target = yield* targetOf(request.key)
        if (Option.isNone(target)) return yield* noKey()
        return yield* renderFor(target.value.profile_id, request.key, request)
      })

      /**
       * The origin check: a browser's `Origin` must be listed; no `Origin`, or the opaque `null` of a
       * sandboxed sender (the commerce platform's pixel, decision 0034), only when server-side calls are allowed.
       */
      const checkOrigin = (target: CollectorTargetRow, origin: string | undefined) => {
        if (origin === undefined || origin === "null") {
          return target.allow_server_side
            ? Effect.succeed(null)
            : Effect.fail(
              new InsufficientScope({
                message: "No Origin header: this profile accepts tracker events only from its allowed origins.",
                reason: "origin_required"
              })
            )
        }
        return target.allowed_origins.includes(origin.toLowerCase())
          ? Effect.succeed(origin)
          : Effect.fail(
            new InsufficientScope({
              message: "This origin is not in the profile's allowed tracking origins.",
              reason: "origin_not_allowed"
            })
          )
      }

      const collect = Effect.fn("Tracking.collect")(function*(request: CollectRequest) {
        const headers = request.headers
        if (request.body.byteLength > MAX_EVENT_BYTES) {
          return yield* new PayloadTooLarge({ message: `A tracker event is at most ${MAX_EVENT_BYTES} bytes.` })
        }
        const type = mediaTypeOf(headers["content-type"])
        if (type !== "application/json" && type !== "text/plain") {
          return yield* new ValidationError({
            message: "Send the event as application/json or text/plain (what navigator.sendBeacon sends)."
          })
        }
        const json = parseJsonOrUndefined(new TextDecoder().decode(request.body))
        if (typeof json !== "object" || json === null || Array.isArray(json)) {
          return yield* new ValidationError({ message: "body: expected a JSON object" })
        }
        const event = yield* decodeEvent(json).pipe(
          Effect.mapError((error) => new ValidationError({ message: describeIssue(error.issue) }))
        )
        if (!isWellFormed(event.tracking_key, CredentialPrefix.trackingKey)) return yield* unknownTrackingKey()
        const found = yield* targetOf(event.tracking_key)
        if (Option.isNone(found)) return yield* unknownTrackingKey()
        const target = found.value
        if (request.profileId !== undefined && request.profileId !== target.profile_id) return yield* unknownTrackingKey()
        if (Option.isSome(request.peerAddress)) {
          yield* consumeBucket(limiter, {
            key: `collect:${event.tracking_key}:${request.peerAddress.value}`,
            limit: COLLECT_PER_ADDRESS_PER_MINUTE,
            window: COLLECT_WINDOW,
            exceeded: {
              message: `At most ${COLLECT_PER_ADDRESS_PER_MINUTE} tracker events per minute from one address under one tracking key.`,
              reason: "collector_rate_limited"
            }
          })
        }
        // A registered custom domain serves only its own profile, once verified (decision 0034).
        yield* hosts.check(headers["host"], target.profile_id)
        const allowOrigin = yield* checkOrigin(target, headers["origin"])

        const now = yield* Clock.currentTimeMillis
        if (event.occurred_at !== undefined) {
          const at = Date.parse(event.occurred_at)
          if (at > now + MAX_AHEAD_MS) {
            return yield* new ValidationError({ message: "body.occurred_at: more than 5 minutes in the future" })
          }
          if (at < now - MAX_AGE_MS) return yield* new ValidationError({ message: "body.occurred_at: older than 7 days" })
        }

        if (isBot(headers["user-agent"])) {
          yield* repo.countDrop(target.profile_id, "bot")
          return { allowOrigin, result: "dropped_bot" } satisfies CollectOutcome
        }
        if (target.respect_do_not_track && (headers["dnt"] === "1" || headers["sec-gpc"] === "1")) {
          yield* repo.countDrop(target.profile_id, "do_not_track")
          return { allowOrigin, result: "dropped_do_not_track" } satisfies CollectOutcome
        }

        const linkCustomerId = linkedCustomerOf(linkTokenKeys, json, target.profile_id, now)
        const stored = yield* touches.insertWebTouch(touchOf(target, event, headers, allowOrigin, linkCustomerId))
        return { allowOrigin, result: Option.isSome(stored) ? "stored" : "duplicate" } satisfies CollectOutcome
      })

      const preflight = Effect.fn("Tracking.preflight")(function*(origin: string | undefined, key: string | undefined) {
        const refused = new InsufficientScope({
          message: "This origin is not in the allowed tracking origins.",
          reason: "origin_not_allowed"
        })
        if (origin === undefined || origin === "null") return yield* refused
        const normalized = origin.toLowerCase()
        if (key !== undefined) {
          if (!isWellFormed(key, CredentialPrefix.trackingKey)) return yield* refused
          const target = yield* targetOf(key)
          if (Option.isNone(target) || !target.value.allowed_origins.includes(normalized)) return yield* refused
          return origin
        }
        if (!(yield* repo.originAllowedAnywhere(normalized))) return yield* refused
        return origin
      })

      const ensureKeyOf = Effect.fn("TrackingService.ensureKeyOf")(function*(profileId: string) {
        return yield* repo.ensureTrackingKey(profileId)
      })

      return { createKey, listKeys, revokeKey, settings, updateSettings, snippet, publicScript, collect, preflight, ensureKeyOf }
    })
  ).pipe(Layer.provide([TrackingRepo.layer, Touches.layer, AttributionJobs.layer, AuditLog.layer, TrackingDomainsRepo.layer, CollectorHosts.layer]))
}

/** One event as a `web_touch` row (see decision 0031 for where each field comes from). */
const touchOf = (
  target: CollectorTargetRow,
  event: CollectEventType,
  headers: Readonly<Record<string, string | undefined>>,
  collectorOrigin: string | null,
  linkCustomerId: string | null
) => {
  const page = new URL(event.url)
  const query = page.searchParams
  // The page's own parameters win; otherwise the session's landing parameters apply (SPA pages).
  const fromUrl = [...UTM_KEYS, ...CLICK_ID_KINDS].some((name) => (query.get(name) ?? "").trim() !== "")
  const landing: LandingAttribution = event.attribution ?? {}
  const param = (name: keyof LandingAttribution): string | undefined =>
    fromUrl ? query.get(name) ?? undefined : landing[name]
  const click = target.capture_click_ids ? clickIdOf({ get: (name) => param(name as keyof LandingAttribution) }) : undefined

  const referrerHost = hostOf(event.referrer)
  const externalReferrer = referrerHost !== undefined && !isSameSite(page.hostname, referrerHost)
    ? referrerHost
    : (() => {
      const landingHost = hostOf(event.landing_referrer)
      return landingHost !== undefined && !isSameSite(page.hostname, landingHost) ? landingHost : undefined
    })()
  const classification = classify({
    utmSource: param("utm_source"),
    utmMedium: param("utm_medium"),
    clickIdKind: click?.kind,
    pageHost: page.hostname,
    referrerHost: externalReferrer ?? referrerHost
  })
  const utm = Object.fromEntries(
    UTM_KEYS.flatMap((name) => {
      const value = param(name)?.trim().slice(0, 200)
      return value === undefined || value === "" ? [] : [[name, value]]
    })
  )
  const agent = parseUserAgent(headers["user-agent"])
  return {
    profileId: target.profile_id,
    occurredAt: event.occurred_at ?? null,
    idempotencyKey: event.event_id ?? null,
    eventType: event.type,
    anonymousId: event.anonymous_id,
    sessionId: event.session_id ?? null,
    channel: classification.channel,
    source: classification.source,
    medium: classification.medium,
    campaignExternalId: utm["utm_id"] ?? null,
    campaignName: utm["utm_campaign"] ?? null,
    clickIdKind: click?.kind ?? null,
    clickId: click?.value ?? null,
    url: storedUrl(page),
    path: page.pathname.slice(0, 2048),
    referrerDomain: externalReferrer === undefined ? null : withoutWww(externalReferrer),
    device: agent.device,
    browser: agent.browser,
    os: agent.os,
    country: countryOf(headers),
    city: cityOf(headers),
    collectorOrigin: collectorOrigin === null ? null : collectorOrigin.toLowerCase(),
    linkCustomerId,
    payload: {
      ...(Object.keys(utm).length > 0 ? { utm } : {}),
      ...(event.properties !== undefined ? { properties: event.properties } : {})
    }
  }
}
