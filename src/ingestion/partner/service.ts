/**
 * Partner data (decision 0033): ad referrals (each a `synthetic` touch joined by
 * `ctwa_referral`, idempotent on its key, 422 `unknown_ad` for the whole batch), their read-only
 * preview of re-credits per model, and declared source (one answer per customer, idempotent on
 * `wamid`, each an `organic_interaction` touch). A new touch marks the conversions whose
 * lookback window holds it for the attribution worker to credit again. Nothing here creates a
 * lead or an outcome, and nothing is sent to an ad platform.
 */
import { Clock, Context, Effect, Layer, Option, Result, Schema } from "effect"
import {
  type DatabaseUnavailable,
  IdempotencyKeyConflict,
  InvalidParameter,
  UnknownAd,
  UnknownAnswerKey,
  UnknownCustomerRef,
  ValidationError
} from "../../../schema/errors.ts"
import {
  type AdReferral,
  type AdReferralBatch,
  type AdReferralsPreview,
  type AdReferralsRecorded,
  type AnswerKey,
  DECLARED_SOURCE_CHANNELS,
  type DeclaredSourceAnswer,
  type DeclaredSourceResult,
  DeclareSource,
  type PerModelCounts
} from "../../../schema/partner.ts"
import { CreditEngine, pathsByConversion } from "../../attribution/engine.ts"
import { creditAll, MODELS, type ModelResult, type TouchInput } from "../../attribution/models/index.ts"
import { type CustomerTraits, findCustomer, resolveCustomer, resolveCustomers } from "../events/customers.ts"
import { canonicalJson, sha256 } from "../../platform/json.ts"
import { normalizeEmail, normalizePhone, phoneForLookup } from "../../identity/normalize.ts"
import { Conversions, type CustomerTime } from "../../attribution/conversions/service.ts"
import { type NewPartnerTouch, Touches } from "../../attribution/touches/service.ts"
import { IdentityIntake } from "../../identity/intake.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { formatContractIssues } from "../../../schema/issue-format.ts"
import { findNationalId } from "./national-id.ts"
import { type AdRow, PartnerRepo } from "./repo.ts"
import { DeclaredSources, type StoredAnswer } from "../../identity/declared-sources/service.ts"

const decodeDeclareSource = Schema.decodeUnknownResult(DeclareSource, { onExcessProperty: "error" })
const formatIssues = formatContractIssues

/**
 * The first key of a declared-source body that the contract does not name, as the API words
 * it (`body.customer.foo: Unknown key: ...`). The route takes such keys through its
 * decoder so that a national id under any name answers the spec's `invalid_parameter` first;
 * every other unknown key is then refused like on every other route (decision 0048).
 */
const unknownKeyOf = (rawBody: unknown): string | undefined => {
  const decoded = decodeDeclareSource(rawBody)
  if (Result.isSuccess(decoded)) return undefined
  const issue = formatIssues(decoded.failure.issue).issues[0]
  if (issue === undefined) return undefined
  const path = (issue.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment))
  return `${["body", ...path].join(".")}: ${issue.message}`
}

/** `touches.source_system` of referral touches (their `idempotency_key` is unique under it). */
export const REFERRAL_SOURCE_SYSTEM = "partner_ad_referral"
/** `touches.source_system` of declared-source touches. */
export const DECLARED_SOURCE_SYSTEM = "partner_declared_source"
/** The neutral name of the ad platform (the spec's `adplatform`): the `source` of a referral touch. */
export const REFERRAL_SOURCE = "adplatform"
export const REFERRAL_CHANNEL = "paid_social"
export const REFERRAL_MEDIUM = "messaging"
/** `medium` of a declared-source touch (its `source` is the answer key). */
export const DECLARED_MEDIUM = "declared"

/** A clock up to 5 minutes ahead is tolerated; later times are refused. */
const MAX_AHEAD_MS = 5 * 60 * 1000
/** Unknown ads named in a 422 message, at most. */
const MAX_NAMED_UNKNOWN = 10

const blank = (value: string | undefined) => value !== undefined && value.trim() === ""
const emailOf = (value: string | undefined) => value === undefined ? null : normalizeEmail(value)
/** The phone in E.164, or a ValidationError naming where it was. */
const phoneOf = (at: string, value: string | undefined): Effect.Effect<string | null, ValidationError> =>
  value === undefined
    ? Effect.succeed(null)
    : Result.match(normalizePhone(value), {
      onFailure: (problem) => Effect.fail(new ValidationError({ message: `${at}: ${problem}` })),
      onSuccess: Effect.succeed
    })
/** A `wa_id` is the person's number in international form, digits only: the phone `+<digits>` (E.164 when possible). */
const waIdPhone = (value: string) => phoneForLookup(`+${value.replace(/\D/g, "")}`)
const digitsOf = (value: string) => value.replace(/\D/g, "")

const zeroCounts = (): { -readonly [K in keyof PerModelCounts]: number } => ({
  last_touch: 0,
  first_touch: 0,
  last_non_direct: 0,
  linear: 0,
  time_decay: 0,
  svc_model: 0
})

/** A checked referral: its ad and who it is about. */
interface CheckedReferral {
  readonly index: number
  readonly referral: AdReferral
  readonly occurredMs: number
  readonly traits: CustomerTraits
  /** Same traits, same string: referrals of one person are resolved once. */
  readonly traitsKey: string
}

const checkReferrals = (batch: AdReferralBatch, nowMs: number): Effect.Effect<ReadonlyArray<CheckedReferral>, ValidationError> =>
  Effect.gen(function*() {
    const checked: Array<CheckedReferral> = []
    for (const [index, referral] of batch.referrals.entries()) {
      const at = `body.referrals.${index}`
      const customer = referral.customer
      if (blank(referral.idempotency_key)) return yield* new ValidationError({ message: `${at}.idempotency_key: must not be blank` })
      if (blank(referral.ad_id)) return yield* new ValidationError({ message: `${at}.ad_id: must not be blank` })
      if (blank(customer.external_ref)) {
        return yield* new ValidationError({ message: `${at}.customer.external_ref: must not be blank` })
      }
      if (
        customer.external_ref === undefined && customer.wa_id === undefined && customer.phone === undefined &&
        customer.email === undefined
      ) {
        return yield* new ValidationError({
          message: `${at}.customer: name the person with at least one of external_ref, wa_id, phone, email`
        })
      }
      if (customer.wa_id !== undefined && customer.phone !== undefined && digitsOf(customer.wa_id) !== digitsOf(customer.phone)) {
        return yield* new ValidationError({ message: `${at}.customer: wa_id and phone name different numbers` })
      }
      const occurredMs = Date.parse(referral.occurred_at)
      if (occurredMs > nowMs + MAX_AHEAD_MS) {
        return yield* new ValidationError({ message: `${at}.occurred_at: is in the future; a referral records a past conversation` })
      }
      const traits: CustomerTraits = {
        externalId: customer.external_ref ?? null,
        email: emailOf(customer.email),
        phone: customer.wa_id !== undefined ? waIdPhone(customer.wa_id) : yield* phoneOf(`${at}.customer.phone`, customer.phone)
      }
      checked.push({ index, referral, occurredMs, traits, traitsKey: JSON.stringify([traits.externalId, traits.email, traits.phone]) })
    }
    return checked
  })

/** The credited touches of a model's result, with their shares (what "the credit" of a conversion is). */
const creditedShares = (result: ModelResult | undefined) =>
  new Map((result?.rows ?? []).filter((row) => row.is_credited).map((row) => [row.touch_id, row.credit_share] as const))

const sameCredit = (a: ModelResult | undefined, b: ModelResult | undefined) => {
  const left = creditedShares(a)
  const right = creditedShares(b)
  if (left.size !== right.size) return false
  for (const [touchId, share] of left) if (right.get(touchId) !== share) return false
  return true
}

export class PartnerData extends Context.Service<PartnerData, {
  readonly recordReferrals: (
    profile: ProfileContext,
    batch: AdReferralBatch
  ) => Effect.Effect<AdReferralsRecorded["data"], DatabaseUnavailable | ValidationError | UnknownAd>
  readonly previewReferrals: (
    profile: ProfileContext,
    batch: AdReferralBatch
  ) => Effect.Effect<AdReferralsPreview["data"], DatabaseUnavailable | ValidationError | UnknownAd>
  /**
   * `rawBody` is the request body as parsed JSON (national ids are looked for in every field,
   * including those the contract does not name).
   */
  readonly declareSource: (
    profile: ProfileContext,
    input: DeclareSource,
    rawBody: unknown
  ) => Effect.Effect<
    { readonly result: DeclaredSourceResult; readonly replayed: boolean },
    | DatabaseUnavailable
    | ValidationError
    | InvalidParameter
    | UnknownAnswerKey
    | UnknownCustomerRef
    | IdempotencyKeyConflict
  >
}>()("svc/PartnerData") {
  static readonly layer = Layer.effect(PartnerData)(
    Effect.gen(function*() {
      const repo = yield* PartnerRepo
      const declared = yield* DeclaredSources
      // Attribution's services, named apart from the touches and conversions a request handles.
      const touchRecords = yield* Touches
      const conversionRecords = yield* Conversions
      const identity = yield* IdentityIntake
      const resolution = { identity, touches: touchRecords, conversions: conversionRecords }
      const engine = yield* CreditEngine

      /** Every referral's ad among the profile's synced ads, else 422 `unknown_ad` (nothing written). */
      const adsOf = Effect.fn("PartnerData.adsOf")(function*(profileId: string, referrals: ReadonlyArray<CheckedReferral>) {
        const ids = [...new Set(referrals.map((item) => item.referral.ad_id))]
        const rows = yield* repo.adsByPlatformIds(profileId, ids)
        const ads = new Map(rows.map((row) => [row.platform_id, row] as const))
        const unknown = referrals.filter((item) => !ads.has(item.referral.ad_id))
        if (unknown.length > 0) {
          const named = unknown.slice(0, MAX_NAMED_UNKNOWN)
            .map((item) => `body.referrals.${item.index}.ad_id ${JSON.stringify(item.referral.ad_id)}`)
            .join(", ")
          const more = unknown.length > MAX_NAMED_UNKNOWN ? ` and ${unknown.length - MAX_NAMED_UNKNOWN} more` : ""
          return yield* new UnknownAd({
            message: `Not an ad of this profile's synced ad structure: ${named}${more}. Nothing was recorded.`
          })
        }
        return ads
      })

      /** Referrals whose key is new, first of each key in the batch; the others are duplicates. */
      const newReferrals = Effect.fn("PartnerData.newReferrals")(function*(
        profileId: string,
        referrals: ReadonlyArray<CheckedReferral>
      ) {
        const keys = [...new Set(referrals.map((item) => item.referral.idempotency_key))]
        const taken = new Set(yield* repo.existingTouchKeys(profileId, REFERRAL_SOURCE_SYSTEM, keys))
        const fresh: Array<CheckedReferral> = []
        for (const item of referrals) {
          if (taken.has(item.referral.idempotency_key)) continue
          taken.add(item.referral.idempotency_key)
          fresh.push(item)
        }
        return fresh
      })

      const referralTouch = (profileId: string, item: CheckedReferral, ad: AdRow, customerId: string): NewPartnerTouch => ({
        id: crypto.randomUUID(),
        profileId,
        kind: "synthetic",
        occurredAt: item.referral.occurred_at,
        sourceSystem: REFERRAL_SOURCE_SYSTEM,
        idempotencyKey: item.referral.idempotency_key,
        customerId,
        joinMethod: "ctwa_referral",
        channel: REFERRAL_CHANNEL,
        source: REFERRAL_SOURCE,
        medium: REFERRAL_MEDIUM,
        campaignExternalId: ad.campaign_platform_id,
        campaignName: ad.campaign_name,
        adSetExternalId: ad.ad_set_platform_id,
        adSetName: ad.ad_set_name,
        adExternalId: ad.platform_id,
        adName: ad.name,
        clickIdKind: item.referral.ctwa_clid === undefined ? null : "ctwa_clid",
        clickId: item.referral.ctwa_clid ?? null,
        payload: item.referral.conversation_id === undefined ? {} : { conversation_id: item.referral.conversation_id }
      })

      const recordReferrals = Effect.fn("PartnerData.recordReferrals")(function*(profile: ProfileContext, batch: AdReferralBatch) {
        const checked = yield* checkReferrals(batch, yield* Clock.currentTimeMillis)
        const ads = yield* adsOf(profile.profileId, checked)
        return yield* repo.transaction(Effect.gen(function*() {
          const fresh = yield* newReferrals(profile.profileId, checked)
          // One resolution per person, in a fixed order (customers are row-locked until commit).
          const people = [...new Map(fresh.map((item) => [item.traitsKey, item.traits] as const))].sort(([a], [b]) =>
            a < b ? -1 : a > b ? 1 : 0
          )
          const resolved = yield* resolveCustomers(resolution, people.map(([, traits]) => ({ profileId: profile.profileId, traits })))
          const customers = new Map<string, string>()
          for (const [index, [key]] of people.entries()) {
            const customerId = resolved[index]
            if (customerId === undefined || customerId === null) return yield* Effect.die("a checked referral names nobody")
            customers.set(key, customerId)
          }
          const touches: Array<NewPartnerTouch> = []
          for (const item of fresh) {
            const ad = ads.get(item.referral.ad_id)
            const customerId = customers.get(item.traitsKey)
            if (ad === undefined || customerId === undefined) return yield* Effect.die("a checked referral lost its ad or customer")
            touches.push(referralTouch(profile.profileId, item, ad, customerId))
          }
          // A key taken concurrently since the check is skipped by the insert: a duplicate too.
          const inserted = new Set(yield* touchRecords.insertPartnerTouches(touches))
          const created = touches.filter((touch) => inserted.has(touch.idempotencyKey))
          const recredit = yield* conversionRecords.requeueConversions(
            profile.profileId,
            created.map((touch) => ({ customerId: touch.customerId, at: touch.occurredAt }))
          )
          yield* Effect.annotateCurrentSpan({ "svc.partner.referrals": checked.length, "svc.partner.created": created.length })
          return { created: created.length, duplicates: checked.length - created.length, recredit_queued: recredit }
        }))
      })

      const previewReferrals = Effect.fn("PartnerData.previewReferrals")(function*(
        profile: ProfileContext,
        batch: AdReferralBatch
      ) {
        const checked = yield* checkReferrals(batch, yield* Clock.currentTimeMillis)
        yield* adsOf(profile.profileId, checked)
        // The connect-broker tier reads empty (decision 0026): nothing would be written there.
        if (!profile.attributionEnabled) {
          return { referrals: checked.length, new_touches: 0, duplicates: 0, conversions_in_window: 0, recredits: zeroCounts() }
        }
        const fresh = yield* newReferrals(profile.profileId, checked)
        // Who each new touch would be bound to, read-only: a person not known yet has no conversions.
        const hypothetical: Array<{ readonly customerId: string; readonly touch: TouchInput; readonly at: string }> = []
        const found = new Map<string, Option.Option<string>>()
        for (const item of fresh) {
          let customer = found.get(item.traitsKey)
          if (customer === undefined) {
            customer = yield* findCustomer(identity, profile.profileId, item.traits)
            found.set(item.traitsKey, customer)
          }
          if (Option.isNone(customer)) continue
          hypothetical.push({
            customerId: customer.value,
            at: item.referral.occurred_at,
            touch: { id: `preview:${item.index}`, occurred_at: item.occurredMs, kind: "synthetic", channel: REFERRAL_CHANNEL }
          })
        }
        const pairs: Array<CustomerTime> = hypothetical.map((entry) => ({ customerId: entry.customerId, at: entry.at }))
        const conversions = yield* conversionRecords.conversionsInWindow(profile.profileId, pairs)
        const creditable = conversions.filter((conversion) => conversion.eligible)
        const recredits = zeroCounts()
        if (creditable.length > 0) {
          const existing = yield* engine.candidateTouches(creditable)
          const stats = yield* engine.pathStats(profile.profileId)
          const touchesByConversion = pathsByConversion(existing)
          for (const conversion of creditable) {
            const input = { occurred_at: conversion.occurred_ms, lookback_window_days: conversion.window_days }
            const before = touchesByConversion.get(conversion.id) ?? []
            const added = hypothetical.filter((entry) => entry.customerId === conversion.customer_id).map((entry) => entry.touch)
            const without = creditAll(input, before, stats)
            const withNew = creditAll(input, [...before, ...added], stats)
            MODELS.forEach((model, index) => {
              if (!sameCredit(without[index], withNew[index])) recredits[model] += 1
            })
          }
        }
        return {
          referrals: checked.length,
          new_touches: fresh.length,
          duplicates: checked.length - fresh.length,
          conversions_in_window: conversions.length,
          recredits
        }
      })

      const renderAnswer = (stored: StoredAnswer): DeclaredSourceAnswer => ({
        answer_id: stored.answer_id,
        customer_key: stored.customer_key,
        answer_key: stored.answer_key,
        channel: stored.channel,
        answered_at: stored.answered_at,
        touch_id: stored.touch_id
      })

      const declareSource = Effect.fn("PartnerData.declareSource")(function*(
        profile: ProfileContext,
        input: DeclareSource,
        rawBody: unknown
      ) {
        const nationalId = findNationalId(rawBody)
        if (nationalId !== undefined) {
          return yield* new InvalidParameter({
            message: `${nationalId}: a national id is never accepted here; send the customer's external_ref or wa_id. Nothing was stored.`,
            reason: "national_id_refused"
          })
        }
        const unknownKey = unknownKeyOf(rawBody)
        if (unknownKey !== undefined) return yield* new ValidationError({ message: unknownKey })
        const customer = input.customer
        if ((customer.external_ref === undefined) === (customer.wa_id === undefined)) {
          return yield* new ValidationError({ message: "body.customer: exactly one of external_ref or wa_id" })
        }
        if (customer.wa_id !== undefined && (customer.email !== undefined || customer.phone !== undefined)) {
          return yield* new ValidationError({ message: "body.customer: wa_id goes alone; email and phone come with external_ref" })
        }
        if (blank(customer.external_ref)) return yield* new ValidationError({ message: "body.customer.external_ref: must not be blank" })
        if (blank(input.wamid)) return yield* new ValidationError({ message: "body.wamid: must not be blank" })
        const nowMs = yield* Clock.currentTimeMillis
        if (input.answered_at !== undefined && Date.parse(input.answered_at) > nowMs + MAX_AHEAD_MS) {
          return yield* new ValidationError({ message: "body.answered_at: is in the future" })
        }
        const answerKey = Object.keys(DECLARED_SOURCE_CHANNELS).find((key): key is AnswerKey => key === input.answer_key)
        if (answerKey === undefined) {
          return yield* new UnknownAnswerKey({
            message: `body.answer_key: ${JSON.stringify(input.answer_key)} is not in the vocabulary (${
              Object.keys(DECLARED_SOURCE_CHANNELS).join(", ")
            }).`
          })
        }
        const traits: CustomerTraits = customer.wa_id !== undefined
          ? { externalId: null, email: null, phone: waIdPhone(customer.wa_id) }
          : {
            externalId: customer.external_ref ?? null,
            email: emailOf(customer.email),
            phone: yield* phoneOf("body.customer.phone", customer.phone)
          }
        const wamid = input.wamid ?? null
        const hash = sha256(canonicalJson({
          external_ref: traits.externalId,
          email: traits.email,
          phone: traits.phone,
          answer_key: answerKey,
          answer_text: input.answer_text ?? null,
          answered_at: input.answered_at === undefined ? null : new Date(Date.parse(input.answered_at)).toISOString()
        }))
        const answeredAt = input.answered_at ?? new Date(nowMs).toISOString()

        return yield* repo.transaction(Effect.gen(function*() {
          if (wamid !== null) {
            yield* declared.lockWamid(profile.profileId, wamid)
            const stored = yield* declared.answerByWamid(profile.profileId, wamid)
            if (Option.isSome(stored)) {
              if (stored.value.request_hash !== hash) {
                return yield* new IdempotencyKeyConflict({
                  message: "This wamid already recorded a different answer; the first answer stands."
                })
              }
              return {
                result: { recorded: true, reason: null, answer: renderAnswer(stored.value), recredit_queued: 0 },
                replayed: true
              }
            }
          }
          let customerId: string
          if (traits.externalId !== null && traits.email === null && traits.phone === null) {
            // A ref alone never creates a customer.
            const known = yield* identity.customerByKey(profile.profileId, traits.externalId)
            if (Option.isNone(known)) {
              return yield* new UnknownCustomerRef({
                message:
                  "No customer has this external_ref. Send email or phone with it to create the customer. Nothing was stored."
              })
            }
            customerId = known.value
            yield* identity.lockCustomers([{ id: customerId, profileId: profile.profileId }])
          } else {
            const resolved = yield* resolveCustomer(resolution, profile.profileId, traits)
            if (resolved === null) return yield* Effect.die("a checked declared-source customer names nobody")
            customerId = resolved
          }
          const first = yield* declared.answerByCustomer(customerId)
          if (Option.isSome(first)) {
            return {
              result: { recorded: false, reason: "already_answered" as const, answer: renderAnswer(first.value), recredit_queued: 0 },
              replayed: false
            }
          }
          const answerId = crypto.randomUUID()
          const touchId = crypto.randomUUID()
          const channel = DECLARED_SOURCE_CHANNELS[answerKey]
          yield* touchRecords.insertPartnerTouches([{
            id: touchId,
            profileId: profile.profileId,
            kind: "organic_interaction",
            occurredAt: answeredAt,
            sourceSystem: DECLARED_SOURCE_SYSTEM,
            idempotencyKey: answerId,
            customerId,
            joinMethod: null,
            channel,
            source: answerKey,
            medium: DECLARED_MEDIUM,
            campaignExternalId: null,
            campaignName: null,
            adSetExternalId: null,
            adSetName: null,
            adExternalId: null,
            adName: null,
            clickIdKind: null,
            clickId: null,
            payload: { declared_source_id: answerId }
          }])
          yield* declared.insertAnswer({
            id: answerId,
            profileId: profile.profileId,
            customerId,
            answerKey,
            answerText: input.answer_text ?? null,
            wamid,
            requestHash: hash,
            answeredAt,
            touchId
          })
          const recredit = yield* conversionRecords.requeueConversions(profile.profileId, [{ customerId, at: answeredAt }])
          const stored = yield* declared.answerByCustomer(customerId)
          if (Option.isNone(stored)) return yield* Effect.die("the declared-source answer just stored is not readable")
          return {
            result: { recorded: true, reason: null, answer: renderAnswer(stored.value), recredit_queued: recredit },
            replayed: false
          }
        }))
      })

      return { recordReferrals, previewReferrals, declareSource }
    })
  ).pipe(Layer.provide([PartnerRepo.layer, DeclaredSources.layer, Conversions.layer, Touches.layer, IdentityIntake.layer, CreditEngine.layer]))
}
