/**
 * `AdPlatform` over HTTP through the shared provider client (src/connections/providers/http.ts), as
 * docs/sandbox-providers.md describes the ad platform's API. Lists are streams of pages pulled
 * one at a time; every answer is decoded, and a shape the service cannot read is the provider
 * failing (ProviderUnavailable), never a defect.
 */
import { Effect, Layer, Schema, Stream } from "effect"
import { ProviderEndpoints } from "../endpoints.ts"
import type { ProviderError } from "../errors.ts"
import { ProviderHttp, type ProviderRequest } from "../http.ts"
import { decodeAnswer } from "../oauth/live.ts"
import type { ProviderSession } from "../oauth/port.ts"
import { AdPlatform } from "./port.ts"

const Status = Schema.Literals(["active", "paused", "archived", "deleted"])
const Budget = Schema.NullOr(Schema.Number)

const Campaign = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  status: Status,
  objective: Schema.NullOr(Schema.String),
  daily_budget_minor: Budget,
  lifetime_budget_minor: Budget
})

const AdSetWire = Schema.Struct({
  id: Schema.String,
  campaign_id: Schema.String,
  name: Schema.String,
  status: Status,
  learning_stage_status: Schema.NullOr(Schema.Literals(["LEARNING", "SUCCESS", "FAIL"])),
  daily_budget_minor: Budget,
  lifetime_budget_minor: Budget
})

const Creative = Schema.Struct({
  id: Schema.NullOr(Schema.String),
  url_tags: Schema.NullOr(Schema.String),
  thumbnail_url: Schema.NullOr(Schema.String),
  destination_type: Schema.NullOr(Schema.String),
  destination_phone_number: Schema.NullOr(Schema.String),
  destination_page_id: Schema.NullOr(Schema.String),
  call_to_action_type: Schema.NullOr(Schema.String),
  greeting: Schema.NullOr(Schema.String),
  greeting_status: Schema.NullOr(Schema.String),
  welcome_message: Schema.Unknown
})

const AdWire = Schema.Struct({
  id: Schema.String,
  ad_set_id: Schema.String,
  campaign_id: Schema.String,
  name: Schema.String,
  status: Status,
  creative: Creative
})

const Insight = Schema.Struct({
  date: Schema.String,
  campaign_id: Schema.String,
  ad_set_id: Schema.String,
  ad_id: Schema.String,
  currency: Schema.String,
  spend_minor: Schema.Number,
  impressions: Schema.Number,
  clicks: Schema.Number,
  conversions: Schema.Number,
  chats: Schema.Number
})

const TaggedCreative = Schema.Struct({ id: Schema.String, previous_creative_id: Schema.NullOr(Schema.String) })

const Named = Schema.Struct({ id: Schema.String, name: Schema.String })
const Listed = Schema.Struct({ data: Schema.Array(Named) })
const EventsReceived = Schema.Struct({ events_received: Schema.Number })

const LeadWire = Schema.Struct({
  leadgen_id: Schema.String,
  form_id: Schema.String,
  ad_id: Schema.String,
  campaign_id: Schema.String,
  created_time: Schema.String,
  field_data: Schema.Array(Schema.Struct({ name: Schema.String, values: Schema.Array(Schema.String) }))
})

// Platform-Safe (issue 20 part 4)
const Promoted = Schema.Struct({ pixel_id: Schema.String, custom_event_type: Schema.String })
const Optimizations = Schema.Struct({
  data: Schema.Array(Schema.Struct({
    id: Schema.String,
    campaign_id: Schema.String,
    name: Schema.String,
    status: Status,
    published: Schema.Boolean,
    promoted_object: Promoted,
    daily_budget_minor: Budget,
    lifetime_budget_minor: Budget,
    ad_ids: Schema.Array(Schema.String)
  }))
})
const Created = Schema.Struct({ id: Schema.String })
const CopiedAd = Schema.Struct({ copied_ad_id: Schema.String })
const UsersReplaced = Schema.Struct({ num_received: Schema.Number })

export const AdPlatformAdapter = Layer.effect(AdPlatform)(Effect.gen(function*() {
  const http = yield* ProviderHttp

  const request = (
    session: ProviderSession,
    operation: string,
    rest: Omit<ProviderRequest, "provider" | "operation" | "connectionId" | "accessToken">
  ): ProviderRequest => ({
    provider: "adplatform",
    operation: `adplatform.${operation}`,
    connectionId: session.connectionId,
    accessToken: session.accessToken,
    ...rest
  })

  const facts = (operation: string) => ({ provider: "adplatform" as const, operation: `adplatform.${operation}` })

  const list = <S extends Schema.Top & { readonly DecodingServices: never }>(
    session: ProviderSession,
    operation: string,
    path: string,
    schema: S,
    query?: Readonly<Record<string, string>>
  ): Stream.Stream<S["Type"], ProviderError> =>
    // A page is decoded at once (one effect per page, not per row: insights run to millions of rows).
    http.pages(request(session, operation, { method: "GET", path, query })).pipe(
      Stream.mapArrayEffect(decodeAnswer(Schema.NonEmptyArray(schema), facts(operation)))
    )

  const one = <S extends Schema.Top & { readonly DecodingServices: never }>(
    session: ProviderSession,
    operation: string,
    rest: Omit<ProviderRequest, "provider" | "operation" | "connectionId" | "accessToken">,
    schema: S
  ): Effect.Effect<S["Type"], ProviderError> =>
    http.call(request(session, operation, rest)).pipe(Effect.flatMap(decodeAnswer(schema, facts(operation))))

  const write = (
    session: ProviderSession,
    operation: string,
    path: string,
    json: unknown
  ): Effect.Effect<void, ProviderError> =>
    http.call(request(session, operation, { method: "POST", path, json })).pipe(Effect.asVoid)

  const account = (session: ProviderSession) => `/v1/accounts/${encodeURIComponent(session.accountId)}`
  const levelPath = (level: "campaign" | "ad_set" | "ad") => (level === "campaign" ? "campaigns" : level === "ad_set" ? "adsets" : "ads")

  return {
    campaigns: (session) => list(session, "listCampaigns", `${account(session)}/campaigns`, Campaign),
    adSets: (session) => list(session, "listAdSets", `${account(session)}/adsets`, AdSetWire),
    ads: (session) => list(session, "listAds", `${account(session)}/ads`, AdWire),
    insights: (session, range) =>
      list(session, "listInsights", `${account(session)}/insights`, Insight, { since: range.since, until: range.until }),
    getCampaign: (session, id) => one(session, "getCampaign", { method: "GET", path: `/v1/campaigns/${encodeURIComponent(id)}` }, Campaign),
    getAdSet: (session, id) => one(session, "getAdSet", { method: "GET", path: `/v1/adsets/${encodeURIComponent(id)}` }, AdSetWire),
    getAd: (session, id) => one(session, "getAd", { method: "GET", path: `/v1/ads/${encodeURIComponent(id)}` }, AdWire),
    setStatus: (session, target) =>
      write(session, "setStatus", `/v1/${levelPath(target.level)}/${encodeURIComponent(target.id)}`, { status: target.status }),
    setBudget: (session, target) =>
      write(session, "setBudget", `/v1/${levelPath(target.level)}/${encodeURIComponent(target.id)}`, {
        ...(target.daily_budget_minor === undefined ? {} : { daily_budget_minor: target.daily_budget_minor }),
        ...(target.lifetime_budget_minor === undefined ? {} : { lifetime_budget_minor: target.lifetime_budget_minor })
      }),
    updateCreative: (session, adId, creative) =>
      write(session, "updateCreative", `/v1/ads/${encodeURIComponent(adId)}/creative`, creative),
    createTaggedCreative: (session, adId, urlTags) =>
      one(
        session,
        "createTaggedCreative",
        { method: "POST", path: `/v1/ads/${encodeURIComponent(adId)}/creatives`, json: { url_tags: urlTags }, idempotent: false },
        TaggedCreative
      ),
    setCreative: (session, adId, creativeId) =>
      write(session, "setCreative", `/v1/ads/${encodeURIComponent(adId)}`, { creative_id: creativeId }),
    pixels: (session) =>
      one(session, "listPixels", { method: "GET", path: `${account(session)}/pixels`, query: { limit: 500 } }, Listed).pipe(
        Effect.map((answer) => answer.data)
      ),
    datasets: (session) =>
      one(session, "listDatasets", { method: "GET", path: `${account(session)}/datasets`, query: { limit: 500 } }, Listed).pipe(
        Effect.map((answer) => answer.data)
      ),
    createDataset: (session, name) =>
      one(session, "createDataset", { method: "POST", path: `${account(session)}/datasets`, json: { name }, idempotent: false }, Named),
    sendEvents: (session, datasetId, events) =>
      one(
        session,
        "sendEvents",
        { method: "POST", path: `/v1/datasets/${encodeURIComponent(datasetId)}/events`, json: { data: events } },
        EventsReceived
      ).pipe(Effect.map((answer) => ({ events_received: answer.events_received }))),
    getLead: (session, leadgenId) =>
      one(session, "getLead", { method: "GET", path: `/v1/leads/${encodeURIComponent(leadgenId)}` }, LeadWire),
    // Platform-Safe (issue 20 part 4). Creations are not idempotent on the platform: the caller records each id at once.
    adSetOptimizations: (session) =>
      one(session, "listAdSetOptimizations", { method: "GET", path: `${account(session)}/adset_optimizations` }, Optimizations).pipe(
        Effect.map((answer) => answer.data)
      ),
    createCustomConversion: (session, datasetId, conversion) =>
      one(session, "createCustomConversion", {
        method: "POST",
        path: `/v1/datasets/${encodeURIComponent(datasetId)}/customconversions`,
        json: conversion,
        idempotent: false
      }, Created),
    createAdSet: (session, campaignId, adSet) =>
      one(session, "createAdSet", {
        method: "POST",
        path: `/v1/campaigns/${encodeURIComponent(campaignId)}/adsets`,
        json: { ...adSet, status: "paused" },
        idempotent: false
      }, Created),
    copyAd: (session, adId, adSetId) =>
      one(session, "copyAd", { method: "POST", path: `/v1/ads/${encodeURIComponent(adId)}/copies`, json: { adset_id: adSetId }, idempotent: false }, CopiedAd),
    setPromotedObject: (session, adSetId, promoted) =>
      write(session, "setPromotedObject", `/v1/adsets/${encodeURIComponent(adSetId)}/promoted_object`, promoted),
    // Customer-list audiences (issue 20 part 5, decision 0100).
    createCustomAudience: (session, audience) =>
      one(session, "createCustomAudience", {
        method: "POST",
        path: `${account(session)}/customaudiences`,
        json: { ...audience, subtype: "CUSTOM", customer_file_source: "USER_PROVIDED_ONLY" },
        idempotent: false
      }, Created),
    // A batch re-sent with its session id and sequence replaces itself: safe to retry.
    replaceAudienceUsers: (session, audienceId, batch) =>
      one(session, "replaceAudienceUsers", {
        method: "POST",
        path: `/v1/customaudiences/${encodeURIComponent(audienceId)}/usersreplace`,
        json: {
          session: {
            session_id: batch.session_id,
            batch_seq: batch.batch_seq,
            last_batch_flag: batch.last_batch,
            estimated_num_total: batch.estimated_total
          },
          payload: { schema: batch.schema, data: batch.data }
        }
      }, UsersReplaced),
    deleteAudience: (session, audienceId) =>
      http.call(request(session, "deleteAudience", { method: "DELETE", path: `/v1/customaudiences/${encodeURIComponent(audienceId)}` })).pipe(
        Effect.asVoid
      ),
    createLookalike: (session, lookalike) =>
      one(session, "createLookalike", {
        method: "POST",
        path: `${account(session)}/customaudiences`,
        json: {
          name: lookalike.name,
          subtype: "LOOKALIKE",
          origin_audience_id: lookalike.origin_audience_id,
          lookalike_spec: { ratio: lookalike.ratio, country: lookalike.country }
        },
        idempotent: false
      }, Created)
  }
}))

/** The ad platform with the HTTP client and endpoints it needs (AppConfig from below). */
export const AdPlatformLayer = AdPlatformAdapter.pipe(
  Layer.provide(ProviderHttp.layer),
  Layer.provide(ProviderEndpoints.layer)
)
