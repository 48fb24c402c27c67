/**
 * Journeys, the customer and visitor lists, and erasure (decision 0038).
 *
 * Two shapes of journey: without `customers:read` (or on a healthcare-family profile, where
 * person reads are never answered, S5.5) every row is the spec's projected row; with it, the
 * full row, and the read is written to the workspace's PII access log.
 */
import { Context, Effect, Layer, Option } from "effect"
import { createHash } from "node:crypto"
import { isUuid } from "../../../schema/common.ts"
import type {
  ConversionJourney,
  CreateErasure,
  CustomerListItem,
  ErasureReceipt,
  JourneyPerson,
  JourneyPageQuery,
  JourneyRow,
  PersonJourney,
  PersonJourneyQuery,
  Visitor
} from "../../../schema/customers.ts"
import {
  ApiKeyRequired,
  ConversionNotFound,
  CustomerNotFound,
  type DatabaseUnavailable,
  ErasureNotFound,
  InsufficientScope,
  InvalidParameter,
  InvalidState
} from "../../../schema/errors.ts"
import type { CreditModel } from "../../../schema/events.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import { PiiAccessLog } from "../../kernel/audit/pii-access.ts"
import { heldScopes, type PrincipalShape, type ProfileContext } from "../../kernel/principal.ts"
import { pageOf, parseCursor } from "../../platform/pagination.ts"
import { normalizeEmail, phoneForLookup } from "../normalize.ts"
import { HealthcareCheck } from "../../accounts/healthcare.ts"
import { isIsoDateTime } from "../../../schema/events.ts"
import { Touches } from "../../attribution/touches/service.ts"
import { OutboxRepo } from "../../kernel/outbox/repo.ts"
import { Conversions } from "../../attribution/conversions/service.ts"
import { IdentityRepo } from "../repo.ts"
import { DeclaredSourcesRepo } from "../declared-sources/repo.ts"
import {
  type CustomerRow,
  CustomersRepo,
  type ErasureCounts,
  type ErasureRow,
  type Keyset,
  type StoredRow,
  type VisitorRow
} from "./repo.ts"
import { DEFAULT_JOURNEY_PAGE } from "../../../schema/customers.ts"

export { DEFAULT_JOURNEY_PAGE, MAX_JOURNEY_PAGE } from "../../../schema/customers.ts"
/** `meta.person.conversions`: the newest this many. */
export const PERSON_CONVERSIONS = 50

/** A page's parameters, decoded by the contract (`JourneyPageQuery`; the lists send no `model`). */
export type PageInput = JourneyPageQuery
export type PersonSelector = PersonJourneyQuery

interface PageParams {
  readonly limit: number
  readonly model: CreditModel
  readonly after: Option.Option<Keyset>
}

/** The page's limit and model (decoded), and its cursor, which only the server can read. */
const pageParams = (input: PageInput): Effect.Effect<PageParams, InvalidParameter> => {
  const limit = input.limit ?? DEFAULT_JOURNEY_PAGE
  const model: CreditModel = input.model ?? "last_touch"
  return Effect.map(
    parseCursor(input.cursor, (keyset) => isIsoDateTime(keyset.createdAt) && keyset.id !== ""),
    (keyset): PageParams => ({ limit, model, after: Option.map(keyset, (k) => ({ at: k.createdAt, id: k.id })) })
  )
}

/** The page of rows, rendered, and the cursor after its last row. */
const paged = <Row, Item>(rows: ReadonlyArray<Row>, limit: number, keyOf: (row: Row) => Keyset, render: (row: Row) => Item) => {
  const { page, pagination } = pageOf(rows, limit, (row) => ({ createdAt: keyOf(row).at, id: keyOf(row).id }))
  return { data: page.map(render), pagination }
}


const JOIN_METHODS = ["ctwa_referral", "click_id", "link_token", "anonymous_id"] as const
const KINDS = ["web_touch", "synthetic", "organic_interaction", "inherited", "proxy_click", "outcome"] as const

const renderRow = (row: StoredRow, model: CreditModel, full: boolean): JourneyRow => {
  const share = row.credit_share === null ? 0 : Number(row.credit_share)
  const projected: JourneyRow = {
    touch_id: row.id,
    kind: KINDS.find((kind) => kind === row.kind) ?? "web_touch",
    at: row.at,
    channel: row.channel,
    source: row.source,
    medium: row.medium,
    campaign: row.kind === "outcome" ? null : { external_id: row.campaign_external_id, name: row.campaign_name },
    ad_set: row.kind === "outcome" ? null : { external_id: row.ad_set_external_id, name: row.ad_set_name },
    ad: row.kind === "outcome"
      ? null
      : { external_id: row.ad_external_id, name: row.ad_name, creative_thumbnail_url: row.creative_thumbnail_url },
    click_id_kind: row.click_id_kind,
    join_method: JOIN_METHODS.find((method) => method === row.join_method) ?? null,
    is_credited: row.is_credited,
    credit_share: share,
    credit_model: model,
    in_window: row.in_window
  }
  if (!full) return projected
  return {
    ...projected,
    customer_profile_id: row.customer_id,
    url: row.url,
    path: row.path,
    referrer_domain: row.referrer_domain,
    event_payload: row.payload,
    device: row.device,
    browser: row.browser,
    os: row.os,
    country: row.country,
    city: row.city,
    session_id: row.session_id,
    anonymous_id: row.anonymous_id
  }
}

const rowKeyset = (row: StoredRow): Keyset => ({ at: row.at, id: row.id })

const renderCustomer = (row: CustomerRow): CustomerListItem => ({
  customer_profile_id: row.id,
  customer_key: row.customer_key,
  first_name: row.first_name,
  last_name: row.last_name,
  identifiers: row.identifiers,
  conversion_count: row.conversion_count,
  touch_count: row.touch_count,
  first_touch_at: row.first_touch_at,
  last_touch_at: row.last_touch_at,
  created_at: row.created_at
})

const renderVisitor = (row: VisitorRow): Visitor => ({
  anonymous_id: row.anonymous_id,
  first_seen_at: row.first_seen_at,
  last_seen_at: row.last_seen_at,
  touch_count: row.touch_count,
  customer_profile_id: row.customer_id,
  customer_key: row.customer_key,
  channel: row.channel,
  device: row.device,
  browser: row.browser,
  os: row.os,
  country: row.country,
  last_url: row.last_url
})

const renderReceipt = (row: ErasureRow): ErasureReceipt => ({
  erasure_id: row.id,
  request_ref: row.request_ref,
  status: row.status,
  customer_key: row.customer_key,
  reason: row.reason,
  requested_at: row.requested_at,
  completed_at: row.completed_at
})

/** A selector as matched: emails lower-cased and trimmed, everything else trimmed (as ingest stores them). */
interface Selector {
  readonly type: "external_id" | "email" | "phone" | "crm_contact_id" | "anonymous_id"
  readonly value: string
}

const selectorOf = (body: CreateErasure): Effect.Effect<Selector, InvalidParameter> => {
  const given: Array<Selector> = []
  if (body.customer_key !== undefined) given.push({ type: "external_id", value: body.customer_key.trim() })
  if (body.email !== undefined) given.push({ type: "email", value: normalizeEmail(body.email) })
  if (body.phone !== undefined) given.push({ type: "phone", value: phoneForLookup(body.phone) })
  if (body.identifier !== undefined) {
    const raw = body.identifier.value
    const value = body.identifier.type === "email"
      ? normalizeEmail(raw)
      : body.identifier.type === "phone"
      ? phoneForLookup(raw)
      : raw.trim()
    given.push({ type: body.identifier.type, value })
  }
  const only = given[0]
  if (given.length !== 1 || only === undefined || only.value === "") {
    return Effect.fail(
      new InvalidParameter({
        message: "body: send exactly one selector: customer_key, email, phone or identifier {type, value}.",
        reason: given.length === 0 ? "no_selector" : "selector"
      })
    )
  }
  return Effect.succeed(only)
}

const selectorDigest = (erasureId: string, selector: Selector) =>
  createHash("sha256").update(`${erasureId}\u0000${selector.type}\u0000${selector.value}`, "utf8").digest("hex")

export class CustomersService extends Context.Service<CustomersService, {
  readonly conversionJourney: (
    principal: PrincipalShape,
    profile: ProfileContext,
    id: string,
    input: PageInput
  ) => Effect.Effect<ConversionJourney, DatabaseUnavailable | InvalidParameter | ConversionNotFound | InvalidState>
  readonly personJourney: (
    principal: PrincipalShape,
    profile: ProfileContext,
    input: PersonSelector
  ) => Effect.Effect<PersonJourney, DatabaseUnavailable | InvalidParameter | InsufficientScope | CustomerNotFound>
  readonly customerJourney: (
    principal: PrincipalShape,
    profile: ProfileContext,
    customerId: string,
    input: PageInput
  ) => Effect.Effect<PersonJourney, DatabaseUnavailable | InvalidParameter | InsufficientScope | CustomerNotFound>
  readonly listCustomers: (
    profile: ProfileContext,
    input: PageInput
  ) => Effect.Effect<{ data: ReadonlyArray<CustomerListItem>; pagination: { has_next: boolean; cursor: string | null } }, DatabaseUnavailable | InvalidParameter | InsufficientScope>
  readonly listVisitors: (
    profile: ProfileContext,
    input: PageInput
  ) => Effect.Effect<{ data: ReadonlyArray<Visitor>; pagination: { has_next: boolean; cursor: string | null } }, DatabaseUnavailable | InvalidParameter | InsufficientScope>
  readonly erase: (
    principal: PrincipalShape,
    profile: ProfileContext,
    body: CreateErasure
  ) => Effect.Effect<ErasureReceipt, DatabaseUnavailable | ApiKeyRequired | InvalidParameter | CustomerNotFound>
  readonly erasure: (profile: ProfileContext, erasureId: string) => Effect.Effect<ErasureReceipt, DatabaseUnavailable | ErasureNotFound>
}>()("svc/CustomersService") {
  static readonly layer = Layer.effect(CustomersService)(
    Effect.gen(function*() {
      const repo = yield* CustomersRepo
      const events = yield* Conversions
      const touches = yield* Touches
      const declaredSources = yield* DeclaredSourcesRepo
      const identity = yield* IdentityRepo
      const outbox = yield* OutboxRepo
      const piiLog = yield* PiiAccessLog
      const audit = yield* AuditLog
      const healthcare = yield* HealthcareCheck

      /** The principal may read person data here: it holds `customers:read` and the profile is not healthcare-family. */
      const readsPeople = (principal: PrincipalShape, profile: ProfileContext) =>
        heldScopes(principal).includes("customers:read")
          ? Effect.map(healthcare.isHealthcareFamily(profile.profileId), (family) => !family)
          : Effect.succeed(false)

      const logPersonRead = (principal: PrincipalShape, profile: ProfileContext, route: string) =>
        piiLog.record({ principal, workspaceId: profile.workspaceId, profileId: profile.profileId, route, result: "allowed" })

      const refuseOnHealthcare = healthcare.refuse

      const conversionJourney = Effect.fn("Customers.conversionJourney")(function*(
        principal: PrincipalShape,
        profile: ProfileContext,
        id: string,
        input: PageInput
      ) {
        const params = yield* pageParams(input)
        const full = yield* readsPeople(principal, profile)
        const found = yield* repo.findConversion(profile.profileId, id, isUuid(id) ? id.toLowerCase() : null)
        if (Option.isNone(found)) {
          return yield* new ConversionNotFound({ message: "No live conversion has this id or idempotency key in this profile." })
        }
        const conversion = found.value
        if (full && conversion.customer_id === null) {
          return yield* new InvalidState({
            message: "This conversion was ingested with no identity at all: there is no person whose journey to read.",
            reason: "conversion_without_identity"
          })
        }
        const meta = {
          conversion: {
            outcome_event_id: conversion.outcome_event_id,
            conversion_key: conversion.conversion_key,
            occurred_at: conversion.occurred_at,
            value_amount: conversion.value_amount,
            currency: conversion.currency,
            credit_model: params.model,
            customer_key: conversion.customer_key,
            ...(full ? { customer_profile_id: conversion.customer_id } : {})
          }
        }
        if (conversion.customer_id === null) return { data: [], meta, pagination: { has_next: false, cursor: null } }
        const customerIds = yield* repo.mergedSet(conversion.customer_id)
        const rows = yield* repo.journeyRows({
          profileId: profile.profileId,
          person: conversion.customer_id,
          customerIds,
          model: params.model,
          conversion: Option.some({ id: conversion.conversion_id, outcomeEventId: conversion.outcome_event_id, at: conversion.occurred_at }),
          after: params.after,
          limit: params.limit
        })
        if (full) yield* logPersonRead(principal, profile, "GET /api/v1/conversions/:id/journey")
        return { ...paged(rows, params.limit, rowKeyset, (row) => renderRow(row, params.model, full)), meta }
      })

      /** A person's journey: every touch and outcome of the customer and those merged into it, oldest first. */
      const journeyOf = Effect.fnUntraced(function*(
        principal: PrincipalShape,
        profile: ProfileContext,
        customerId: string,
        params: PageParams,
        full: boolean,
        /** Where to log a full read from; null when the operation's policy logs every call already. */
        route: string | null
      ) {
        const customerIds = yield* repo.mergedSet(customerId)
        const rows = yield* repo.journeyRows({
          profileId: profile.profileId,
          person: customerId,
          customerIds,
          model: params.model,
          conversion: Option.none(),
          after: params.after,
          limit: params.limit
        })
        const facts = yield* repo.personFacts(customerId, customerIds)
        const conversions = yield* repo.personConversions(customerIds, PERSON_CONVERSIONS)
        const person: JourneyPerson = {
          customer_key: facts.customer_key,
          conversion_count: facts.conversion_count,
          touch_count: facts.touch_count,
          first_touch_at: facts.first_touch_at,
          last_touch_at: facts.last_touch_at,
          conversions,
          ...(full
            ? {
              customer_profile_id: customerId,
              first_name: facts.first_name,
              last_name: facts.last_name,
              identifiers: yield* repo.identifiersOf(customerIds)
            }
            : {})
        }
        if (full && route !== null) yield* logPersonRead(principal, profile, route)
        return { ...paged(rows, params.limit, rowKeyset, (row) => renderRow(row, params.model, full)), meta: { person } }
      })

      const notFound = () =>
        new CustomerNotFound({ message: "No customer of this profile matches: unknown, erased, or another profile's." })

      const personJourney = Effect.fn("Customers.personJourney")(function*(
        principal: PrincipalShape,
        profile: ProfileContext,
        input: PersonSelector
      ) {
        const params = yield* pageParams(input)
        const selectors = (["customer_key", "email", "phone"] as const).filter((name) => input[name] !== undefined)
        if (selectors.length !== 1) {
          return yield* new InvalidParameter({
            message: "query: send exactly one of customer_key, email or phone.",
            reason: selectors.length === 0 ? "no_selector" : "selector"
          })
        }
        const name = selectors[0] ?? "customer_key"
        // Not blank (the contract refuses that); the edges' white space is not part of the key.
        const value = (input[name] ?? "").trim()
        const full = yield* readsPeople(principal, profile)
        if (name !== "customer_key" && !full) {
          return yield* new InsufficientScope({
            message: `Looking a person up by ${name} needs customers:read (not answered on healthcare-family profiles); use customer_key.`,
            reason: "customers_read_required"
          })
        }
        const found = name === "customer_key"
          ? yield* repo.customerByKey(profile.profileId, value)
          : yield* repo.customerByIdentifier(profile.profileId, name, name === "email" ? normalizeEmail(value) : phoneForLookup(value))
        if (Option.isNone(found)) return yield* notFound()
        const survivor = yield* repo.survivorOf(profile.profileId, found.value)
        if (Option.isNone(survivor)) return yield* notFound()
        return yield* journeyOf(principal, profile, survivor.value, params, full, "GET /api/v1/customers/journey")
      })

      const customerJourney = Effect.fn("Customers.customerJourney")(function*(
        principal: PrincipalShape,
        profile: ProfileContext,
        customerId: string,
        input: PageInput
      ) {
        const params = yield* pageParams(input)
        yield* refuseOnHealthcare(profile)
        if (!isUuid(customerId)) return yield* notFound()
        const survivor = yield* repo.survivorOf(profile.profileId, customerId.toLowerCase())
        if (Option.isNone(survivor)) return yield* notFound()
        return yield* journeyOf(principal, profile, survivor.value, params, true, null)
      })

      const listCustomers = Effect.fn("Customers.list")(function*(profile: ProfileContext, input: PageInput) {
        const params = yield* pageParams(input)
        yield* refuseOnHealthcare(profile)
        const rows = yield* repo.listCustomers(profile.profileId, params.after, params.limit)
        return paged(rows, params.limit, (row) => ({ at: row.created_at, id: row.id }), renderCustomer)
      })

      const listVisitors = Effect.fn("Customers.listVisitors")(function*(profile: ProfileContext, input: PageInput) {
        const params = yield* pageParams(input)
        yield* refuseOnHealthcare(profile)
        const rows = yield* repo.listVisitors(profile.profileId, params.after, params.limit)
        return paged(rows, params.limit, (row) => ({ at: row.last_seen_at, id: row.anonymous_id }), renderVisitor)
      })

      const customerOf = (profile: ProfileContext, selector: Selector) => {
        switch (selector.type) {
          case "external_id":
            return repo.customerByKey(profile.profileId, selector.value)
          case "anonymous_id":
            return repo.customerByAnonymousId(profile.profileId, selector.value)
          default:
            return repo.customerByIdentifier(profile.profileId, selector.type, selector.value)
        }
      }

      /** The receipt already under this request_ref: the same selector answers it, another is refused. */
      const repeatOf = (existing: ErasureRow, selector: Selector) =>
        existing.selector_digest === selectorDigest(existing.id, selector)
          ? Effect.succeed(renderReceipt(existing))
          : Effect.fail(
            new InvalidParameter({
              message: "body.request_ref: this request_ref already erased another customer; send a new request_ref.",
              reason: "request_ref_reused"
            })
          )

      /**
       * Erases the customers (a survivor and the customers merged into it), in the caller's
       * transaction: deletes their personal data and unlinks their conversions, events and
       * touches, which stay without a person. Each table's owner runs its part.
       */
      const eraseCustomers = (erasureId: string, profileId: string, ids: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          yield* repo.lockCustomers(ids.map((id) => ({ id, profileId })))
          const conversions = yield* events.forgetConversionsOf(ids)
          const eventCount = yield* events.forgetEventsOf(ids)
          // The person's browsers: every touch of theirs, and every other touch from the same anonymous ids.
          const touchCount = yield* touches.forgetCustomers(ids)
          const declared = yield* declaredSources.deleteDeclaredSourcesOf(ids)
          const identifiers = yield* repo.deleteIdentifiers(ids)
          yield* identity.deleteLinksOf(ids)
          yield* identity.forgetProposalsOf(ids)
          yield* outbox.forgetCustomers(ids)
          yield* repo.markErased(ids)
          const counts: ErasureCounts = { conversions, events: eventCount, touches: touchCount, identifiers, declared_sources: declared }
          yield* repo.completeErasure(erasureId, counts)
          return counts
        })

      const erase = Effect.fn("Customers.erase")(function*(principal: PrincipalShape, profile: ProfileContext, body: CreateErasure) {
        // An internal service's credential stands where the profile's key would (decision 0081).
        if (principal.kind !== "api_key" && principal.kind !== "service") {
          return yield* new ApiKeyRequired({ message: "Erasure is requested with an API key of the profile, not a session or token." })
        }
        const selector = yield* selectorOf(body)
        const existing = yield* repo.findErasure(profile.profileId, body.request_ref)
        if (Option.isSome(existing)) return yield* repeatOf(existing.value, selector)
        const found = yield* customerOf(profile, selector)
        if (Option.isNone(found)) return yield* notFound()
        const survivor = yield* repo.survivorOf(profile.profileId, found.value)
        if (Option.isNone(survivor)) return yield* notFound()
        const erasureId = crypto.randomUUID()
        const claimed = yield* repo.transaction(Effect.gen(function*() {
          const claimed = yield* repo.claimErasure({
            id: erasureId,
            profileId: profile.profileId,
            requestRef: body.request_ref,
            customerId: survivor.value,
            reason: body.reason ?? null,
            selectorDigest: selectorDigest(erasureId, selector)
          })
          if (!claimed) return false
          const counts = yield* eraseCustomers(erasureId, profile.profileId, yield* repo.mergedSet(survivor.value))
          yield* audit.record({
            actor: principal,
            action: "customer.erased",
            targetKind: "customer_erasure",
            targetId: erasureId,
            workspaceId: profile.workspaceId,
            profileId: profile.profileId,
            details: { request_ref: body.request_ref, counts }
          })
          return true
        }))
        // A concurrent request took the ref first: answer as a repeat of it.
        const stored = yield* repo.findErasure(profile.profileId, body.request_ref)
        if (Option.isNone(stored)) return yield* Effect.die("an erasure receipt vanished")
        return claimed ? renderReceipt(stored.value) : yield* repeatOf(stored.value, selector)
      })

      const erasure = Effect.fn("Customers.erasure")(function*(profile: ProfileContext, erasureId: string) {
        const found = isUuid(erasureId) ? yield* repo.erasureById(profile.profileId, erasureId.toLowerCase()) : Option.none()
        if (Option.isNone(found)) return yield* new ErasureNotFound({ message: "No erasure receipt of this profile has this id." })
        return renderReceipt(found.value)
      })

      return { conversionJourney, personJourney, customerJourney, listCustomers, listVisitors, erase, erasure }
    })
  ).pipe(Layer.provide([CustomersRepo.layer, Conversions.layer, Touches.layer, DeclaredSourcesRepo.layer, IdentityRepo.layer, OutboxRepo.layer, AuditLog.layer, PiiAccessLog.layer, HealthcareCheck.layer]))
}
