/** The export scrubbing and lane routing (decision 0075): pure functions, exact outputs. */
import { createHash } from "node:crypto"
import { describe, expect, it } from "vitest"
import { DEGRADED, decideLane, inferActionSource } from "../../src/exports/pipeline/routing.ts"
import { type ExportFacts, neutralEventName, originOnly, scrub } from "../../src/exports/pipeline/scrub.ts"

const hex = (text: string) => createHash("sha256").update(text).digest("hex")

const facts: ExportFacts = {
  eventId: "svc_1",
  eventName: "ivf_consultation_booked",
  eventTime: 1_790_000_000,
  actionSource: "website",
  eventSourceUrl: "https://clinic.example/fertility/ivf?patient=ana#top",
  email: "  Ana.Perez@Example.COM ",
  phone: "+34 (600) 11-22-33",
  externalId: "cust_9",
  clickIds: { fbclid: "fb.1" },
  customData: { value: 120, currency: "EUR", diagnosis: "infertility", order_id: "o-1", content_name: "IVF" }
}

describe("scrub", () => {
  it("platform_safe: origin-only URL, allowlisted custom_data, hashed normalised email and phone, neutral name", () => {
    const event = scrub("platform_safe", null, facts)
    expect(event).toEqual({
      event_name: `Conversion_${hex("ivf_consultation_booked").slice(0, 10)}`,
      event_time: 1_790_000_000,
      event_id: "svc_1",
      action_source: "website",
      event_source_url: "https://clinic.example",
      user_data: { em: [hex("ana.perez@example.com")], ph: [hex("34600112233")], external_id: [hex("cust_9")], fbc: "fb.1" },
      custom_data: { value: 120, currency: "EUR", order_id: "o-1" }
    })
    expect(JSON.stringify(event)).not.toMatch(/ivf|fertility|infertility|Ana|patient/i)
  })

  it("hipaa scrubs like platform_safe", () => {
    expect(scrub("hipaa", null, facts)).toEqual(scrub("platform_safe", null, facts))
  })

  it("standard keeps the full URL, every custom_data key and the rule's name; identities still hashed", () => {
    const event = scrub("standard", null, facts)
    expect(event.event_name).toBe("ivf_consultation_booked")
    expect(event.event_source_url).toBe(facts.eventSourceUrl)
    expect(event.custom_data).toEqual(facts.customData)
    expect(event.user_data["em"]).toEqual([hex("ana.perez@example.com")])
  })

  it("custom follows its privacy_config", () => {
    const event = scrub("custom", { url_mode: "none", custom_data_allowlist: ["value"], neutral_event_names: false }, facts)
    expect(event.event_source_url).toBeUndefined()
    expect(event.custom_data).toEqual({ value: 120 })
    expect(event.event_name).toBe("ivf_consultation_booked")
  })

  it("a non-website action_source ships no event_source_url", () => {
    expect(scrub("standard", null, { ...facts, actionSource: "chat" }).event_source_url).toBeUndefined()
  })

  it("standard event names stay; origins of odd URLs", () => {
    expect(neutralEventName("Purchase")).toBe("Purchase")
    expect(originOnly("javascript:alert(1)")).toBeUndefined()
    expect(originOnly("not a url")).toBeUndefined()
  })
})

describe("routing", () => {
  const lane = { messagingDestination: true, messagingLaneOn: true, websiteDestination: true }

  it("infers an omitted action_source as before", () => {
    expect(inferActionSource(null, { ctwa_clid: "c" })).toBe("business_messaging")
    expect(inferActionSource(null, { fbclid: "f" })).toBe("website")
    expect(inferActionSource(null, {})).toBe("system_generated")
    expect(inferActionSource("phone_call", { ctwa_clid: "c" })).toBe("phone_call")
  })

  it("business_messaging with ctwa_clid goes to the messaging dataset only", () => {
    const facts = { actionSource: "business_messaging", hasCtwaClid: true, ...lane }
    expect(decideLane("adplatform_capi_messaging", facts)).toEqual({ send: true, actionSource: "business_messaging", skipReason: null })
    expect(decideLane("adplatform_capi", facts)).toEqual({ send: false, skipReason: "routed_to_messaging_dataset" })
  })

  it("without a messaging lane it degrades to system_generated on the website dataset", () => {
    const facts = { actionSource: "business_messaging", hasCtwaClid: true, ...lane, messagingLaneOn: false }
    expect(decideLane("adplatform_capi", facts)).toEqual({ send: true, actionSource: "system_generated", skipReason: DEGRADED })
  })

  it("business_messaging without ctwa_clid is sent as chat", () => {
    const facts = { actionSource: "business_messaging", hasCtwaClid: false, ...lane }
    expect(decideLane("adplatform_capi", facts)).toEqual({ send: true, actionSource: "chat", skipReason: null })
  })

  it("a website event with only a messaging destination: no_website_destination", () => {
    const facts = { actionSource: "website", hasCtwaClid: false, ...lane, websiteDestination: false }
    expect(decideLane("adplatform_capi_messaging", facts)).toEqual({ send: false, skipReason: "no_website_destination" })
  })
})
