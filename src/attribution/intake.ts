/**
 * What ingestion records into attribution's tables, as attribution's service: outcome events and
 * their conversions, touches, payment actions, the marks that have conversions credited again,
 * and the replay queue's lock. Each method is its repository's statement (documented there), so
 * an ingestion service composes them in its own transaction at no extra round trip: they run on
 * the caller's SqlClient, inside whatever transaction it holds.
 */
import { Context, Effect, Layer } from "effect"
import { AttributionRepo } from "./repo.ts"
import { EventsRepo } from "./conversions/repo.ts"
import { CreditsRepo } from "./credits/repo.ts"
import { DefinitionsRepo } from "./definitions/repo.ts"
import { ReplayQueue } from "./jobs/repo.ts"
import { TouchesRepo } from "./touches/repo.ts"

// The row and input types of these statements, for the callers that build or read them.
export type { CandidateTouch } from "./repo.ts"
export type {
  ConversionFilters,
  CustomerTime,
  NewConversion,
  NewEvent,
  StoredEvent,
  WindowConversion
} from "./conversions/repo.ts"
export type { NewPartnerTouch, NewWebTouch } from "./touches/repo.ts"

type Events = EventsRepo["Service"]
type Touches = TouchesRepo["Service"]

/** The repository's statement under the service's span. */
const traced = <Args extends ReadonlyArray<unknown>, A, E>(name: string, statement: (...args: Args) => Effect.Effect<A, E>) =>
  Effect.fn(name)(function*(...args: Args) {
    return yield* statement(...args)
  })

export class AttributionIntake extends Context.Service<AttributionIntake, {
  // Outcome events and their conversions (src/attribution/conversions/repo.ts).
  readonly profileFacts: Events["profileFacts"]
  readonly claimEvents: Events["claimEvents"]
  readonly findEvent: Events["findEvent"]
  readonly findEvents: Events["findEvents"]
  readonly setEventCustomers: Events["setEventCustomers"]
  readonly definitionsFor: Events["definitionsFor"]
  readonly insertConversions: Events["insertConversions"]
  readonly recomputeFirstPayments: Events["recomputeFirstPayments"]
  readonly recreditCredited: Events["recreditCredited"]
  readonly requeueConversions: Events["requeueConversions"]
  readonly conversionsInWindow: Events["conversionsInWindow"]
  readonly lockEvent: Events["lockEvent"]
  readonly hasExport: Events["hasExport"]
  readonly hasConversationLead: Events["hasConversationLead"]
  readonly deleteConversions: Events["deleteConversions"]
  readonly tombstone: Events["tombstone"]
  readonly listConversions: Events["listConversions"]
  // A payment's actions.
  readonly setInstallment: Events["setInstallment"]
  readonly setPayer: Events["setPayer"]
  /**
   * The payment now belongs to another customer: its credit rows go and the worker credits it
   * again (src/attribution/credits/repo.ts `clear`, then the conversion's `reassignPayment`).
   */
  readonly reassignPayment: Events["reassignPayment"]
  readonly setRefund: Events["setRefund"]
  readonly clearRefund: Events["clearRefund"]
  /** A built-in cash definition (src/attribution/definitions/repo.ts `createCashEventDefinition`). */
  readonly createCashEventDefinition: DefinitionsRepo["Service"]["createCashEventDefinition"]
  // Touches (src/attribution/touches/repo.ts).
  readonly insertWebTouch: Touches["insertWebTouch"]
  readonly insertPartnerTouches: Touches["insertPartnerTouches"]
  readonly bindVisitors: Touches["bindVisitors"]
  /** Read-only: the creditable touches of conversions, as the crediting engine gathers them (src/attribution/repo.ts). */
  readonly candidateTouches: AttributionRepo["Service"]["candidateTouches"]
  // The replay queue (src/attribution/jobs/repo.ts).
  readonly lockProfile: ReplayQueue["Service"]["lockProfile"]
  readonly enqueueReplay: ReplayQueue["Service"]["enqueue"]
}>()("svc/AttributionIntake") {
  static readonly layer = Layer.effect(AttributionIntake)(
    Effect.gen(function*() {
      const events = yield* EventsRepo
      const touches = yield* TouchesRepo
      const credits = yield* CreditsRepo
      const definitions = yield* DefinitionsRepo
      const replays = yield* ReplayQueue
      const attribution = yield* AttributionRepo

      const reassignPayment = Effect.fn("AttributionIntake.reassignPayment")(function*(
        paymentId: string,
        payerId: string | null,
        customerId: string | null
      ) {
        yield* credits.clear(paymentId)
        yield* events.reassignPayment(paymentId, payerId, customerId)
      })

      return {
        profileFacts: traced("AttributionIntake.profileFacts", events.profileFacts),
        claimEvents: traced("AttributionIntake.claimEvents", events.claimEvents),
        findEvent: traced("AttributionIntake.findEvent", events.findEvent),
        findEvents: traced("AttributionIntake.findEvents", events.findEvents),
        setEventCustomers: traced("AttributionIntake.setEventCustomers", events.setEventCustomers),
        definitionsFor: traced("AttributionIntake.definitionsFor", events.definitionsFor),
        insertConversions: traced("AttributionIntake.insertConversions", events.insertConversions),
        recomputeFirstPayments: traced("AttributionIntake.recomputeFirstPayments", events.recomputeFirstPayments),
        recreditCredited: traced("AttributionIntake.recreditCredited", events.recreditCredited),
        requeueConversions: traced("AttributionIntake.requeueConversions", events.requeueConversions),
        conversionsInWindow: traced("AttributionIntake.conversionsInWindow", events.conversionsInWindow),
        lockEvent: traced("AttributionIntake.lockEvent", events.lockEvent),
        hasExport: traced("AttributionIntake.hasExport", events.hasExport),
        hasConversationLead: traced("AttributionIntake.hasConversationLead", events.hasConversationLead),
        deleteConversions: traced("AttributionIntake.deleteConversions", events.deleteConversions),
        tombstone: traced("AttributionIntake.tombstone", events.tombstone),
        listConversions: traced("AttributionIntake.listConversions", events.listConversions),
        setInstallment: traced("AttributionIntake.setInstallment", events.setInstallment),
        setPayer: traced("AttributionIntake.setPayer", events.setPayer),
        reassignPayment,
        setRefund: traced("AttributionIntake.setRefund", events.setRefund),
        clearRefund: traced("AttributionIntake.clearRefund", events.clearRefund),
        createCashEventDefinition: traced("AttributionIntake.createCashEventDefinition", definitions.createCashEventDefinition),
        insertWebTouch: traced("AttributionIntake.insertWebTouch", touches.insertWebTouch),
        insertPartnerTouches: traced("AttributionIntake.insertPartnerTouches", touches.insertPartnerTouches),
        bindVisitors: traced("AttributionIntake.bindVisitors", touches.bindVisitors),
        candidateTouches: traced("AttributionIntake.candidateTouches", attribution.candidateTouches),
        lockProfile: traced("AttributionIntake.lockProfile", replays.lockProfile),
        enqueueReplay: traced("AttributionIntake.enqueueReplay", replays.enqueue),
      }
    })
  ).pipe(Layer.provide([EventsRepo.layer, TouchesRepo.layer, CreditsRepo.layer, DefinitionsRepo.layer, ReplayQueue.layer, AttributionRepo.layer]))
}
