/**
 * Partner data contract: ad referrals (`POST /api/v1/partner/ad-referrals` and its read-only
 * `/preview`) and declared source (`POST /api/v1/partner/declared-source`). Decision 0033.
 *
 * Person fields (email, phone, `wa_id`, the answer's text) are accepted, never answered; a
 * click id (`ctwa_clid`) is stored and never answered either.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { isIsoDateTime } from "./events.ts"

/** Referrals per batch (the spec's preview limit; the write takes the same). */
export const MAX_REFERRALS = 500

const Text = (max: number) => Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(max))

const IsoDateTime = Schema.String.check(
  Schema.makeFilter((value: string) =>
    isIsoDateTime(value) ? undefined : "Expected an ISO 8601 date-time with an offset, such as 2026-11-21T14:20:00Z"
  )
)

const Email = Text(320).check(Schema.isPattern(/^\s*[^\s@]+@[^\s@]+\s*$/, { message: "Expected an email address" }))
const Phone = Text(40).check(Schema.isPattern(/^\s*\+?[0-9][0-9 ().-]*\s*$/, { message: "Expected a phone number" }))
/** The chat app's id of a person: their number in international form, digits only (a leading `+` is tolerated). */
const WaId = Schema.String.check(Schema.isPattern(/^\+?[1-9][0-9]{5,14}$/, { message: "Expected a wa_id: 6 to 15 digits" }))

/**
 * Who a referral is about: at least one of these (checked by the service, 400 naming the field).
 * Resolved like server-side events: by `external_ref` (the `customer_key`, created when new), else
 * email, else phone; `wa_id` is a phone (`+<digits>`). Email and phone become identifiers.
 */
export const ReferralCustomer = Schema.Struct({
  external_ref: Schema.optionalKey(Text(255)),
  wa_id: Schema.optionalKey(WaId),
  phone: Schema.optionalKey(Phone),
  email: Schema.optionalKey(Email)
})
export type ReferralCustomer = typeof ReferralCustomer.Type

export const AdReferral = Schema.Struct({
  /** The sender's id of this referral; a repeat is the same touch (counted as a duplicate). */
  idempotency_key: Text(255),
  /** When the conversation started from the ad (at most 5 minutes in the future). */
  occurred_at: IsoDateTime,
  /** The ad platform's own id of the ad: one of the profile's synced ads, else 422 `unknown_ad`. */
  ad_id: Text(255),
  customer: ReferralCustomer,
  /** The partner's id of the conversation (kept with the touch). */
  conversation_id: Schema.optionalKey(Text(255)),
  /** The click-to-chat click id, when the referral carried one: stored, never answered. */
  ctwa_clid: Schema.optionalKey(Text(2048))
})
export type AdReferral = typeof AdReferral.Type

export const AdReferralBatch = Schema.Struct({
  referrals: Schema.Array(AdReferral).check(Schema.isMinLength(1), Schema.isMaxLength(MAX_REFERRALS))
}).annotate({ identifier: "AdReferralBatch" })
export type AdReferralBatch = typeof AdReferralBatch.Type

export const AdReferralsRecorded = Schema.Struct({
  data: Schema.Struct({
    /** New touches this call wrote. */
    created: Schema.Int,
    /** Referrals whose `idempotency_key` was already recorded (earlier, or earlier in this batch). */
    duplicates: Schema.Int,
    /** Existing conversions whose lookback window holds a new touch: marked for the worker to credit again. */
    recredit_queued: Schema.Int
  })
}).annotate({ identifier: "AdReferralsRecorded" })
export type AdReferralsRecorded = typeof AdReferralsRecorded.Type

export const PerModelCounts = Schema.Struct({
  last_touch: Schema.Int,
  first_touch: Schema.Int,
  last_non_direct: Schema.Int,
  linear: Schema.Int,
  time_decay: Schema.Int,
  svc_model: Schema.Int
})
export type PerModelCounts = typeof PerModelCounts.Type

export const AdReferralsPreview = Schema.Struct({
  data: Schema.Struct({
    /** Referrals in the batch. */
    referrals: Schema.Int,
    /** Referrals that would be new touches (not already recorded, and naming a customer that exists). */
    new_touches: Schema.Int,
    /** Referrals whose `idempotency_key` is already recorded: they would change nothing. */
    duplicates: Schema.Int,
    /** Existing conversions whose lookback window would hold a new touch (what the write answers as `recredit_queued`). */
    conversions_in_window: Schema.Int,
    /** Per model: of those, the conversions whose credited touches or shares would change. */
    recredits: PerModelCounts
  })
}).annotate({ identifier: "AdReferralsPreview" })
export type AdReferralsPreview = typeof AdReferralsPreview.Type

/**
 * The declared-source vocabulary and the channel each answer's touch takes. Offline answers
 * (walk-in, billboard, radio, other) are `direct`: no digital path is proven.
 */
export const DECLARED_SOURCE_CHANNELS = {
  walk_in: "direct",
  referral_friend: "referral",
  instagram: "organic_social",
  facebook: "organic_social",
  tiktok: "organic_social",
  google_search: "organic_search",
  billboard: "direct",
  radio: "direct",
  other: "direct"
} as const
export type AnswerKey = keyof typeof DECLARED_SOURCE_CHANNELS
export const ANSWER_KEYS = Object.keys(DECLARED_SOURCE_CHANNELS) as ReadonlyArray<AnswerKey>

/**
 * Exactly one of `external_ref` or `wa_id` (else 400 `validation_error`). With `external_ref`,
 * `email` and `phone` may come too: an unknown ref with either creates the customer; a ref alone
 * must be known (422 `unknown_customer_ref`). `wa_id` goes alone.
 */
export const DeclaredSourceCustomer = Schema.Struct({
  external_ref: Schema.optionalKey(Text(255)),
  email: Schema.optionalKey(Email),
  phone: Schema.optionalKey(Phone),
  wa_id: Schema.optionalKey(WaId)
})
export type DeclaredSourceCustomer = typeof DeclaredSourceCustomer.Type

export const DeclareSource = Schema.Struct({
  customer: DeclaredSourceCustomer,
  /** One of the vocabulary (`walk_in`, `referral_friend`, ...), else 422 `unknown_answer_key`. */
  answer_key: Text(64).annotate({ description: `One of: ${Object.keys(DECLARED_SOURCE_CHANNELS).join(", ")}` }),
  /** The person's own words, if any (stored, never answered; a national id in it is refused). */
  answer_text: Schema.optionalKey(Text(1000)),
  /** The chat app's message id of the answer: a repeat answers the stored answer and writes nothing. */
  wamid: Schema.optionalKey(Text(255)),
  /** When the person answered; default now (at most 5 minutes in the future). */
  answered_at: Schema.optionalKey(IsoDateTime)
}).annotate({ identifier: "DeclareSource" })
export type DeclareSource = typeof DeclareSource.Type

export const DeclaredSourceAnswer = Schema.Struct({
  answer_id: Schema.String,
  /** The customer's `external_ref` (`customer_key`); null for a customer known only by `wa_id`. */
  customer_key: Schema.NullOr(Schema.String),
  answer_key: Schema.String,
  /** The channel of the answer's touch. */
  channel: Schema.String,
  answered_at: Schema.String,
  /** The `organic_interaction` touch the answer became. */
  touch_id: Schema.String
})
export type DeclaredSourceAnswer = typeof DeclaredSourceAnswer.Type

const declaredSourceFields = {
  /** True when this request's answer stands (this call, or the first call with the same `wamid`). */
  recorded: Schema.Boolean,
  /** `already_answered`: the customer's first answer stands and this one was not stored. */
  reason: Schema.NullOr(Schema.Literal("already_answered")),
  /** The answer that stands for the customer. */
  answer: DeclaredSourceAnswer,
  /** Existing conversions whose lookback window holds the new touch, marked to be credited again (0 unless this call wrote). */
  recredit_queued: Schema.Int
}
const DeclaredSourceData = Schema.Struct(declaredSourceFields)

/** 201: this call stored the answer. */
export const DeclaredSourceRecorded = Schema.Struct({
  data: Schema.Struct({ ...declaredSourceFields, recorded: Schema.Literal(true), reason: Schema.Null }),
  meta: Schema.Struct({ replayed: Schema.Literal(false) })
}).annotate({ identifier: "DeclaredSourceRecorded" }).pipe(HttpApiSchema.status(201))

/**
 * 200: a repeat of a stored `wamid` (`recorded: true`, `meta.replayed: true`), or the customer
 * had already answered (`recorded: false`, `reason: already_answered`).
 */
export const DeclaredSourceExisting = Schema.Struct({
  data: DeclaredSourceData,
  meta: Schema.Struct({ replayed: Schema.Boolean })
}).annotate({ identifier: "DeclaredSourceExisting" })

export type DeclaredSourceResult = typeof DeclaredSourceData.Type
