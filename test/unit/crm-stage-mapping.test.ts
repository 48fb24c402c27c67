/**
 * The pure rules of CRM stage mappings (decision 0060): the suggestion per stage among the
 * profile's outcome keys, and the mapping in force (`user`, `suggested`, `engine_default`).
 */
import { describe, expect, it } from "vitest"
import type { ConversionDefinition } from "../../schema/attribution.ts"
import { stageEventName, stageMapping, suggestOutcome } from "../../src/connections/stages/service.ts"
import type { CrmStage } from "../../src/connections/providers/crm/port.ts"

const stage = (kind: CrmStage["kind"], en: string, es = en): CrmStage => ({ id: `stage_${en}`, label: { en, es }, position: 0, kind })

const definition = (fields: Partial<ConversionDefinition>): ConversionDefinition => ({
  id: "def-1",
  conversion_key: "key",
  name: "Name",
  kind: "event",
  event_names: [],
  event_key: null,
  lookback_window_days: 30,
  is_default: false,
  counts_as_cash: false,
  attribution_eligible: true,
  created_at: "2026-11-01T00:00:00.000Z",
  updated_at: "2026-11-01T00:00:00.000Z",
  ...fields
})

describe("suggestOutcome", () => {
  const keys = ["appointment_booked", "lead", "order_completed", "purchase"]

  it("a won stage: the most payment-like key, in the documented order", () => {
    expect(suggestOutcome(stage("won", "Closed won"), keys)).toBe("purchase")
    expect(suggestOutcome(stage("won", "Closed won"), ["order_completed", "deal_won"])).toBe("order_completed")
    expect(suggestOutcome(stage("won", "Ganado"), ["pago_recibido", "venta"])).toBe("pago_recibido")
    expect(suggestOutcome(stage("won", "Closed won"), ["lead"])).toBeNull()
  })

  it("an open stage labelled as an appointment (in either language): an appointment-like key", () => {
    expect(suggestOutcome(stage("open", "Appointment booked"), keys)).toBe("appointment_booked")
    expect(suggestOutcome(stage("open", "Stage 2", "Cita reservada"), ["cita"])).toBe("cita")
    expect(suggestOutcome(stage("open", "Appointment booked"), ["purchase"])).toBeNull()
  })

  it("lost and other open stages: none", () => {
    expect(suggestOutcome(stage("lost", "Closed lost"), keys)).toBeNull()
    expect(suggestOutcome(stage("open", "Qualified"), keys)).toBeNull()
  })
})

describe("stageMapping", () => {
  const won = stage("won", "Closed won")
  const name = stageEventName(won.id)

  it("a pipeline_stage definition listing the stage's event: user, its event_key (null included)", () => {
    const mapped = definition({ kind: "pipeline_stage", event_names: [name], event_key: "purchase" })
    expect(stageMapping(won, [mapped], "other")).toEqual({ outcome: "purchase", source: "user", definition_id: "def-1" })
    const left = definition({ kind: "pipeline_stage", event_names: [name], event_key: null })
    expect(stageMapping(won, [left], "other")).toEqual({ outcome: null, source: "user", definition_id: "def-1" })
  })

  it("an event definition listing it: user, its conversion_key", () => {
    const goal = definition({ conversion_key: "deal_won", event_names: ["x", name] })
    expect(stageMapping(won, [goal], null)).toEqual({ outcome: "deal_won", source: "user", definition_id: "def-1" })
  })

  it("no definition: the suggestion, else the engine default (no outcome)", () => {
    const unrelated = definition({ event_names: ["purchase"] })
    expect(stageMapping(won, [unrelated], "purchase")).toEqual({ outcome: "purchase", source: "suggested", definition_id: null })
    expect(stageMapping(won, [unrelated], null)).toEqual({ outcome: null, source: "engine_default", definition_id: null })
  })
})
