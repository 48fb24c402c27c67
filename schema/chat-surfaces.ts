/**
 * The chat surfaces (api-endpoints.md "Partner data, audiences, messaging"; decision 0093):
 * click-to-chat ads with their welcome message, read live from the ad platform, and the business
 * chat account's message templates with their analytics over UTC days.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Page, PageQuery } from "./common.ts"
import { CalendarDateParam, NonBlankParam, UuidParam } from "./query.ts"

export const ChatAd = Schema.Struct({
  ad_id: Schema.String,
  name: Schema.String,
  status: Schema.String,
  campaign_id: Schema.String,
  ad_set_id: Schema.String,
  destination: Schema.Struct({
    type: Schema.String,
    phone_number: Schema.NullOr(Schema.String),
    page_id: Schema.NullOr(Schema.String)
  }),
  call_to_action_type: Schema.NullOr(Schema.String),
  greeting: Schema.NullOr(Schema.String),
  greeting_status: Schema.NullOr(Schema.String)
}).annotate({ identifier: "ChatAd" })

export const ChatAdPage = Page(ChatAd)
export const ChatAdsQuery = Schema.Struct({ ...PageQuery })
export type ChatAdsQuery = typeof ChatAdsQuery.Type

export const AdParam = { ad_id: NonBlankParam("the ad's id on the ad platform") }

export const IceBreaker = Schema.Struct({ title: Schema.String, response: Schema.NullOr(Schema.String) })

export const WelcomeMessage = Schema.Struct({
  greeting: Schema.NullOr(Schema.String),
  prefilled_text: Schema.NullOr(Schema.String),
  ice_breakers: Schema.Array(IceBreaker)
}).annotate({ identifier: "WelcomeMessage" })

export const AdWelcome = Schema.Struct({
  data: Schema.Struct({
    ad_id: Schema.String,
    /** null: no welcome message is configured on the ad. */
    welcome: Schema.NullOr(WelcomeMessage)
  })
})

export const ChatTemplate = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  language: Schema.String,
  status: Schema.String,
  category: Schema.String
}).annotate({ identifier: "ChatTemplate" })

export const TemplatesQuery = Schema.Struct({
  connection_id: Schema.optionalKey(UuidParam("the chat_app_a connection (default: the profile's current one)"))
})
export type TemplatesQuery = typeof TemplatesQuery.Type

export const TemplateList = Schema.Struct({ data: Schema.Array(ChatTemplate) })

export const TemplateNameParam = { name: NonBlankParam("the template's name") }

export const TemplateAnalyticsQuery = Schema.Struct({
  connection_id: Schema.optionalKey(UuidParam("the chat_app_a connection (default: the profile's current one)")),
  language: Schema.optionalKey(NonBlankParam("only the template in this language (e.g. en_US)")),
  start: Schema.optionalKey(CalendarDateParam("first UTC day (default: 29 days before end)")),
  end: Schema.optionalKey(CalendarDateParam("last UTC day (default: today, UTC)"))
})
export type TemplateAnalyticsQuery = typeof TemplateAnalyticsQuery.Type

const Figures = {
  sent: Schema.Int,
  delivered: Schema.Int,
  read: Schema.Int,
  button_clicks: Schema.Int,
  /** Minor units of `currency`. */
  cost_minor: Schema.Int
}

export const TemplateAnalytics = Schema.Struct({
  data: Schema.Struct({
    template: Schema.Struct({ name: Schema.String, languages: Schema.Array(Schema.String), template_ids: Schema.Array(Schema.String) }),
    connection_id: Schema.String,
    start: Schema.String,
    end: Schema.String,
    currency: Schema.NullOr(Schema.String),
    totals: Schema.Struct(Figures),
    daily: Schema.Array(Schema.Struct({ date: Schema.String, ...Figures })),
    /** When the figures were read from the platform (answers are cached 15 minutes). */
    fetched_at: Schema.String
  })
}).annotate({ identifier: "TemplateAnalytics" })

export const TemplateHeaderMedia = Schema.Struct({
  format: Schema.Literals(["IMAGE", "VIDEO", "DOCUMENT"]),
  url: Schema.String.check(Schema.isMinLength(8), Schema.isMaxLength(2000))
})

export const CreateTemplateBody = Schema.Struct({
  connection_id: Schema.optionalKey(Schema.String.check(Schema.isUUID())),
  name: Schema.String.check(Schema.isPattern(/^[a-z0-9_]{1,512}$/u, { message: "lower-case letters, digits and _, at most 512" })),
  /** The platform's language code (`en_US`, `pt_BR`, `zh_Hant`); the platform refuses one it does not know. */
  language: Schema.String.check(Schema.isPattern(/^[A-Za-z]{2,8}([_-][A-Za-z0-9]{2,8})?$/u, { message: "a language code such as en_US" })),
  category: Schema.Literals(["MARKETING", "UTILITY", "AUTHENTICATION"]),
  /** Exclusive with `header_media`. */
  header_text: Schema.optionalKey(Schema.String.check(Schema.isPattern(/\S/u, { message: "must not be blank" }), Schema.isMaxLength(60))),
  header_media: Schema.optionalKey(TemplateHeaderMedia),
  body_text: Schema.String.check(Schema.isPattern(/\S/u, { message: "must not be blank" }), Schema.isMaxLength(1024))
})
export type CreateTemplateBody = typeof CreateTemplateBody.Type

export const TemplateCreated = Schema.Struct({ data: ChatTemplate }).pipe(HttpApiSchema.status(201))
