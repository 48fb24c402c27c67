/**
 * Which lane an outcome takes and what a destination does with it (decision 0075), as the
 * `action_source` rules of `POST /api/v1/events` say. Pure: no I/O, unit-tested.
 */
import type { DestinationKind } from "../../../schema/exports.ts"

/**
 * The `action_source` an outcome ships with. An explicit value wins; an omitted one keeps the
 * inference the service made before the field existed: a `ctwa_clid` means business messaging,
 * any other click id a website visit, none a system-generated event.
 */
export const inferActionSource = (explicit: string | null, clickIds: Readonly<Record<string, string>>): string => {
  if (explicit !== null) return explicit
  if (clickIds["ctwa_clid"] !== undefined) return "business_messaging"
  if (Object.keys(clickIds).length > 0) return "website"
  return "system_generated"
}

export interface LaneFacts {
  readonly actionSource: string
  readonly hasCtwaClid: boolean
  /** The profile has a live `adplatform_capi_messaging` destination this rule reaches. */
  readonly messagingDestination: boolean
  /** The rule keeps the messaging lane on (its `adplatform_capi_messaging` override is not null). */
  readonly messagingLaneOn: boolean
  /** The profile has a live `adplatform_capi` destination this rule reaches. */
  readonly websiteDestination: boolean
}

export type LaneDecision =
  | { readonly send: true; readonly actionSource: string; readonly skipReason: string | null }
  | { readonly send: false; readonly skipReason: string }

export const DEGRADED = "action_source_degraded:business_messaging_to_system_generated"

/** What `kind` does with the outcome: send it (with which `action_source`), or skip it and why. */
export const decideLane = (kind: DestinationKind, facts: LaneFacts): LaneDecision => {
  const messagingLane = facts.actionSource === "business_messaging" && facts.hasCtwaClid
  if (kind === "adplatform_capi_messaging") {
    if (messagingLane && facts.messagingLaneOn) return { send: true, actionSource: "business_messaging", skipReason: null }
    if (messagingLane) return { send: false, skipReason: "messaging_lane_off" }
    return { send: false, skipReason: facts.websiteDestination ? "not_messaging_lane" : "no_website_destination" }
  }
  if (messagingLane) {
    // The chat account's dataset takes it; with no such lane the website dataset gets it as a system event.
    if (facts.messagingDestination && facts.messagingLaneOn) return { send: false, skipReason: "routed_to_messaging_dataset" }
    return { send: true, actionSource: "system_generated", skipReason: DEGRADED }
  }
  // Business messaging without a ctwa_clid cannot be matched to a chat: it goes as `chat`.
  if (facts.actionSource === "business_messaging") return { send: true, actionSource: "chat", skipReason: null }
  return { send: true, actionSource: facts.actionSource, skipReason: null }
}
