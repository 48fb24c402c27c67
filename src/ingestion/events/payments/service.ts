/**
 * Payments (decision 0032): the list with the merchant's actions applied, the actions
 * (installment mark, payer assignment, manual refund and its undo), linkage (how each sale
 * reached an ad) and card-gateway payments reported directly. A payment is a conversion whose
 * definition counts as cash; `payment_id` is the conversion's id.
 *
 * Every action runs in one transaction: the customers it touches are locked first, then the
 * payment (the order ingest and the first-payment recompute take), the change is written, first
 * payments are recomputed where the action moves them, and one `payment_actions` row and one
 * audit row record who did what. A call that changes nothing writes nothing.
 */
import { BigDecimal, Context, Effect, Layer, Option, Result } from "effect"
import { isUuid } from "../../../../schema/common.ts"
import {
  CustomerNotFound,
  type DatabaseUnavailable,
  IdempotencyKeyConflict,
  InvalidDateRange,
  InvalidParameter,
  InvalidState,
  NotFound,
  ValidationError
} from "../../../../schema/errors.ts"
import { type CreditModel, isIsoDateTime } from "../../../../schema/events.ts"
import {
  type CardgwPayment,
  type CardgwRecorded,
  type Payment,
  type PaymentActionResult,
  type LinkageQuery,
  type PaymentLinkage,
  type PaymentsQuery,
  type PaymentStatus
} from "../../../../schema/payments.ts"
import { AuditLog } from "../../../kernel/audit/repo.ts"
import type { PrincipalShape, ProfileContext } from "../../../kernel/principal.ts"
import { DEFAULT_PAGE_SIZE, pageOf, parseCursor } from "../../../platform/pagination.ts"
import { CurrentRequestId } from "../../../platform/request-id.ts"
import { normaliseAmount } from "../../../kernel/money.ts"
import {
  type BuiltinPaymentDefinition,
  CARDGW_DEFINITION,
  CARDGW_EVENT_NAME,
  type LinkageRow,
  type LockedPayment,
  type PaymentAction,
  type PaymentFilters,
  type PaymentKeyset,
  type PaymentOwners,
  type PaymentRow,
  PaymentsRepo
} from "./repo.ts"
import { Conversions } from "../../../attribution/conversions/service.ts"
import { Definitions } from "../../../attribution/definitions/service.ts"
import { AttributionJobs } from "../../../attribution/recompute/service.ts"
import { IdentityIntake } from "../../../identity/intake.ts"
import type { CheckedEvent, OutcomeOrigin } from "../outcomes/recorder.ts"
import { canonicalJson, sha256 } from "../../../platform/json.ts"
import { CARDGW_KEY_PREFIX, EventsService, parseBounds } from "../outcomes/service.ts"
import { normalizeEmail, normalizePhone } from "../../../identity/normalize.ts"
import { checkSubjectRef } from "../subject-ref.ts"

export { MAX_PAYMENTS_PAGE } from "../../../../schema/payments.ts"

/** Card-gateway payments: the event's `source` and the outbox's `data.provider`. */
export const CARDGW_ORIGIN: OutcomeOrigin = { source: "cardgw", provider: "cardgw" }

/** The lists' parameters, decoded by the contract (`PaymentsQuery`, `LinkageQuery`). */
export type PaymentsQueryInput = PaymentsQuery
export type LinkageQueryInput = LinkageQuery

export interface Paged<A> {
  readonly data: ReadonlyArray<A>
  readonly pagination: { readonly has_next: boolean; readonly cursor: string | null }
}

export interface RefundInput {
  /** The literal text of `amount` (a decimal string, or a JSON number's source text); None: the whole payment. */
  readonly amount: Option.Option<string>
  readonly reason: string | undefined
}

const EMPTY_PAGE = { data: [], pagination: { has_next: false, cursor: null } }

/** One identical answer for an unknown payment, another profile's, and an id that is not a payment. */
const noSuchPayment = () => new NotFound({ message: "No such payment." })

const renderPayment = (row: PaymentRow): Payment => ({
  payment_id: row.payment_id,
  outcome_event_id: row.outcome_event_id,
  occurred_at: row.occurred_at,
  amount: row.amount,
  currency: row.currency,
  customer_key: row.customer_key,
  is_first_payment: row.is_first_payment,
  installment: row.installment,
  payer_customer_key: row.payer_customer_key,
  refunded: row.refunded_at === null ? null : { amount: row.refund_amount, at: row.refunded_at, manual: true },
  status: row.refunded_at === null ? "paid" : "refunded"
})

const entity = (externalId: string | null, name: string | null) =>
  externalId === null && name === null ? null : { external_id: externalId, name }

const renderLinkage = (row: LinkageRow, model: CreditModel): PaymentLinkage => {
  const payment = renderPayment(row)
  const touch = row.touch_id !== null && row.touch_kind !== null && row.touch_at !== null && row.channel !== null
    ? {
      touch_id: row.touch_id,
      kind: row.touch_kind,
      at: row.touch_at,
      channel: row.channel,
      source: row.source,
      medium: row.medium,
      campaign: entity(row.campaign_external_id, row.campaign_name),
      ad_set: entity(row.ad_set_external_id, row.ad_set_name),
      ad: entity(row.ad_external_id, row.ad_name),
      join_method: row.join_method,
      click_id_kind: row.click_id_kind,
      credit_share: row.credit_share ?? "0"
    }
    : null
  const reason = !row.credited
    ? "not_credited_yet" as const
    : touch !== null
    ? null
    : !row.has_customer
    ? "no_customer" as const
    : !row.eligible
    ? "not_attribution_eligible" as const
    : "no_touch_in_window" as const
  return {
    payment_id: payment.payment_id,
    outcome_event_id: payment.outcome_event_id,
    occurred_at: payment.occurred_at,
    amount: payment.amount,
    currency: payment.currency,
    customer_key: payment.customer_key,
    status: payment.status,
    credit_model: model,
    linked: reason === null,
    reason,
    touch: reason === null ? touch : null,
    credited_touches: row.credited_touches
  }
}

const paymentCursor = (raw: string | undefined) =>
  Effect.map(
    parseCursor(raw, (keyset) => isIsoDateTime(keyset.createdAt) && isUuid(keyset.id)),
    Option.map((keyset): PaymentKeyset => ({ occurredAt: keyset.createdAt, id: keyset.id }))
  )

/** The filters of a list; each parameter was decoded by the contract, `start` before `end` is checked here. */
const parseFilters = Effect.fn("Payments.parseFilters")(function*(
  query: { readonly customer_key?: string; readonly start?: string; readonly end?: string; readonly status?: PaymentStatus }
) {
  const filters: { -readonly [K in keyof PaymentFilters]: PaymentFilters[K] } = {}
  if (query.customer_key !== undefined) filters.customerKey = query.customer_key
  if (query.status !== undefined) filters.status = query.status
  const bounds = yield* parseBounds(query)
  if (bounds.start !== undefined) filters.start = bounds.start
  if (bounds.end !== undefined) filters.end = bounds.end
  return filters
})

const paymentPage = <Row extends { readonly occurred_at: string; readonly payment_id: string }, A>(
  rows: ReadonlyArray<Row>,
  limit: number,
  render: (row: Row) => A
): Paged<A> => {
  const { page, pagination } = pageOf(rows, limit, (row) => ({ createdAt: row.occurred_at, id: row.payment_id }))
  return { data: page.map(render), pagination }
}

/** Who acted, as the history stores it (the same split as the audit trail). */
const actorColumns = (principal: PrincipalShape) => {
  switch (principal.kind) {
    case "api_key":
      return { actorKind: "api_key", actorId: principal.keyId, actorUserId: null }
    case "user_token":
      return { actorKind: "user_token", actorId: principal.tokenId, actorUserId: principal.userId }
    case "session":
      return { actorKind: "session", actorId: principal.sessionId, actorUserId: principal.userId }
    case "app_client":
      return { actorKind: "app_client", actorId: principal.appId, actorUserId: null }
    case "service":
      return { actorKind: "service", actorId: principal.credentialId, actorUserId: null }
    case "operator":
    case "anonymous":
      return { actorKind: principal.kind, actorId: null, actorUserId: null }
  }
}

const nonNull = (values: ReadonlyArray<string | null>): ReadonlyArray<string> =>
  values.flatMap((value) => (value === null ? [] : [value]))

const blank = (value: string | undefined) => value !== undefined && value.trim() === ""

const decimal = (text: string) => BigDecimal.fromStringUnsafe(text)

/** An amount of a request body: exact, more than 0. */
const checkAmount = (field: string, literal: string) => {
  const amount = normaliseAmount(literal.trim())
  if (Result.isFailure(amount)) return Effect.fail(new ValidationError({ message: `${field}: ${amount.failure}` }))
  if (!BigDecimal.isPositive(decimal(amount.success))) {
    return Effect.fail(new ValidationError({ message: `${field}: must be more than 0` }))
  }
  return Effect.succeed(amount.success)
}

type ActionError = DatabaseUnavailable | NotFound

export class PaymentsService extends Context.Service<PaymentsService, {
  readonly list: (
    profile: ProfileContext,
    query: PaymentsQueryInput
  ) => Effect.Effect<Paged<Payment>, DatabaseUnavailable | InvalidParameter | InvalidDateRange>
  readonly setInstallment: (
    actor: PrincipalShape,
    profile: ProfileContext,
    paymentId: string,
    installment: boolean
  ) => Effect.Effect<PaymentActionResult, ActionError>
  readonly assignPayer: (
    actor: PrincipalShape,
    profile: ProfileContext,
    paymentId: string,
    customerKey: string | null
  ) => Effect.Effect<PaymentActionResult, ActionError | CustomerNotFound | ValidationError>
  readonly recordRefund: (
    actor: PrincipalShape,
    profile: ProfileContext,
    paymentId: string,
    input: RefundInput
  ) => Effect.Effect<PaymentActionResult, ActionError | ValidationError | InvalidState>
  /**
   * A provider's running refund total on the payment (decision 0067): the store refunds an order
   * in parts, each delivery carrying every refund so far. A total above the recorded one raises
   * it; the same or a lower one (a late delivery) changes nothing; a refund the merchant recorded
   * by hand under another reason stands. `amount` None: refunded whole. Capped at the amount paid.
   */
  readonly applyProviderRefund: (
    actor: PrincipalShape,
    profile: ProfileContext,
    paymentId: string,
    input: { readonly amount: Option.Option<string>; readonly reason: string }
  ) => Effect.Effect<PaymentActionResult, ActionError | InvalidState>
  readonly undoRefund: (
    actor: PrincipalShape,
    profile: ProfileContext,
    paymentId: string
  ) => Effect.Effect<PaymentActionResult, ActionError>
  readonly linkage: (
    profile: ProfileContext,
    query: LinkageQueryInput
  ) => Effect.Effect<Paged<PaymentLinkage>, DatabaseUnavailable | InvalidParameter | InvalidDateRange>
  /**
   * Creates the built-in payment definition unless a definition lists `payment` already;
   * `payment_definition_conflict` when another definition holds its key.
   */
  readonly ensureBuiltinPayment: (
    actor: PrincipalShape,
    profile: ProfileContext,
    definition: BuiltinPaymentDefinition,
    reason: string
  ) => Effect.Effect<void, DatabaseUnavailable | InvalidState>
  /** `amount` is the source text of the body's `amount` when it was a JSON number. */
  readonly reportCardgw: (
    actor: PrincipalShape,
    profile: ProfileContext,
    body: CardgwPayment,
    amountLiteral: Option.Option<string>
  ) => Effect.Effect<
    CardgwRecorded["data"],
    DatabaseUnavailable | ValidationError | InvalidParameter | IdempotencyKeyConflict | InvalidState
  >
}>()("svc/PaymentsService") {
  static readonly layer = Layer.effect(PaymentsService)(
    Effect.gen(function*() {
      const repo = yield* PaymentsRepo
      const conversions = yield* Conversions
      const definitions = yield* Definitions
      const jobs = yield* AttributionJobs
      const identity = yield* IdentityIntake
      const events = yield* EventsService
      const audit = yield* AuditLog

      /** The payment as answered after an action (read in the action's transaction). */
      const answer = (profile: ProfileContext, paymentId: string, changed: boolean) =>
        Effect.gen(function*() {
          const row = yield* repo.find(profile.profileId, paymentId)
          if (Option.isNone(row)) return yield* Effect.die("a payment locked in this transaction is gone")
          return { data: renderPayment(row.value), meta: { changed } }
        })

      /**
       * Locks the customers `customersOf` names (in id order), then the payment. Whose payment
       * it is can change between the unlocked read and the lock (a concurrent payer
       * assignment); then it starts again with the new owner.
       */
      const lockPayment = (
        profile: ProfileContext,
        paymentId: string,
        customersOf: (owners: PaymentOwners) => ReadonlyArray<string | null>
      ) =>
        Effect.gen(function*() {
          for (let attempt = 0; attempt < 5; attempt++) {
            const owners = yield* repo.owners(profile.profileId, paymentId)
            if (Option.isNone(owners)) return yield* noSuchPayment()
            yield* identity.lockCustomers(nonNull(customersOf(owners.value)).map((id) => ({ id, profileId: profile.profileId })))
            const locked = yield* repo.lock(profile.profileId, paymentId)
            if (Option.isNone(locked)) return yield* noSuchPayment()
            if (locked.value.customer_id === owners.value.customer_id) return locked.value
          }
          return yield* Effect.die("the payment's customer kept changing while it was being locked")
        })

      /** One history row and one audit row for a change. */
      const recordAction = (
        actor: PrincipalShape,
        profile: ProfileContext,
        payment: LockedPayment,
        action: PaymentAction,
        details: Record<string, unknown>
      ) =>
        Effect.gen(function*() {
          const requestId = yield* CurrentRequestId
          const actionId = yield* repo.insertAction({
            profileId: profile.profileId,
            paymentId: payment.id,
            outcomeEventId: payment.outcome_event_id,
            action,
            ...actorColumns(actor),
            details,
            requestId: requestId === "" ? null : requestId
          })
          yield* audit.record({
            actor,
            action: `payment.${action}`,
            targetKind: "payment",
            targetId: payment.id,
            workspaceId: profile.workspaceId,
            profileId: profile.profileId,
            details: { ...details, payment_action_id: actionId }
          })
        })

      const list = Effect.fn("Payments.list")(function*(profile: ProfileContext, query: PaymentsQueryInput) {
        const limit = query.limit ?? DEFAULT_PAGE_SIZE
        const filters = yield* parseFilters(query)
        const after = yield* paymentCursor(query.cursor)
        // The connect-broker tier reads empty (decision 0026).
        if (!profile.attributionEnabled) return EMPTY_PAGE
        return paymentPage(yield* repo.list(profile.profileId, filters, limit, after), limit, renderPayment)
      })

      const setInstallment = Effect.fn("Payments.setInstallment")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        paymentId: string,
        installment: boolean
      ) {
        return yield* repo.transaction(Effect.gen(function*() {
          const payment = yield* lockPayment(profile, paymentId, (owners) => [owners.customer_id])
          if (payment.installment === installment) return yield* answer(profile, payment.id, false)
          yield* conversions.setInstallment(payment.id, installment)
          const flags = yield* conversions.recomputeFirstPayments(profile.profileId, nonNull([payment.customer_id]))
          yield* recordAction(actor, profile, payment, installment ? "installment_marked" : "installment_unmarked", {
            installment,
            first_payment_flags: flags
          })
          return yield* answer(profile, payment.id, true)
        }))
      })

      const assignPayer = Effect.fn("Payments.assignPayer")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        paymentId: string,
        customerKey: string | null
      ) {
        if (customerKey !== null && blank(customerKey)) {
          return yield* new ValidationError({ message: "body.customer_key: must not be blank" })
        }
        return yield* repo.transaction(Effect.gen(function*() {
          // The payment is the resource of the path: an unknown one answers before an unknown customer.
          if (Option.isNone(yield* repo.owners(profile.profileId, paymentId))) return yield* noSuchPayment()
          let payerId: string | null = null
          if (customerKey !== null) {
            const payer = yield* repo.liveCustomer(profile.profileId, customerKey)
            if (Option.isNone(payer)) {
              return yield* new CustomerNotFound({ message: "No customer of this profile has this customer_key." })
            }
            payerId = payer.value
          }
          const payment = yield* lockPayment(
            profile,
            paymentId,
            (owners) => [owners.customer_id, payerId ?? owners.event_customer_id]
          )
          if (payment.payer_customer_id === payerId) return yield* answer(profile, payment.id, false)
          // The payment belongs to the payer while one is assigned, else to the event's customer.
          const owner = payerId ?? payment.event_customer_id
          const recredit = owner !== payment.customer_id
          // A new owner: the credit rows go and the worker credits it again with its touches.
          yield* (recredit ? conversions.reassignPayment(payment.id, payerId, owner) : conversions.setPayer(payment.id, payerId))
          const flags = yield* conversions.recomputeFirstPayments(profile.profileId, nonNull([payment.customer_id, owner]))
          yield* recordAction(actor, profile, payment, payerId === null ? "payer_cleared" : "payer_assigned", {
            payer_customer_key: customerKey,
            previous_payer_customer_key: payment.payer_customer_key,
            recredited: recredit,
            first_payment_flags: flags
          })
          return yield* answer(profile, payment.id, true)
        }))
      })

      const recordRefund = Effect.fn("Payments.recordRefund")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        paymentId: string,
        input: RefundInput
      ) {
        if (blank(input.reason)) return yield* new ValidationError({ message: "body.reason: must not be blank" })
        const asked = Option.isSome(input.amount) ? Option.some(yield* checkAmount("body.amount", input.amount.value)) : Option.none<string>()
        const reason = input.reason ?? null
        return yield* repo.transaction(Effect.gen(function*() {
          const payment = yield* lockPayment(profile, paymentId, () => [])
          let amount: string | null
          if (payment.value_amount === null) {
            if (Option.isSome(asked)) {
              return yield* new ValidationError({
                message: "body.amount: the payment carries no amount; leave amount out to record it refunded whole"
              })
            }
            amount = null
          } else {
            const paid = decimal(payment.value_amount)
            if (!BigDecimal.isPositive(paid)) {
              return yield* new InvalidState({
                message: "Nothing was paid on this payment (its amount is not more than 0), so there is nothing to refund.",
                reason: "nothing_to_refund"
              })
            }
            if (Option.isSome(asked) && BigDecimal.isGreaterThan(decimal(asked.value), paid)) {
              return yield* new ValidationError({
                message: `body.amount: at most the amount paid (${payment.value_amount} ${payment.currency ?? ""})`.trimEnd()
              })
            }
            amount = Option.getOrElse(asked, () => payment.value_amount ?? "0")
          }
          if (payment.refunded) {
            // A retry of the same refund answers the same; another refund needs the first one undone.
            const same = payment.refund_amount === amount && payment.refund_reason === reason
            if (same) return yield* answer(profile, payment.id, false)
            return yield* new InvalidState({
              message: "A manual refund is already recorded on this payment; undo it (DELETE) before recording another.",
              reason: "already_refunded"
            })
          }
          yield* conversions.setRefund(payment.id, amount, reason)
          yield* recordAction(actor, profile, payment, "refund_recorded", {
            amount,
            currency: payment.currency,
            full: amount === payment.value_amount,
            reason
          })
          return yield* answer(profile, payment.id, true)
        }))
      })

      const applyProviderRefund = Effect.fn("Payments.applyProviderRefund")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        paymentId: string,
        input: { readonly amount: Option.Option<string>; readonly reason: string }
      ) {
        return yield* repo.transaction(Effect.gen(function*() {
          const payment = yield* lockPayment(profile, paymentId, () => [])
          if (payment.value_amount === null || !BigDecimal.isPositive(decimal(payment.value_amount))) {
            return yield* new InvalidState({ message: "Nothing was paid on this payment, so there is nothing to refund.", reason: "nothing_to_refund" })
          }
          const paid = decimal(payment.value_amount)
          const asked = Option.match(input.amount, { onNone: () => paid, onSome: decimal })
          const amount = BigDecimal.isGreaterThan(asked, paid) ? paid : asked
          if (payment.refunded) {
            if (payment.refund_reason !== input.reason) {
              return yield* new InvalidState({
                message: "A manual refund is already recorded on this payment; it stands.",
                reason: "already_refunded"
              })
            }
            const current = payment.refund_amount === null ? paid : decimal(payment.refund_amount)
            if (!BigDecimal.isGreaterThan(amount, current)) return yield* answer(profile, payment.id, false)
          }
          const text = BigDecimal.format(BigDecimal.normalize(amount))
          yield* conversions.setRefund(payment.id, text, input.reason)
          yield* recordAction(actor, profile, payment, "refund_recorded", {
            amount: text,
            currency: payment.currency,
            full: BigDecimal.equals(amount, paid),
            reason: input.reason
          })
          return yield* answer(profile, payment.id, true)
        }))
      })

      const undoRefund = Effect.fn("Payments.undoRefund")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        paymentId: string
      ) {
        return yield* repo.transaction(Effect.gen(function*() {
          const payment = yield* lockPayment(profile, paymentId, () => [])
          if (!payment.refunded) return yield* new NotFound({ message: "This payment has no manual refund to undo." })
          yield* conversions.clearRefund(payment.id)
          yield* recordAction(actor, profile, payment, "refund_undone", {
            amount: payment.refund_amount,
            currency: payment.currency,
            reason: payment.refund_reason
          })
          return yield* answer(profile, payment.id, true)
        }))
      })

      const linkage = Effect.fn("Payments.linkage")(function*(profile: ProfileContext, query: LinkageQueryInput) {
        const limit = query.limit ?? DEFAULT_PAGE_SIZE
        const model: CreditModel = query.model ?? "last_touch"
        const filters = yield* parseFilters({
          ...(query.customer_key === undefined ? {} : { customer_key: query.customer_key }),
          ...(query.start === undefined ? {} : { start: query.start }),
          ...(query.end === undefined ? {} : { end: query.end })
        })
        const after = yield* paymentCursor(query.cursor)
        if (!profile.attributionEnabled) return EMPTY_PAGE
        const rows = yield* repo.linkage(profile.profileId, filters, limit, after, model)
        return paymentPage(rows, limit, (row) => renderLinkage(row, model))
      })

      /**
       * The first card-gateway payment (or connected store's paid order) of a profile whose
       * definitions do not list `payment` creates the built-in definition (cash,
       * attribution-eligible), under the lock definition writes take, so it never breaks the
       * one-meaning rule.
       */
      const ensurePaymentDefinition = Effect.fn("Payments.ensurePaymentDefinition")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        definition: BuiltinPaymentDefinition,
        reason: string
      ) {
        const conflict = () =>
          new InvalidState({
            message:
              `The profile has no event definition listing "payment" and the built-in "${definition.conversionKey}" cannot be created; ` +
              `list "payment" in an event definition (counts_as_cash) first.`,
            reason: "payment_definition_conflict"
          })
        return yield* repo.transaction(Effect.gen(function*() {
          yield* jobs.lockProfile(profile.profileId)
          const state = yield* repo.paymentDefinition(profile.profileId)
          if (state === "event_definition") return
          if (state === "other_definition") return yield* conflict()
          const created = yield* definitions.createCashEventDefinition(
            profile.profileId,
            definition.conversionKey,
            definition.name,
            [CARDGW_EVENT_NAME]
          )
          if (Option.isNone(created)) return yield* conflict()
          yield* audit.record({
            actor,
            action: "conversion_definition.created",
            targetKind: "conversion_definition",
            targetId: created.value,
            workspaceId: profile.workspaceId,
            profileId: profile.profileId,
            details: { conversion_key: definition.conversionKey, built_in: true, reason, replay_job_id: null }
          })
        }))
      })

      const ensureBuiltinPayment = Effect.fn("Payments.ensureBuiltinPayment")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        definition: BuiltinPaymentDefinition,
        reason: string
      ) {
        if ((yield* repo.paymentDefinition(profile.profileId)) !== "event_definition") {
          yield* ensurePaymentDefinition(actor, profile, definition, reason)
        }
      })

      const reportCardgw = Effect.fn("Payments.reportCardgw")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        body: CardgwPayment,
        amountLiteral: Option.Option<string>
      ) {
        if (blank(body.gateway_payment_id)) return yield* new ValidationError({ message: "body.gateway_payment_id: must not be blank" })
        const literal = typeof body.amount === "string" ? Option.some(body.amount) : amountLiteral
        if (Option.isNone(literal)) return yield* Effect.die("amount is a number but its literal was not read")
        const amount = yield* checkAmount("body.amount", literal.value)
        let subjectRef: string | null = null
        if (body.subject_ref !== undefined) {
          const verdict = checkSubjectRef(body.subject_ref)
          if (!verdict.ok) {
            return yield* verdict.personalData
              ? new InvalidParameter({
                message:
                  `body.subject_ref: looks like ${verdict.looksLike}; subject_ref is never personal data, send an opaque id (a UUID or a short token)`,
                reason: "subject_ref_personal_data"
              })
              : new ValidationError({ message: `body.subject_ref: ${verdict.message}` })
          }
          subjectRef = verdict.value
        }
        if (blank(body.customer.external_id)) {
          return yield* new ValidationError({ message: "body.customer.external_id: must not be blank" })
        }
        if (blank(body.description)) return yield* new ValidationError({ message: "body.description: must not be blank" })
        let phone: string | null = null
        if (body.customer.phone !== undefined) {
          const normalized = normalizePhone(body.customer.phone)
          if (Result.isFailure(normalized)) return yield* new ValidationError({ message: `body.customer.phone: ${normalized.failure}` })
          phone = normalized.success
        }
        const checked: CheckedEvent = {
          eventName: "payment",
          idempotencyKey: `${CARDGW_KEY_PREFIX}${body.gateway_payment_id}`,
          occurredAt: body.occurred_at,
          valueAmount: amount,
          currency: body.currency,
          subjectRef,
          orderGroup: null,
          externalId: body.customer.external_id ?? null,
          email: body.customer.email === undefined ? null : normalizeEmail(body.customer.email),
          phone,
          crmContactId: null,
          nationalIdHash: null,
          anonymousId: null,
          actionSource: null,
          clickIds: {}
        }
        // "The same request": the body as sent, normalised; the defaults (occurred_at) are not filled in.
        const hash = sha256(canonicalJson({
          source: CARDGW_ORIGIN.source,
          gateway_payment_id: body.gateway_payment_id,
          amount,
          currency: body.currency,
          occurred_at: body.occurred_at ?? null,
          subject_ref: subjectRef,
          external_id: checked.externalId,
          email: checked.email,
          phone: checked.phone,
          description: body.description ?? null
        }))
        // A repeat answers what the first call stored, whatever the definitions say now.
        const key = checked.idempotencyKey ?? ""
        if (Option.isNone(yield* conversions.findEvent(profile.profileId, key))) {
          yield* ensureBuiltinPayment(actor, profile, CARDGW_DEFINITION, "cardgw_first_use")
        }
        const recorded = yield* events.record(profile, checked, hash, CARDGW_ORIGIN).pipe(
          Effect.catchTag("IdempotencyKeyConflict", () =>
            Effect.fail(
              new IdempotencyKeyConflict({
                message: "This gateway_payment_id already recorded a different payment; the first one stands."
              })
            ))
        )
        return { outcome_event_id: recorded.outcome_event_id, payment_id: recorded.conversion_id }
      })

      return { list, setInstallment, assignPayer, recordRefund, applyProviderRefund, undoRefund, linkage, reportCardgw, ensureBuiltinPayment }
    })
  ).pipe(Layer.provide([PaymentsRepo.layer, Conversions.layer, Definitions.layer, AttributionJobs.layer, IdentityIntake.layer, EventsService.layer, AuditLog.layer]))
}
