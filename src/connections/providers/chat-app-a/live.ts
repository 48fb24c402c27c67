/**
 * `chat_app_a` over HTTP: `/v1/accounts/<business account>[/phone_numbers|/templates|
 * /template_analytics|/dataset]`, `POST /v1/phone_numbers/<id>/messages` and the conversation
 * reads shared with the other messaging kinds.
 */
import { Effect, Layer, Option, Schema, Stream } from "effect"
import { ProviderEndpoints } from "../endpoints.ts"
import type { ProviderRefused } from "../errors.ts"
import { ProviderHttp } from "../http.ts"
import { conversationReads, SentWire } from "../messaging/live.ts"
import type { ProviderSession } from "../oauth/port.ts"
import { apiPath as path, sessionCall, sessionPages } from "../session-http.ts"
import { ChatAppA, TemplateInsightsEnabling } from "./port.ts"

const BusinessAccountWire = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  currency: Schema.String,
  timezone: Schema.String,
  insights: Schema.Literals(["off", "enabling", "on"])
})

const PhoneNumberWire = Schema.Struct({ id: Schema.String, display_phone_number: Schema.String, verified_name: Schema.String })

const TemplateWire = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  language: Schema.String,
  status: Schema.Literals(["APPROVED", "PENDING", "REJECTED", "PAUSED"]),
  category: Schema.Literals(["MARKETING", "UTILITY", "AUTHENTICATION"])
})

const TemplateDayWire = Schema.Struct({
  template_id: Schema.String,
  date: Schema.String,
  sent: Schema.Int,
  delivered: Schema.Int,
  read: Schema.Int,
  button_clicks: Schema.Int,
  cost_minor: Schema.Int,
  currency: Schema.String
})

const DatasetWire = Schema.Struct({ id: Schema.String, name: Schema.String })

const EventsReceivedWire = Schema.Struct({ events_received: Schema.Int })

const account = (session: ProviderSession, ...rest: ReadonlyArray<string>) => path("accounts", session.accountId, ...rest)

export const ChatAppAAdapter = Layer.effect(ChatAppA)(Effect.gen(function*() {
  const http = yield* ProviderHttp
  return {
    businessAccount: (session) => sessionCall(http, session, "businessAccount", BusinessAccountWire, { method: "GET", path: account(session) }),
    phoneNumbers: (session) =>
      Stream.runCollect(sessionPages(http, session, "phoneNumbers", PhoneNumberWire, account(session, "phone_numbers"))),
    templates: (session) => sessionPages(http, session, "templates", TemplateWire, account(session, "templates")),
    templateAnalytics: (session, request) =>
      Stream.runCollect(
        sessionPages(http, session, "templateAnalytics", TemplateDayWire, account(session, "template_analytics"), {
          since: request.since,
          until: request.until,
          template_ids: request.templateIds === undefined ? undefined : request.templateIds.join(",")
        })
      ).pipe(
        // The first ask switches analytics on: a refusal with a time to come back, not a failure.
        Effect.catchTag("ProviderRefused", (error): Effect.Effect<never, ProviderRefused | TemplateInsightsEnabling> =>
          error.code === "insights_enabling"
            ? Effect.fail(new TemplateInsightsEnabling({ retryAfterSeconds: error.retryAfterSeconds ?? 60 }))
            : Effect.fail(error))
      ),
    createTemplate: (session, template) =>
      sessionCall(http, session, "createTemplate", TemplateWire, {
        method: "POST",
        path: account(session, "templates"),
        json: {
          name: template.name,
          language: template.language,
          category: template.category,
          body_text: template.bodyText,
          ...(template.headerText === undefined ? {} : { header_text: template.headerText }),
          ...(template.headerMedia === undefined ? {} : { header_media: template.headerMedia })
        },
        idempotent: false
      }),
    ...conversationReads(http),
    sendText: (session, request) =>
      sessionCall(http, session, "sendText", SentWire, {
        method: "POST",
        path: path("phone_numbers", request.phoneNumberId, "messages"),
        json: { to: request.to, type: "text", text: { body: request.text } },
        idempotent: false
      }),
    sendTemplate: (session, request) =>
      sessionCall(http, session, "sendTemplate", SentWire, {
        method: "POST",
        path: path("phone_numbers", request.phoneNumberId, "messages"),
        json: { to: request.to, type: "template", template: { name: request.template.name, language: request.template.language } },
        idempotent: false
      }),
    dataset: (session) =>
      sessionCall(http, session, "dataset", DatasetWire, { method: "GET", path: account(session, "dataset") }).pipe(
        Effect.map(Option.some),
        Effect.catchTag("ProviderRefused", (error): Effect.Effect<Option.Option<never>, ProviderRefused> =>
          error.status === 404 ? Effect.succeed(Option.none()) : Effect.fail(error))
      ),
    createDataset: (session) => sessionCall(http, session, "createDataset", DatasetWire, { method: "POST", path: account(session, "dataset"), json: {} }),
    sendEvents: (session, datasetId, events) =>
      sessionCall(http, session, "sendEvents", EventsReceivedWire, {
        method: "POST",
        path: path("datasets", datasetId, "events"),
        json: { data: events }
      })
  }
}))

export const ChatAppALayer = ChatAppAAdapter.pipe(Layer.provide(ProviderHttp.layer), Layer.provide(ProviderEndpoints.layer))
