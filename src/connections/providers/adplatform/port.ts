/**
 * The ad platform as the service needs it: the structure (campaigns, ad sets, ads and their
 * creatives), daily insights with spend in the account's currency, live reads and writes
 * (statuses, budgets, creatives), pixels, datasets and conversion events. Lists are streams of
 * pages (never held whole); budgets and spend are integer minor units of the account currency.
 */
import type { Effect, Stream } from "effect"
import { Context } from "effect"
import type { ProviderError } from "../errors.ts"
import type { ProviderSession } from "../oauth/port.ts"

export type AdStatus = "active" | "paused" | "archived" | "deleted"

export interface AdCampaign {
  readonly id: string
  readonly name: string
  readonly status: AdStatus
  readonly objective: string | null
  readonly daily_budget_minor: number | null
  readonly lifetime_budget_minor: number | null
}

export interface AdSet {
  readonly id: string
  readonly campaign_id: string
  readonly name: string
  readonly status: AdStatus
  readonly learning_stage_status: "LEARNING" | "SUCCESS" | "FAIL" | null
  readonly daily_budget_minor: number | null
  readonly lifetime_budget_minor: number | null
}

export interface AdCreative {
  /** The creative's own id: a URL-tag change puts the ad on a new creative (a new id). */
  readonly id: string | null
  /** The URL parameters the platform appends to the ad's link (`k=v&k2=v2`); null when none. */
  readonly url_tags: string | null
  readonly thumbnail_url: string | null
  /** Click-to-chat ads: `chat_app_a`, `page_messenger`, `social_dm`; null for website ads. */
  readonly destination_type: string | null
  readonly destination_phone_number: string | null
  readonly destination_page_id: string | null
  readonly call_to_action_type: string | null
  readonly greeting: string | null
  readonly greeting_status: string | null
  /** `{greeting, prefilled_text, ice_breakers: [{title, response}]}` or null when none is configured. */
  readonly welcome_message: unknown
}

export interface Ad {
  readonly id: string
  readonly ad_set_id: string
  readonly campaign_id: string
  readonly name: string
  readonly status: AdStatus
  readonly creative: AdCreative
}

/** One ad's day (the account's time zone). */
export interface InsightRow {
  readonly date: string
  readonly campaign_id: string
  readonly ad_set_id: string
  readonly ad_id: string
  readonly currency: string
  readonly spend_minor: number
  readonly impressions: number
  readonly clicks: number
  /** Conversions the platform itself reports (its own attribution). */
  readonly conversions: number
  /** Messaging conversations started, as the platform reports them. */
  readonly chats: number
}

export interface Pixel {
  readonly id: string
  readonly name: string
}

export interface Dataset {
  readonly id: string
  readonly name: string
}

export interface ConversionEvent {
  readonly event_name: string
  readonly event_time: number
  readonly event_id: string
  readonly action_source: string
  readonly event_source_url?: string
  readonly user_data: Readonly<Record<string, unknown>>
  readonly custom_data?: Readonly<Record<string, unknown>>
}

/** Platform-Safe (issue 20 part 4): the dataset and standard event an ad set optimizes on. */
export interface PromotedObject {
  readonly pixel_id: string
  readonly custom_event_type: string
}

/** An ad set's optimization; `published` ad sets have it frozen (a change needs a new ad set). */
export interface AdSetOptimization {
  readonly id: string
  readonly campaign_id: string
  readonly name: string
  readonly status: AdStatus
  readonly published: boolean
  readonly promoted_object: PromotedObject
  readonly daily_budget_minor: number | null
  readonly lifetime_budget_minor: number | null
  readonly ad_ids: ReadonlyArray<string>
}

/** A lead-form submission as the platform answers it (`leadgen.received` merges `field_data` over it). */
export interface Lead {
  readonly leadgen_id: string
  readonly form_id: string
  readonly ad_id: string
  readonly campaign_id: string
  readonly created_time: string
  readonly field_data: ReadonlyArray<{ readonly name: string; readonly values: ReadonlyArray<string> }>
}

/** One batch of a full replace of a customer-list audience's members (the platform's `usersreplace`). */
export interface UsersReplaceBatch {
  /** The same for every batch of one replace; a new id starts a new replace. */
  readonly session_id: number
  /** 1, 2, ... in order. */
  readonly batch_seq: number
  /** The replace takes effect (members absent from the session drop out) on this batch. */
  readonly last_batch: boolean
  readonly estimated_total: number
  /** Field names, e.g. `EMAIL`, `PHONE`, `FN`, `LN`, `COUNTRY`. */
  readonly schema: ReadonlyArray<string>
  /** One row per person: SHA-256 hex of each normalised field, "" when unknown. */
  readonly data: ReadonlyArray<ReadonlyArray<string>>
}

export class AdPlatform extends Context.Service<AdPlatform, {
  readonly campaigns: (session: ProviderSession) => Stream.Stream<AdCampaign, ProviderError>
  readonly adSets: (session: ProviderSession) => Stream.Stream<AdSet, ProviderError>
  readonly ads: (session: ProviderSession) => Stream.Stream<Ad, ProviderError>
  /** Days `since`..`until` inclusive (YYYY-MM-DD), one row per ad and day with any delivery. */
  readonly insights: (
    session: ProviderSession,
    range: { readonly since: string; readonly until: string }
  ) => Stream.Stream<InsightRow, ProviderError>
  readonly getCampaign: (session: ProviderSession, id: string) => Effect.Effect<AdCampaign, ProviderError>
  readonly getAdSet: (session: ProviderSession, id: string) => Effect.Effect<AdSet, ProviderError>
  readonly getAd: (session: ProviderSession, id: string) => Effect.Effect<Ad, ProviderError>
  readonly setStatus: (
    session: ProviderSession,
    target: { readonly level: "campaign" | "ad_set" | "ad"; readonly id: string; readonly status: "active" | "paused" }
  ) => Effect.Effect<void, ProviderError>
  readonly setBudget: (
    session: ProviderSession,
    target: {
      readonly level: "campaign" | "ad_set"
      readonly id: string
      readonly daily_budget_minor?: number
      readonly lifetime_budget_minor?: number
    }
  ) => Effect.Effect<void, ProviderError>
  readonly updateCreative: (
    session: ProviderSession,
    adId: string,
    creative: Partial<AdCreative>
  ) => Effect.Effect<void, ProviderError>
  /**
   * A new creative for the ad: a copy of its current one carrying these URL tags. The platform
   * puts the ad on it and restarts its ad set's learning; answers both ids. Not idempotent.
   */
  readonly createTaggedCreative: (
    session: ProviderSession,
    adId: string,
    urlTags: string
  ) => Effect.Effect<{ readonly id: string; readonly previous_creative_id: string | null }, ProviderError>
  /** Puts the ad back on a creative it carried before (also restarts learning). */
  readonly setCreative: (session: ProviderSession, adId: string, creativeId: string) => Effect.Effect<void, ProviderError>
  readonly pixels: (session: ProviderSession) => Effect.Effect<ReadonlyArray<Pixel>, ProviderError>
  readonly datasets: (session: ProviderSession) => Effect.Effect<ReadonlyArray<Dataset>, ProviderError>
  readonly createDataset: (session: ProviderSession, name: string) => Effect.Effect<Dataset, ProviderError>
  /** Sends conversion events; answers how many the platform accepted. */
  readonly sendEvents: (
    session: ProviderSession,
    datasetId: string,
    events: ReadonlyArray<ConversionEvent>
  ) => Effect.Effect<{ readonly events_received: number }, ProviderError>
  /** One lead-form submission, by the `leadgen_id` of the platform's leadgen callback. */
  readonly getLead: (session: ProviderSession, leadgenId: string) => Effect.Effect<Lead, ProviderError>
  // Platform-Safe (issue 20 part 4): custom conversions, ad-set optimization, the duplicate swap's writes.
  readonly adSetOptimizations: (session: ProviderSession) => Effect.Effect<ReadonlyArray<AdSetOptimization>, ProviderError>
  readonly createCustomConversion: (
    session: ProviderSession,
    datasetId: string,
    conversion: { readonly name: string; readonly custom_event_type: string }
  ) => Effect.Effect<{ readonly id: string }, ProviderError>
  /** A new ad set, created paused, optimizing on `promoted_object`. */
  readonly createAdSet: (
    session: ProviderSession,
    campaignId: string,
    adSet: {
      readonly name: string
      readonly promoted_object: PromotedObject
      readonly daily_budget_minor: number | null
      readonly lifetime_budget_minor: number | null
    }
  ) => Effect.Effect<{ readonly id: string }, ProviderError>
  readonly copyAd: (session: ProviderSession, adId: string, adSetId: string) => Effect.Effect<{ readonly copied_ad_id: string }, ProviderError>
  /** Refused by the platform (`adset_field_frozen`) on a published ad set. */
  readonly setPromotedObject: (session: ProviderSession, adSetId: string, promoted: PromotedObject) => Effect.Effect<void, ProviderError>
  // Customer-list audiences (issue 20 part 5, decision 0100). Creations are not idempotent: the caller records each id at once.
  readonly createCustomAudience: (
    session: ProviderSession,
    audience: { readonly name: string; readonly description: string }
  ) => Effect.Effect<{ readonly id: string }, ProviderError>
  readonly replaceAudienceUsers: (
    session: ProviderSession,
    audienceId: string,
    batch: UsersReplaceBatch
  ) => Effect.Effect<{ readonly num_received: number }, ProviderError>
  /** Deletes a custom or lookalike audience; an audience already gone is refused with 404 `not_found`. */
  readonly deleteAudience: (session: ProviderSession, audienceId: string) => Effect.Effect<void, ProviderError>
  /** Refused with `lookalike_source_too_small` under the platform's minimum of matched members. */
  readonly createLookalike: (
    session: ProviderSession,
    lookalike: { readonly name: string; readonly origin_audience_id: string; readonly ratio: number; readonly country: string }
  ) => Effect.Effect<{ readonly id: string }, ProviderError>
}>()("svc/AdPlatform") {}
