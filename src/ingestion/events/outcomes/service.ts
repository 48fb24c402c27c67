/**
 * Server-side events: ingest (idempotent on the body's `idempotency_key`, under concurrency),
 * retraction by key (the five rows of the state table), and the profile's conversions list.
 * Every recorded outcome writes its `outcome.recorded` outbox row in the same transaction.
 * Decision 0029.
 */
import { Context, Effect, Layer, Option, Result } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isUuid } from "../../../../schema/common.ts"
import {
  type DatabaseUnavailable,
  EventAlreadyExported,
  EventLinkedToConversation,
  EventNotFound,
  InvalidDateRange,
  InvalidParameter,
  ValidationError
} from "../../../../schema/errors.ts"
import {
  type Conversion,
  type ConversionsQuery,
  type CreditModel,
  type IngestEvent,
  type IngestedEvent,
  isCalendarDate,
  isIsoDateTime,
  type Retraction
} from "../../../../schema/events.ts"
import { AuditLog } from "../../../kernel/audit/repo.ts"
import type { PrincipalShape, ProfileContext } from "../../../kernel/principal.ts"
import { DEFAULT_PAGE_SIZE, pageOf, parseCursor } from "../../../platform/pagination.ts"
import { normaliseAmount } from "../../../kernel/money.ts"
import { type ConversionFilters, Conversions } from "../../../attribution/conversions/service.ts"
import { AttributionJobs } from "../../../attribution/recompute/service.ts"
import { orDatabaseUnavailable, retryConflicts } from "../../../platform/database.ts"
import { API_ORIGIN, type CheckedEvent, type Ingested, OutcomeRecorder, type OutcomeOrigin, type RecordError } from "./recorder.ts"
import { normalizeEmail, normalizePhone } from "../../../identity/normalize.ts"
import { canonicalJson, sha256 } from "../../../platform/json.ts"
import { SecretBox } from "../../../platform/secret-box.ts"
import { checkSubjectRef } from "../subject-ref.ts"

export { MAX_CONVERSIONS_PAGE } from "../../../../schema/events.ts"

/** The list's parameters, decoded by the contract (`ConversionsQuery`). */
export type ConversionsQueryInput = ConversionsQuery

export interface ConversionsPage {
  readonly data: ReadonlyArray<Conversion>
  readonly pagination: { readonly has_next: boolean; readonly cursor: string | null }
}


const blank = (value: string | undefined) => value !== undefined && value.trim() === ""

/**
 * Idempotency keys with this prefix are the card-gateway payments' own (`cardgw:<gateway_payment_id>`,
 * decision 0032): POST /api/v1/events refuses them, so the two never collide.
 */
export const CARDGW_KEY_PREFIX = "cardgw:"

/** Keys of outcomes recorded from CRM deals (`crm:<account>:<deal>:<stage>`, decision 0062), refused here likewise. */
export const CRM_KEY_PREFIX = "crm:"

/** A national id as matched: upper-case letters and digits only (spaces, dots and dashes dropped). */
export const normalizeNationalId = (raw: string) => raw.replace(/[\s.\-/]/g, "").toUpperCase()

const checkEvent = (
  input: IngestEvent,
  valueLiteral: Option.Option<string>,
  keyedHash: (purpose: string, value: string) => string
): Effect.Effect<CheckedEvent, ValidationError | InvalidParameter> =>
  Effect.gen(function*() {
    if (blank(input.event_name)) return yield* new ValidationError({ message: "body.event_name: must not be blank" })
    if (blank(input.idempotency_key)) return yield* new ValidationError({ message: "body.idempotency_key: must not be blank" })
    if (input.idempotency_key?.startsWith(CRM_KEY_PREFIX) === true) {
      return yield* new ValidationError({
        message: `body.idempotency_key: the prefix ${CRM_KEY_PREFIX} is reserved for outcomes of CRM deals`
      })
    }
    if (input.idempotency_key?.startsWith(CARDGW_KEY_PREFIX) === true) {
      return yield* new ValidationError({
        message: `body.idempotency_key: the prefix ${CARDGW_KEY_PREFIX} is reserved for card-gateway payments (POST /api/v1/payments/cardgw)`
      })
    }
    const properties = input.properties ?? {}
    const traits = input.user_traits ?? {}
    let valueAmount: string | null = null
    if (properties.value !== undefined) {
      const literal = typeof properties.value === "string" ? Option.some(properties.value) : valueLiteral
      if (Option.isNone(literal)) return yield* Effect.die("properties.value is a number but its literal was not read")
      const amount = normaliseAmount(literal.value.trim())
      if (Result.isFailure(amount)) return yield* new ValidationError({ message: `body.properties.value: ${amount.failure}` })
      valueAmount = amount.success
    }
    let subjectRef: string | null = null
    if (properties.subject_ref !== undefined) {
      const verdict = checkSubjectRef(properties.subject_ref)
      if (!verdict.ok) {
        return yield* verdict.personalData
          ? new InvalidParameter({
            message:
              `body.properties.subject_ref: looks like ${verdict.looksLike}; subject_ref is never personal data, send an opaque id (a UUID or a short token)`,
            reason: "subject_ref_personal_data"
          })
          : new ValidationError({ message: `body.properties.subject_ref: ${verdict.message}` })
      }
      subjectRef = verdict.value
    }
    if (blank(properties.order_group)) return yield* new ValidationError({ message: "body.properties.order_group: must not be blank" })
    if (blank(traits.external_id)) return yield* new ValidationError({ message: "body.user_traits.external_id: must not be blank" })
    let phone: string | null = null
    if (traits.phone !== undefined) {
      const normalized = normalizePhone(traits.phone)
      if (Result.isFailure(normalized)) return yield* new ValidationError({ message: `body.user_traits.phone: ${normalized.failure}` })
      phone = normalized.success
    }
    if (blank(traits.crm_contact_id)) return yield* new ValidationError({ message: "body.user_traits.crm_contact_id: must not be blank" })
    let nationalIdHash: string | null = null
    if (traits.national_id !== undefined) {
      const nationalId = normalizeNationalId(traits.national_id)
      if (!/^[A-Z0-9]{4,32}$/.test(nationalId)) {
        return yield* new ValidationError({ message: "body.user_traits.national_id: expected 4 to 32 letters and digits" })
      }
      nationalIdHash = keyedHash("national_id", nationalId)
    }
    return {
      eventName: input.event_name,
      idempotencyKey: input.idempotency_key,
      occurredAt: input.occurred_at,
      valueAmount,
      currency: properties.currency ?? null,
      subjectRef,
      orderGroup: properties.order_group ?? null,
      externalId: traits.external_id ?? null,
      email: traits.email === undefined ? null : normalizeEmail(traits.email),
      phone,
      crmContactId: traits.crm_contact_id === undefined ? null : traits.crm_contact_id.trim(),
      nationalIdHash,
      anonymousId: traits.anonymous_id ?? null,
      actionSource: input.action_source ?? null,
      clickIds: input.click_ids ?? {}
    }
  })

/** What makes two ingests "the same request": the body as sent, normalised (not the defaults filled in). */
const requestHash = (checked: CheckedEvent) =>
  sha256(canonicalJson({
    event_name: checked.eventName,
    occurred_at: checked.occurredAt ?? null,
    value: checked.valueAmount,
    currency: checked.currency,
    subject_ref: checked.subjectRef,
    order_group: checked.orderGroup,
    external_id: checked.externalId,
    email: checked.email,
    phone: checked.phone,
    // Left out when absent, so requests recorded before these traits existed keep their hash.
    crm_contact_id: checked.crmContactId ?? undefined,
    national_id_hash: checked.nationalIdHash ?? undefined,
    anonymous_id: checked.anonymousId ?? undefined,
    action_source: checked.actionSource,
    click_ids: checked.clickIds
  }))

/**
 * `start` / `end` of a list, already decoded (`DateOrDateTimeParam`): a date is its whole UTC
 * day, a date-time that instant.
 */
export const parseBound = (name: "start" | "end", raw: string): { readonly at: string; readonly inclusive: boolean } => {
  if (!isCalendarDate(raw)) return { at: raw, inclusive: true }
  if (name === "start") return { at: `${raw}T00:00:00Z`, inclusive: true }
  const next = new Date(`${raw}T00:00:00Z`)
  next.setUTCDate(next.getUTCDate() + 1)
  return { at: next.toISOString(), inclusive: false }
}

/** `start` / `end` of a list as bounds (`parseBound`); `invalid_date_range` when start is after end. */
export const parseBounds = (query: { readonly start?: string; readonly end?: string }): Effect.Effect<{
  readonly start?: string
  readonly end?: { readonly at: string; readonly inclusive: boolean }
}, InvalidDateRange> => {
  const start = query.start === undefined ? undefined : parseBound("start", query.start).at
  const end = query.end === undefined ? undefined : parseBound("end", query.end)
  if (start !== undefined && end !== undefined) {
    const from = Date.parse(start)
    const to = Date.parse(end.at)
    if (end.inclusive ? from > to : from >= to) return Effect.fail(new InvalidDateRange({ message: "start is after end." }))
  }
  return Effect.succeed({ ...(start === undefined ? {} : { start }), ...(end === undefined ? {} : { end }) })
}

/** A 200 that counts as nothing is the newcomer's silent failure: say so, and that it is final for this event. */
const noDefinitionWarning = (eventName: string) => ({
  code: "no_conversion_definition" as const,
  message: `No conversion definition of this profile lists event_name ${JSON.stringify(eventName)}: the event was recorded ` +
    "but is no conversion, and it will not become one when a definition lists the name later (replays do not re-derive " +
    "conversions). Create the definition first: POST /api/v1/goals/definitions with event_names, or PUT /api/v1/profile/outcome-definitions."
})

export class EventsService extends Context.Service<EventsService, {
  /**
   * Records one server-side event. `valueLiteral` is the source text of `properties.value`
   * when the body carried it as a JSON number.
   */
  readonly ingest: (
    profile: ProfileContext,
    input: IngestEvent,
    valueLiteral: Option.Option<string>
  ) => Effect.Effect<IngestedEvent, DatabaseUnavailable | ValidationError | InvalidParameter | RecordError>
  /**
   * Records an outcome already checked and normalised, idempotent on its key with `requestHash`
   * saying what "the same request" is: the ingest transaction shared by POST /api/v1/events and
   * card-gateway payments (decision 0032).
   */
  readonly record: (
    profile: ProfileContext,
    checked: CheckedEvent,
    requestHash: string,
    origin: OutcomeOrigin
  ) => Effect.Effect<Ingested, DatabaseUnavailable | RecordError>
  readonly retract: (
    actor: PrincipalShape,
    profile: ProfileContext,
    idempotencyKey: string,
    reason: string
  ) => Effect.Effect<Retraction["data"], DatabaseUnavailable | EventNotFound | EventAlreadyExported | EventLinkedToConversation>
  readonly listConversions: (
    profile: ProfileContext,
    query: ConversionsQueryInput
  ) => Effect.Effect<ConversionsPage, DatabaseUnavailable | InvalidParameter | InvalidDateRange>
}>()("svc/EventsService") {
  static readonly layer = Layer.effect(EventsService)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const repo = yield* Conversions
      const jobs = yield* AttributionJobs
      const audit = yield* AuditLog
      const recorder = yield* OutcomeRecorder
      const box = yield* SecretBox

      const ingest = Effect.fn("Events.ingest")(function*(
        profile: ProfileContext,
        input: IngestEvent,
        valueLiteral: Option.Option<string>
      ) {
        const checked = yield* checkEvent(input, valueLiteral, box.keyedHash)
        const data = yield* recorder.record(profile, checked, requestHash(checked), API_ORIGIN)
        return data.conversion_id !== null ? { data } : { data, meta: { warnings: [noDefinitionWarning(input.event_name)] } }
      })

      const retract = Effect.fn("Events.retract")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        idempotencyKey: string,
        reason: string
      ) {
        return yield* retryConflicts(orDatabaseUnavailable(sql.withTransaction(Effect.gen(function*() {
          const locked = yield* repo.lockEvent(profile.profileId, idempotencyKey)
          if (Option.isNone(locked)) {
            return yield* new EventNotFound({ message: "No event was recorded under this idempotency_key." })
          }
          const event = locked.value
          if (event.retracted) {
            return {
              status: "already_retracted" as const,
              counts: { events: 0, conversions: 0, credits: 0, first_payment_flags: 0 }
            }
          }
          if (yield* repo.hasExport(event.id)) {
            return yield* new EventAlreadyExported({
              message: "A conversion export exists for this event, so it can no longer be retracted."
            })
          }
          if (yield* repo.hasConversationLead(event.id)) {
            return yield* new EventLinkedToConversation({
              message: "A conversation recorded this event as its lead, so it can no longer be retracted."
            })
          }
          const deleted = yield* repo.deleteConversions(event)
          yield* repo.tombstone(event, reason)
          // The event's customer, and the payer a conversion was moved to (decision 0032).
          const flags = yield* repo.recomputeFirstPayments(profile.profileId, [
            ...(event.customer_id === null ? [] : [event.customer_id]),
            ...deleted.customerIds
          ])
          yield* jobs.queueReplay(profile.profileId, "retraction")
          const counts = { events: 1, conversions: deleted.conversions, credits: deleted.credits, first_payment_flags: flags }
          yield* audit.record({
            actor,
            action: "event.retracted",
            targetKind: "outcome_event",
            targetId: event.id,
            workspaceId: profile.workspaceId,
            profileId: profile.profileId,
            details: { idempotency_key: idempotencyKey, reason, counts }
          })
          return { status: "retracted" as const, counts }
        }))))
      })

      const listConversions = Effect.fn("Events.listConversions")(function*(
        profile: ProfileContext,
        query: ConversionsQueryInput
      ) {
        const limit = query.limit ?? DEFAULT_PAGE_SIZE
        const model: CreditModel = query.model ?? "last_touch"
        const filters: { -readonly [K in keyof ConversionFilters]: ConversionFilters[K] } = {}
        if (query.customer_key !== undefined) filters.customerKey = query.customer_key
        if (query.conversion_key !== undefined) filters.conversionKey = query.conversion_key
        const bounds = yield* parseBounds(query)
        if (bounds.start !== undefined) filters.start = bounds.start
        if (bounds.end !== undefined) filters.end = bounds.end
        const after = Option.map(
          yield* parseCursor(query.cursor, (keyset) => isIsoDateTime(keyset.createdAt) && isUuid(keyset.id)),
          (keyset) => ({ occurredAt: keyset.createdAt, id: keyset.id })
        )
        // The connect-broker tier reads empty (decision 0026).
        if (!profile.attributionEnabled) return { data: [], pagination: { has_next: false, cursor: null } }
        const rows = yield* repo.listConversions(profile.profileId, filters, limit, after)
        const { page, pagination } = pageOf(rows, limit, (row) => ({ createdAt: row.occurred_at, id: row.conversion_id }))
        return { data: page.map((row): Conversion => ({ ...row, credit_model: model })), pagination }
      })

      return { ingest, record: recorder.record, retract, listConversions }
    })
  ).pipe(Layer.provide([Conversions.layer, AttributionJobs.layer, AuditLog.layer, OutcomeRecorder.layer]))
}
