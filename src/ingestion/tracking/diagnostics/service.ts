/**
 * The tracker's diagnostics (decision 0034): install verification, the raw event feed, ops
 * counters, where the tracker collects, and tracking quality. The connect-broker tier reads the
 * data-shaped routes (feed, ops, quality) empty; installation-shaped reads answer on every tier.
 */
import { Context, Effect, Layer, Option } from "effect"
import { isUuid } from "../../../../schema/common.ts"
import { type DatabaseUnavailable, type InvalidParameter } from "../../../../schema/errors.ts"
import type {
  InstallVerification,
  TrackedEvent,
  TrackerOrigin,
  TrackingOps,
  TrackingQuality
} from "../../../../schema/tracking.ts"
import { AuditLog } from "../../../kernel/audit/repo.ts"
import type { PrincipalShape, ProfileContext } from "../../../kernel/principal.ts"
import { DEFAULT_PAGE_SIZE, pageOf, parseCursor } from "../../../platform/pagination.ts"
import { AppConfig } from "../../../platform/config.ts"
import { customCollectorUrl } from "../domains/collector-hosts.ts"
import { type FeedRow, type OpsRow, TrackingDiagnosticsRepo, type VerificationRow } from "./repo.ts"
import { TrackingDomainsRepo } from "../domains/repo.ts"
import { TrackingRepo } from "../tracker/repo.ts"

/** How long an install-verification attempt waits for an event. */
export const VERIFICATION_WINDOW_MINUTES = 30
export const DEFAULT_QUALITY_DAYS = 30

const isIsoTime = (value: string) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/.test(value)

/** A share with 4 decimals; null when there is nothing to divide by. */
const share = (count: number, total: number) => ({
  count,
  ratio: total === 0 ? null : Math.round((count / total) * 10_000) / 10_000
})

const renderVerification = (row: VerificationRow): InstallVerification => ({
  id: row.id,
  status: row.verified_at !== null ? "verified" : row.expired ? "expired" : "waiting",
  started_at: row.started_at,
  expires_at: row.expires_at,
  verified_at: row.verified_at,
  event: row.verified_at !== null && row.touch_id !== null && row.origin !== null
    ? { touch_id: row.touch_id, origin: row.origin, event_type: row.event_type, received_at: row.verified_at }
    : null
})

const renderEvent = (row: FeedRow): TrackedEvent => ({
  touch_id: row.id,
  occurred_at: row.occurred_at,
  received_at: row.received_at,
  event_type: row.event_type,
  origin: row.collector_origin,
  url: row.url,
  path: row.path,
  referrer_domain: row.referrer_domain,
  channel: row.channel,
  source: row.source,
  medium: row.medium,
  campaign: { external_id: row.campaign_external_id, name: row.campaign_name },
  click_id_kind: row.click_id_kind,
  join_method: row.join_method,
  utm: Object.fromEntries(Object.entries(row.utm ?? {}).flatMap(([key, value]) => typeof value === "string" ? [[key, value]] : [])),
  property_keys: row.property_keys ?? [],
  device: row.device,
  browser: row.browser,
  os: row.os,
  country: row.country,
  city: row.city
})

const renderOps = (row: OpsRow, empty: boolean): TrackingOps => ({
  generated_at: row.generated_at,
  touches: { last_24h: empty ? 0 : row.touches_24h, last_7d: empty ? 0 : row.touches_7d },
  drops: {
    today: { bot: empty ? 0 : row.bot_today, do_not_track: empty ? 0 : row.dnt_today },
    last_7d: { bot: empty ? 0 : row.bot_7d, do_not_track: empty ? 0 : row.dnt_7d }
  },
  last_event_at: empty ? null : row.last_event_at,
  collector_lag_ms: empty
    ? { sample_size: 0, p50: null, p95: null, max: null }
    : { sample_size: row.lag_samples, p50: row.lag_p50, p95: row.lag_p95, max: row.lag_max },
  active_tracking_keys: row.active_keys
})

export interface FeedRequest {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

type Errors = DatabaseUnavailable

export class TrackingDiagnostics extends Context.Service<TrackingDiagnostics, {
  readonly startVerification: (actor: PrincipalShape, profile: ProfileContext) => Effect.Effect<InstallVerification, Errors>
  readonly latestVerification: (profile: ProfileContext) => Effect.Effect<InstallVerification | null, Errors>
  readonly events: (profile: ProfileContext, request: FeedRequest) => Effect.Effect<{
    readonly data: ReadonlyArray<TrackedEvent>
    readonly pagination: { readonly has_next: boolean; readonly cursor: string | null }
  }, InvalidParameter | Errors>
  readonly ops: (profile: ProfileContext) => Effect.Effect<TrackingOps, Errors>
  readonly origin: (profile: ProfileContext) => Effect.Effect<TrackerOrigin, Errors>
  readonly quality: (profile: ProfileContext, days: number | undefined) => Effect.Effect<TrackingQuality, Errors>
}>()("svc/TrackingDiagnostics") {
  static readonly layer = Layer.effect(TrackingDiagnostics)(
    Effect.gen(function*() {
      const repo = yield* TrackingDiagnosticsRepo
      const domains = yield* TrackingDomainsRepo
      const tracking = yield* TrackingRepo
      const audit = yield* AuditLog
      const config = yield* AppConfig
      const defaultCollectorUrl = `${config.baseUrl}/t/collect`

      const startVerification = Effect.fn("TrackingDiagnostics.startVerification")(function*(
        actor: PrincipalShape,
        profile: ProfileContext
      ) {
        const row = yield* repo.startVerification(profile.profileId, VERIFICATION_WINDOW_MINUTES)
        yield* audit.record({
          actor,
          action: "tracking_verification.started",
          targetKind: "tracking_verification",
          targetId: row.id,
          workspaceId: profile.workspaceId,
          profileId: profile.profileId
        })
        return renderVerification(row)
      })

      const latestVerification = Effect.fn("TrackingDiagnostics.latestVerification")(function*(profile: ProfileContext) {
        const latest = yield* repo.latestVerification(profile.profileId)
        if (Option.isNone(latest)) return null
        // A waiting attempt looks for its event now (and keeps it once found); a closed one is final.
        if (latest.value.verified_at !== null) return renderVerification(latest.value)
        const settled = yield* repo.settleVerification(profile.profileId, latest.value.id)
        return renderVerification(Option.getOrElse(settled, () => latest.value))
      })

      const events = Effect.fn("TrackingDiagnostics.events")(function*(profile: ProfileContext, request: FeedRequest) {
        const limit = request.limit ?? DEFAULT_PAGE_SIZE
        const after = Option.map(
          yield* parseCursor(
            request.cursor,
            (keyset) => isIsoTime(keyset.createdAt) && isUuid(keyset.id)
          ),
          (keyset) => ({ occurredAt: keyset.createdAt, id: keyset.id })
        )
        // The connect-broker tier reads empty (decision 0026).
        if (!profile.attributionEnabled) return { data: [], pagination: { has_next: false, cursor: null } }
        const rows = yield* repo.feed(profile.profileId, limit, after)
        const { page, pagination } = pageOf(rows, limit, (row) => ({ createdAt: row.occurred_at, id: row.id }))
        return { data: page.map(renderEvent), pagination }
      })

      const ops = Effect.fn("TrackingDiagnostics.ops")(function*(profile: ProfileContext) {
        return renderOps(yield* repo.ops(profile.profileId), !profile.attributionEnabled)
      })

      const origin = Effect.fn("TrackingDiagnostics.origin")(function*(profile: ProfileContext) {
        const [rows, settings] = yield* Effect.all([domains.list(profile.profileId), tracking.settings(profile.profileId)])
        const active = rows
          .filter((row) => row.verified_at !== null)
          .sort((a, b) => (a.verified_at ?? "").localeCompare(b.verified_at ?? "") || a.hostname.localeCompare(b.hostname))[0]
        return {
          collector_url: active === undefined ? defaultCollectorUrl : customCollectorUrl(active.hostname),
          default_collector_url: defaultCollectorUrl,
          custom_domains: rows.map((row) => ({
            id: row.id,
            hostname: row.hostname,
            status: row.status,
            active: row.verified_at !== null,
            collector_url: customCollectorUrl(row.hostname)
          })),
          allowed_origins: settings.allowed_origins,
          allow_server_side: settings.allow_server_side
        } satisfies TrackerOrigin
      })

      const quality = Effect.fn("TrackingDiagnostics.quality")(function*(profile: ProfileContext, requested: number | undefined) {
        const days = requested ?? DEFAULT_QUALITY_DAYS
        const { totals, channels } = yield* repo.quality(profile.profileId, days)
        const empty = !profile.attributionEnabled
        const touches = empty ? 0 : totals.touches
        const of = (count: number) => share(empty ? 0 : count, touches)
        const bot = empty ? 0 : totals.bot_drops
        const dnt = empty ? 0 : totals.dnt_drops
        const received = touches + bot + dnt
        return {
          window: { days, since: totals.since },
          touches,
          with_utm: of(totals.with_utm),
          with_click_id: of(totals.with_click_id),
          direct: of(totals.direct),
          unclassified: of(totals.unclassified),
          identified: of(totals.identified),
          by_channel: empty ? [] : channels.map((row) => ({ channel: row.channel, ...share(row.count, touches) })),
          bot_drops: share(bot, received),
          do_not_track_drops: share(dnt, received)
        } satisfies TrackingQuality
      })

      return { startVerification, latestVerification, events, ops, origin, quality }
    })
  ).pipe(Layer.provide([TrackingDiagnosticsRepo.layer, TrackingDomainsRepo.layer, TrackingRepo.layer, AuditLog.layer]))
}
