/**
 * Click-to-chat ads and their welcome message (decision 0093), read live from the ad platform on
 * the profile's current ad-platform connection: no spend, no personal data. Keyset by `ad_id`.
 * Without a usable connection (none, or one awaiting a reconnect) it is 409
 * `adplatform_connection_required`; an ad the platform does not show the grant is 404.
 */
import { Context, Effect, Layer, Option, Schema, Stream } from "effect"
import type { ChatAdsQuery } from "../../../schema/chat-surfaces.ts"
import { WelcomeMessage } from "../../../schema/chat-surfaces.ts"
import { AdplatformConnectionRequired, type DatabaseUnavailable } from "../../../schema/errors.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { type LiveCallError, liveCaller } from "../../connections/live-call.ts"
import { ConnectionSessions } from "../../connections/sessions.ts"
import { type Ad, AdPlatform } from "../../connections/providers/adplatform/port.ts"
import type { ProviderError } from "../../connections/providers/errors.ts"
import type { ProviderSession } from "../../connections/providers/oauth/port.ts"

const PROVIDER = "adplatform"
const DEFAULT_LIMIT = 50
/** The chat destinations a click-to-chat ad may open. */
const CHAT_DESTINATIONS = new Set(["chat_app_a", "page_messenger", "social_dm"])

const renderAd = (ad: Ad) => ({
  ad_id: ad.id,
  name: ad.name,
  status: ad.status,
  campaign_id: ad.campaign_id,
  ad_set_id: ad.ad_set_id,
  destination: {
    type: ad.creative.destination_type ?? "website",
    phone_number: ad.creative.destination_phone_number,
    page_id: ad.creative.destination_page_id
  },
  call_to_action_type: ad.creative.call_to_action_type,
  greeting: ad.creative.greeting,
  greeting_status: ad.creative.greeting_status
})

const decodeWelcome = Schema.decodeUnknownOption(Schema.Struct({
  greeting: Schema.optionalKey(Schema.NullOr(Schema.String)),
  prefilled_text: Schema.optionalKey(Schema.NullOr(Schema.String)),
  ice_breakers: Schema.optionalKey(Schema.Array(Schema.Struct({
    title: Schema.String,
    response: Schema.optionalKey(Schema.NullOr(Schema.String))
  })))
}))

/** The platform's welcome message in the answer's shape; anything it does not configure is null. */
const renderWelcome = (value: unknown): typeof WelcomeMessage.Type | null =>
  value === null || value === undefined ? null : Option.match(decodeWelcome(value), {
    onNone: () => null,
    onSome: (w) => ({
      greeting: w.greeting ?? null,
      prefilled_text: w.prefilled_text ?? null,
      ice_breakers: (w.ice_breakers ?? []).map((b) => ({ title: b.title, response: b.response ?? null }))
    })
  })

const connectionRequired = (reconnect: boolean) =>
  new AdplatformConnectionRequired({
    message: reconnect
      ? "The ad-platform connection needs a reconnect (POST /api/v1/connections/adplatform/handoff)."
      : "The profile has no usable ad-platform connection: connect the ad account first.",
    reason: reconnect ? "reconnect_required" : "no_usable_connection",
    ...(reconnect ? { reconnect_required: true } : {})
  })

type RenderedAd = ReturnType<typeof renderAd>
export type ChatAdsError = LiveCallError | AdplatformConnectionRequired | DatabaseUnavailable

export class ChatAds extends Context.Service<ChatAds, {
  readonly list: (
    profile: ProfileContext,
    query: ChatAdsQuery
  ) => Effect.Effect<{ readonly data: ReadonlyArray<RenderedAd>; readonly pagination: { readonly has_next: boolean; readonly cursor: string | null } }, ChatAdsError>
  readonly welcome: (
    profile: ProfileContext,
    adId: string
  ) => Effect.Effect<{ readonly ad_id: string; readonly welcome: typeof WelcomeMessage.Type | null }, ChatAdsError>
}>()("svc/ChatAds") {
  static readonly layer = Layer.effect(ChatAds)(
    Effect.gen(function*() {
      const connections = yield* ConnectionSessions
      const onConnection = yield* liveCaller
      const platform = yield* AdPlatform

      /** Runs `call` on the current ad-platform connection; 409 without a usable one. */
      const onAds = <A>(profile: ProfileContext, what: string, call: (session: ProviderSession) => Effect.Effect<A, ProviderError>) =>
        Effect.gen(function*() {
          const current = yield* connections.currentOf(profile.profileId, PROVIDER)
          if (Option.isNone(current)) return yield* connectionRequired(false)
          return yield* onConnection(profile.profileId, PROVIDER, { what, authRevoked: () => connectionRequired(true) }, call)
        })

      const list = Effect.fn("ChatAds.list")(function*(profile: ProfileContext, query: ChatAdsQuery) {
        const limit = query.limit ?? DEFAULT_LIMIT
        // The cursor is the last ad_id answered: ads come back in ad_id order.
        const after = query.cursor ?? ""
        const ads = yield* onAds(profile, "The ad account", (session) =>
          Stream.runCollect(Stream.filter(platform.ads(session), (ad) =>
            ad.creative.destination_type !== null && CHAT_DESTINATIONS.has(ad.creative.destination_type) && ad.id > after)))
        const sorted = Array.from(ads).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        const page = sorted.slice(0, limit)
        const hasNext = sorted.length > limit
        return {
          data: page.map(renderAd),
          pagination: { has_next: hasNext, cursor: hasNext ? (page[page.length - 1]?.id ?? null) : null }
        }
      })

      const welcome = Effect.fn("ChatAds.welcome")(function*(profile: ProfileContext, adId: string) {
        const ad = yield* onAds(profile, `Ad ${adId}`, (session) => platform.getAd(session, adId))
        return { ad_id: ad.id, welcome: renderWelcome(ad.creative.welcome_message) }
      })

      return { list, welcome }
    })
  ).pipe(Layer.provide([ConnectionSessions.layer]))
}
