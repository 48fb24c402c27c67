/**
 * The tracker's installers (decision 0034): the tag manager's container export and the commerce
 * platform's custom web pixel, built for one of the profile's active keys with its current
 * settings and collector (its active custom domain, else the service's own).
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { type DatabaseUnavailable, NotFound } from "../../../../schema/errors.ts"
import type { ProfileContext } from "../../../kernel/principal.ts"
import { AppConfig } from "../../../platform/config.ts"
import { customCollectorUrl } from "../domains/collector-hosts.ts"
import { TrackingDomainsRepo } from "../domains/repo.ts"
import { commercePixel, tagManagerContainer } from "./templates.ts"
import { TrackingRepo } from "../tracker/repo.ts"

type Errors = NotFound | DatabaseUnavailable

export class TrackingInstallers extends Context.Service<TrackingInstallers, {
  readonly tagManager: (profile: ProfileContext, key: string | undefined) => Effect.Effect<Record<string, unknown>, Errors>
  readonly commercePixel: (profile: ProfileContext, key: string | undefined) => Effect.Effect<string, Errors>
}>()("svc/TrackingInstallers") {
  static readonly layer = Layer.effect(TrackingInstallers)(
    Effect.gen(function*() {
      const repo = yield* TrackingRepo
      const domains = yield* TrackingDomainsRepo
      const config = yield* AppConfig

      /** The key (default: the active one), the settings and the collector the installer is built with. */
      const inputs = (profile: ProfileContext, requested: string | undefined) =>
        Effect.gen(function*() {
          const keys = yield* repo.activeKeys(profile.profileId)
          const key = requested === undefined ? keys[0] : keys.find((row) => row.key === requested)
          if (key === undefined) {
            return yield* new NotFound({
              message: requested === undefined
                ? "The profile has no active tracking key: create one with POST /api/v1/tracking/keys."
                : "No such tracking key."
            })
          }
          const [settings, hostname] = yield* Effect.all([
            repo.settings(profile.profileId),
            domains.activeHostname(profile.profileId)
          ])
          const collectorUrl = Option.match(hostname, {
            onNone: () => `${config.baseUrl}/t/collect`,
            onSome: customCollectorUrl
          })
          return { key: key.key, settings, collectorUrl }
        })

      const tagManager = Effect.fn("TrackingInstallers.tagManager")(function*(profile: ProfileContext, key: string | undefined) {
        const { key: trackingKey, settings, collectorUrl } = yield* inputs(profile, key)
        const now = new Date(yield* Clock.currentTimeMillis)
        return tagManagerContainer({
          collectorUrl,
          trackingKey,
          cookieDomain: settings.cookie_domain,
          captureClickIds: settings.capture_click_ids,
          respectDoNotTrack: settings.respect_do_not_track
        }, now)
      })

      const pixel = Effect.fn("TrackingInstallers.commercePixel")(function*(profile: ProfileContext, key: string | undefined) {
        const { key: trackingKey, settings, collectorUrl } = yield* inputs(profile, key)
        return commercePixel({
          collectorUrl,
          trackingKey,
          captureClickIds: settings.capture_click_ids,
          respectDoNotTrack: settings.respect_do_not_track
        })
      })

      return { tagManager, commercePixel: pixel }
    })
  ).pipe(Layer.provide([TrackingRepo.layer, TrackingDomainsRepo.layer]))
}
