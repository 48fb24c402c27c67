/**
 * Request examples written out by hand where the schema alone makes a poor one: values the
 * service checks beyond the published schema (origins, time zones, the current agreement
 * versions, one selector of several, one header of two). test/api/openapi-examples.test.ts
 * sends every request example to its operation: each must be accepted.
 */
import { CURRENT_BAA_VERSION, CURRENT_DPA_VERSION } from "../../../schema/dpa.ts"
import { ids } from "./synthesize.ts"
import type { GroupDocs } from "./types.ts"

const oauthApp = {
  name: "Lopez Dental Connect",
  redirect_uris: ["https://partner.example/oauth/callback"],
  allowed_return_origins: ["https://partner.example"],
  profile_resolution: "email",
  rate_tier: "standard",
  owner_workspace_id: ids.workspace
}

const budget = { new_daily_budget_minor: 6000 }

const calendarEvent = {
  start: "2026-11-24T10:00:00+01:00",
  end: "2026-11-24T10:30:00+01:00",
  summary: "Implant consultation",
  attendees: ["ana.lopez@example.com"]
}

export const requestDocs: GroupDocs = {
  "admin.createOAuthApp": { request: oauthApp },
  "admin.updateOAuthApp": { request: { name: oauthApp.name, allowed_return_origins: oauthApp.allowed_return_origins } },
  "admin.createCommerceApp": {
    request: {
      shop: "lopez-dental",
      name: "Lopez Dental Shop",
      client_id: "svc_app_7c1d3e9a2b4f",
      client_secret: "svc_cs_3qT8vYk2Lm9Rb6Xw1Zp4Hn7Dc0Fg5Js",
      scopes: ["read_orders", "read_customers"]
    }
  },
  "exportRules.createRule": {
    request: { conversion_key: "purchase", platform_event_name_overrides: { adplatform_capi: "Purchase" }, enabled: true }
  },
  "tenancy.provisionProfile": {
    request: {
      external_ref: "merchant-4821",
      name: "Lopez Dental Madrid",
      email: "ana.lopez@example.com",
      scopes: ["connections"]
    }
  },
  "tenancy.setEntitlement": { request: { enabled: true, as_of: "2026-11-02T10:15:00Z" } },
  "dpa.acceptProfileDpa": { request: { version: CURRENT_DPA_VERSION } },
  "dpa.acceptProfileBaa": { request: { version: CURRENT_BAA_VERSION } },
  "tracking.updateTrackingSettings": {
    request: { allowed_origins: ["https://lopezdental.es"], capture_click_ids: true, respect_do_not_track: true, allow_server_side: true }
  },
  "trackingSetup.registerCustomDomain": { request: { hostname: "t.lopezdental.es" } },
  "definitions.createGoal": { request: { name: "Booking confirmed", event_name: "booking_confirmed" } },
  "definitions.putOutcomeDefinitions": {
    request: {
      definitions: [{
        conversion_key: "purchase",
        name: "Purchase",
        kind: "event",
        event_names: ["purchase"],
        lookback_window_days: 30,
        is_default: true,
        counts_as_cash: true,
        attribution_eligible: true
      }]
    }
  },
  "partnerData.declareSource": {
    request: {
      customer: { external_ref: "merchant-4821", email: "ana.lopez@example.com" },
      answer_key: "walk_in",
      answer_text: "Walked past the clinic",
      answered_at: "2026-11-02T10:15:00Z"
    }
  },
  "audiences.postCustomerList": {
    request: {
      confirm: true,
      consent_version: "2026-10-04.customer-list.v1",
      consent: {
        version: "2026-10-04.customer-list.v1",
        text_hash: "3f1c9a7e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a",
        accepted_by: "ana.lopez@example.com",
        accepted_at: "2026-11-02T10:15:00Z"
      }
    }
  },
  "linkTokens.mintLinkTokens": { request: { selectors: [{ customer_key: "crm-10442" }], recipe: "token", expires_in_days: 90 } },
  "customers.createErasure": { request: { request_ref: "erasure-2026-0031", customer_key: "crm-10442", reason: "customer request" } },
  "adActions.adSetBudget": { request: budget },
  "adActions.campaignBudget": { request: budget },
  "email.createDraft": {
    request: { to: ["ana.lopez@example.com"], subject: "Your consultation", text: "Hi Ana, your consultation is on Tuesday at 10:00." }
  },
  "calendar.createCalendar": { request: { name: "Madrid clinic", timezone: "Europe/Madrid" } },
  "calendar.createEvent": { request: calendarEvent },
  "calendar.updateEvent": { request: calendarEvent },
  "experiments.createExperiment": {
    request: {
      name: "Holdout of the paying customers, December",
      kind: "audience_holdout",
      metric: { conversion_key: "purchase", measure: "count" },
      window: { start: "2026-12-01", end: "2026-12-28" },
      holdout_fraction: 0.1,
      design: { minimum_detectable_effect: 0.1 }
    }
  },
  "experiments.designExperiment": {
    request: {
      kind: "switchback",
      metric: { conversion_key: "purchase", measure: "count" },
      minimum_detectable_effect: 0.1,
      confidence: 0.95,
      power: 0.8,
      window: { start: "2026-12-01", end: "2026-12-28" }
    }
  },
  "experiments.stopExperiment": { request: { reason: "early_stop", note: "Budget moved to the January sale" } },
  "webhookSubscriptions.create": {
    request: { url: "https://hooks.partner.example/attribution", event_types: ["outcome.recorded"], description: "CRM sync" }
  },
  "reports.createReport": {
    request: {
      name: "Weekly channel report",
      reads: ["overview", "breakdown:channel"],
      range: "last_30_days",
      filters: { model: "last_touch", conversion_key: "purchase" },
      schedule: { frequency: "weekly", hour: 8, weekday: "monday" },
      recipients: ["ana.lopez@example.com"]
    }
  },
  "messages.sendMessage": { request: { channel: "chat_app_a", to: "34600123456", text: "Your appointment is confirmed for Tuesday at 10:00." } },
  "chatTemplates.createChatTemplate": {
    request: {
      connection_id: ids.generic,
      name: "appointment_reminder",
      language: "es",
      category: "UTILITY",
      body_text: "Hola {{1}}, te esperamos el martes a las 10:00."
    }
  }
}
