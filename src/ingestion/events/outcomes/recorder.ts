/**
 * Records outcomes with group commit (decision 0036). Each `record` call waits for its outcome's
 * transaction to commit, and answers only then. Calls that arrive while the writers are busy are
 * recorded together: a fixed number of set-based statements and one commit per batch, instead of
 * about fourteen round trips and a commit each. When a batch fails, every outcome in it is
 * recorded again on its own, so one bad row never fails its neighbours.
 *
 * Each outcome gets exactly what recording it alone would give. Its key is claimed first; a key
 * taken earlier (or by an earlier call in the same batch) answers what is stored under it. Then
 * its customer is resolved, its conversion written, the first payments of its customer
 * recomputed, and its `outcome.recorded` outbox row written, all in the same transaction.
 */
import { Clock, Context, Effect, Exit, Layer, Metric, Option, Tracer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { type DatabaseUnavailable, IdempotencyKeyConflict, InvalidState } from "../../../../schema/errors.ts"
import { isHealthcareFamily } from "../../../../schema/scopes.ts"
import type { ProfileContext } from "../../../kernel/principal.ts"
import { resolveCustomers } from "../customers.ts"
import {
  arrivingAfterStored,
  Conversions,
  firstPaymentsWithAdded,
  newPaymentsOf,
  type NewConversion,
  type NewEvent,
  type StoredEvent
} from "../../../attribution/conversions/service.ts"
import { Touches } from "../../../attribution/touches/service.ts"
import { IdentityIntake } from "../../../identity/intake.ts"
import { type NewOutboxRow, OutboxRepo } from "../../../kernel/outbox/repo.ts"
import { type ProfileScoped, profileScoped } from "../../../kernel/profile-scoped.ts"
import { orDatabaseUnavailable, retryConflicts } from "../../../platform/database.ts"
import { groupCommit } from "../../../platform/group-commit.ts"
import { recorderBatchSize, recorderCommitDuration, timed } from "../../../platform/metrics.ts"
import { currentTraceContext, type TraceContext } from "../../../platform/tracing.ts"

export const OUTCOME_RECORDED = "outcome.recorded"
/** `data.provider` of outcomes ingested through this API. */
export const API_PROVIDER = "svc"

export interface Ingested {
  readonly outcome_event_id: string
  readonly conversion_id: string | null
}

/**
 * Where an outcome came from: its event's `source` and the `data.provider` of its
 * `outcome.recorded` row. Card-gateway payments are `cardgw` / `cardgw` (decision 0032).
 */
export interface OutcomeOrigin {
  readonly source: string
  readonly provider: string
}

export const API_ORIGIN: OutcomeOrigin = { source: "api", provider: API_PROVIDER }

/** The checked, normalised fields of an outcome. */
export interface CheckedEvent {
  readonly eventName: string
  readonly idempotencyKey: string | undefined
  readonly occurredAt: string | undefined
  readonly valueAmount: string | null
  readonly currency: string | null
  readonly subjectRef: string | null
  readonly orderGroup: string | null
  readonly externalId: string | null
  readonly email: string | null
  readonly phone: string | null
  readonly crmContactId: string | null
  /** The keyed hash of the national id (SecretBox.keyedHash("national_id", ...)); the id itself is never kept. */
  readonly nationalIdHash: string | null
  readonly anonymousId: string | null
  readonly actionSource: string | null
  readonly clickIds: Readonly<Record<string, string>>
}

export type RecordError = IdempotencyKeyConflict | InvalidState

/** One outcome waiting for its batch. */
interface Pending {
  readonly profile: ProfileContext
  readonly checked: CheckedEvent
  readonly requestHash: string
  readonly origin: OutcomeOrigin
  readonly span: Option.Option<Tracer.AnySpan>
  /** The request's W3C trace context, stored with its outbox row. */
  readonly trace: Option.Option<TraceContext>
}

/** Writers running at once (each holds one pooled connection while it writes). */
export const RECORD_WRITERS = 2
/** Most outcomes in one transaction. */
export const MAX_BATCH = 256
/** Outcomes waiting before `record` itself waits for room (backpressure onto the requests). */
const QUEUE_CAPACITY = 4096

/** The answer stored under a key taken earlier (or concurrently, or earlier in the batch). */
const replayAnswer = (stored: StoredEvent | undefined, requestHash: string): Exit.Exit<Ingested, RecordError> => {
  if (stored === undefined) return Exit.die("idempotency key taken but no event stored under it")
  if (stored.retracted) {
    return Exit.fail(
      new InvalidState({
        message: "The event stored under this idempotency_key was retracted; send a new key to record a new event.",
        reason: "event_retracted"
      })
    )
  }
  if (stored.request_hash !== requestHash) {
    return Exit.fail(
      new IdempotencyKeyConflict({ message: "This idempotency_key already recorded a different event; the first event stands." })
    )
  }
  return Exit.succeed({ outcome_event_id: stored.id, conversion_id: stored.conversion_id })
}

export class OutcomeRecorder extends Context.Service<OutcomeRecorder, {
  /**
   * Records one outcome, idempotent on its key with `requestHash` saying what "the same request"
   * is; answers once its transaction committed.
   */
  readonly record: (
    profile: ProfileContext,
    checked: CheckedEvent,
    requestHash: string,
    origin: OutcomeOrigin
  ) => Effect.Effect<Ingested, DatabaseUnavailable | RecordError>
}>()("svc/OutcomeRecorder") {
  static readonly layer = Layer.effect(OutcomeRecorder)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const repo = yield* Conversions
      const identity = yield* IdentityIntake
      const outboxRepo = yield* OutboxRepo
      const resolution = { identity, touches: yield* Touches, conversions: repo }

      /** One transaction for the whole batch: an answer per outcome, in order. */
      const recordBatch = (batch: ReadonlyArray<Pending>) =>
        Effect.gen(function*() {
          // Read before the transaction, in one statement: nothing here is written by the batch, and
          // each statement of a READ COMMITTED transaction reads what is committed when it starts anyway.
          const names = new Map<string, ProfileScoped>()
          for (const { checked, profile } of batch) {
            names.set(profileScoped(profile.profileId, checked.eventName), { profileId: profile.profileId, name: checked.eventName })
          }
          const { definitions, profiles: facts } = yield* repo.ingestFacts(batch.map((item) => item.profile.profileId), [...names.values()])
          const now = new Date(yield* Clock.currentTimeMillis).toISOString()
          const entries = batch.map((item) => {
            const { checked, profile } = item
            const profileFacts = facts.get(profile.profileId)
            const event: NewEvent = {
              id: crypto.randomUUID(),
              profileId: profile.profileId,
              source: item.origin.source,
              idempotencyKey: checked.idempotencyKey ?? crypto.randomUUID(),
              requestHash: item.requestHash,
              eventName: checked.eventName,
              occurredAt: checked.occurredAt ?? now,
              valueAmount: checked.valueAmount,
              // A value sent without a currency is in the profile's currency.
              currency: checked.currency ?? (checked.valueAmount !== null ? profileFacts?.currency ?? null : null),
              subjectRef: checked.subjectRef,
              orderGroup: checked.orderGroup,
              actionSource: checked.actionSource,
              clickIds: checked.clickIds
            }
            return { item, event }
          })
          return yield* retryConflicts(orDatabaseUnavailable(sql.withTransaction(Effect.gen(function*() {
            // Keys are claimed first, before anything else is written or locked: a concurrent
            // batch holding one of them makes this one wait, then this one reads what it stored.
            // Within the batch, the first outcome under a key claims it; the others replay it.
            const firstUnderKey = new Map<string, NewEvent>()
            for (const { event } of entries) {
              const key = profileScoped(event.profileId, event.idempotencyKey)
              if (!firstUnderKey.has(key)) firstUnderKey.set(key, event)
            }
            const claimed = yield* repo.claimEvents([...firstUnderKey.values()])
            const fresh = entries.flatMap(({ event, item }) => {
              const occurredAt = claimed.get(event.id)
              return occurredAt === undefined ? [] : [{ event, item, occurredAt }]
            })

            const customers = yield* resolveCustomers(
              resolution,
              fresh.map(({ event, item }) => ({
                profileId: event.profileId,
                traits: {
                  externalId: item.checked.externalId,
                  email: item.checked.email,
                  phone: item.checked.phone,
                  crmContactId: item.checked.crmContactId,
                  nationalIdHash: item.checked.nationalIdHash,
                  anonymousId: item.checked.anonymousId
                }
              }))
            )
            const planned = fresh.flatMap(({ event, occurredAt }, index) => {
              const definition = definitions.get(profileScoped(event.profileId, event.eventName))
              return definition === undefined ? [] : [{ id: crypto.randomUUID(), event, occurredAt, definition, customerId: customers[index] ?? null }]
            })
            // First payments are flagged before the insert, from the customers' stored payments (read
            // under the locks resolveCustomers took), so no new row is inserted and then updated. Only
            // each stream's first payment is read, unless a payment arrives back-dated (decision 0159).
            const withCustomer = planned.flatMap((conversion) => conversion.customerId === null ? [] : [{ ...conversion, customerId: conversion.customerId }])
            const added = withCustomer.map((conversion, index) => ({
              id: conversion.id,
              customer_id: conversion.customerId,
              occurred_at: conversion.occurredAt,
              created_at: arrivingAfterStored(index),
              subject_ref: conversion.event.subjectRef,
              order_group: conversion.event.orderGroup,
              counts_as_cash: conversion.definition.counts_as_cash,
              installment: false,
              is_first_payment: null
            }))
            const firstPayments = firstPaymentsWithAdded(yield* repo.paymentAnchorsOf(newPaymentsOf(added)), added)
            const conversions = planned.map(({ customerId, definition, event, id }): NewConversion => ({
              id,
              event,
              definition,
              customerId,
              // With no customer there is nothing to repeat: a payment is a first one.
              isFirstPayment: customerId === null ? (definition.counts_as_cash ? true : null) : firstPayments.added.get(id) ?? null
            }))
            yield* repo.writeOutcomes({
              eventCustomers: fresh.flatMap(({ event, occurredAt }, index) => {
                const customerId = customers[index] ?? null
                return customerId === null ? [] : [{ eventId: event.id, profileId: event.profileId, occurredAt, customerId }]
              }),
              conversions,
              flagChanges: firstPayments.changed
            })
            const conversionOf = new Map(conversions.map((conversion) => [conversion.event.id, conversion.id] as const))

            // A customer found by external_id holds it as its key: only the others are read.
            const keys = yield* identity.customerKeys(
              fresh.flatMap(({ item }, index) => {
                const customerId = customers[index] ?? null
                return customerId !== null && item.checked.externalId === null ? [customerId] : []
              })
            )
            const outbox = fresh.map(({ event, item, occurredAt }, index): NewOutboxRow => {
              const customerId = customers[index] ?? null
              const profileFacts = facts.get(event.profileId)
              const id = crypto.randomUUID()
              return {
                id,
                profileId: event.profileId,
                topic: OUTCOME_RECORDED,
                trace: Option.getOrUndefined(item.trace),
                payload: {
                  id,
                  type: OUTCOME_RECORDED,
                  created_at: now,
                  data: {
                    provider: item.origin.provider,
                    outcome_type: event.eventName,
                    occurred_at: occurredAt,
                    customer_key: customerId === null ? null : item.checked.externalId ?? keys.get(customerId) ?? null,
                    value: event.valueAmount,
                    currency: event.currency,
                    outcome_event_id: event.id,
                    conversion_id: conversionOf.get(event.id) ?? null
                  },
                  // For delivery (the webhooks issue), never sent as is: who may receive it, and the
                  // customer whose contact the app's grant may open at delivery time (no person data here).
                  delivery: {
                    profile_id: event.profileId,
                    provisioned_by_app_id: profileFacts?.provisioned_by_app_id ?? null,
                    healthcare_family: profileFacts === undefined ? false : isHealthcareFamily(profileFacts),
                    customer_id: customerId
                  }
                }
              }
            })
            yield* outboxRepo.insert(outbox)

            const stored = yield* repo.findEvents(
              entries.flatMap(({ event }) => claimed.has(event.id) ? [] : [{ profileId: event.profileId, name: event.idempotencyKey }])
            )
            return entries.map(({ event, item }): Exit.Exit<Ingested, RecordError> =>
              claimed.has(event.id)
                ? Exit.succeed({ outcome_event_id: event.id, conversion_id: conversionOf.get(event.id) ?? null })
                : replayAnswer(stored.get(profileScoped(event.profileId, event.idempotencyKey)), item.requestHash)
            )
          }))))
        }).pipe(
          // Batch size and commit latency: how well group commit is batching (docs/runbook.md).
          Effect.tap(() => Metric.update(recorderBatchSize, batch.length)),
          timed(recorderCommitDuration, ({ ok }) => ({ "svc.outcome": ok ? "committed" : "failed" })),
          Effect.withSpan("Events.recordBatch", {
            attributes: { "svc.events.batch_size": batch.length },
            links: batch.flatMap((item) => Option.isSome(item.span) ? [{ span: item.span.value, attributes: {} }] : [])
          })
        )

      const submit = yield* groupCommit({
        writers: RECORD_WRITERS,
        maxBatch: MAX_BATCH,
        capacity: QUEUE_CAPACITY,
        write: recordBatch,
        batchFailed: "an outcome batch failed; recording its outcomes one at a time"
      })

      const record = Effect.fn("Events.record")(function*(
        profile: ProfileContext,
        checked: CheckedEvent,
        requestHash: string,
        origin: OutcomeOrigin
      ) {
        const span = yield* Effect.option(Effect.currentSpan)
        const trace = yield* currentTraceContext
        return yield* submit({ profile, checked, requestHash, origin, span, trace })
      })

      return { record }
    })
  ).pipe(Layer.provide([Conversions.layer, Touches.layer, IdentityIntake.layer, OutboxRepo.layer]))
}
