/**
 * Attribution contract: conversion (goal and outcome) definitions, the attribution recompute and
 * the replay status. Decision 0030.
 *
 * A definition gives event names their meaning: an outcome event whose `event_name` is listed in a
 * definition's `event_names` becomes a conversion of that definition (its `conversion_key`), credited
 * over its `lookback_window_days`, counted as cash when `counts_as_cash`, and credited to touches
 * only when `attribution_eligible`. A `pipeline_stage` definition is a CRM pipeline stage; its
 * `event_key` names the outcome the stage counts as, one of the keys `GET
 * /api/v1/profile/outcome-definitions` answers in `outcomes[].key` (else 422 `validation_error`).
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Page } from "./common.ts"

/** A conversion key: 1 to 64 letters, digits and `_`. */
export const ConversionKey = Schema.String.check(
  Schema.isPattern(/^[A-Za-z0-9_]{1,64}$/, { message: "Expected 1 to 64 letters, digits or _" })
)

/** An event name as senders send it: not blank, at most 200 characters. */
export const EventName = Schema.String.check(
  Schema.isMaxLength(200),
  Schema.isPattern(/\S/, { message: "Expected a non-empty event name" })
)

export const EventNames = Schema.Array(EventName).check(
  Schema.isMinLength(1, { message: "Expected at least one event name" }),
  Schema.isMaxLength(100)
)

/** The window of a definition created without one, and of a conversion without a definition. */
export const DEFAULT_LOOKBACK_WINDOW_DAYS = 30

/** Days before a conversion in which its touches are credited. */
export const LookbackWindowDays = Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 365 }))

export const DefinitionName = Schema.String.check(
  Schema.isMaxLength(200),
  Schema.isPattern(/\S/, { message: "Expected a non-empty name" })
)

/**
 * | kind | what it is |
 * |---|---|
 * | `event` (default) | events named in `event_names` are conversions of this definition; `event_key` is null |
 * | `pipeline_stage` | a CRM pipeline stage: its stage-change events are named in `event_names`; `event_key` is the outcome it counts as |
 */
export const DefinitionKind = Schema.Literals(["event", "pipeline_stage"])
export type DefinitionKind = typeof DefinitionKind.Type

export const ConversionDefinition = Schema.Struct({
  id: Schema.String,
  conversion_key: Schema.String,
  name: Schema.String,
  kind: DefinitionKind,
  event_names: Schema.Array(Schema.String),
  /** `pipeline_stage` only: the outcome key the stage counts as (null while unmapped, and on `event` definitions). */
  event_key: Schema.NullOr(Schema.String),
  lookback_window_days: Schema.Int,
  /** At most one definition of a profile is the default. */
  is_default: Schema.Boolean,
  counts_as_cash: Schema.Boolean,
  attribution_eligible: Schema.Boolean,
  created_at: Schema.String,
  updated_at: Schema.String
}).annotate({ identifier: "ConversionDefinition" })
export type ConversionDefinition = typeof ConversionDefinition.Type

/**
 * POST /api/v1/goals/definitions: creates the definition of `conversion_key` (201) or updates it
 * (200). On an update an absent optional field keeps its value; on a create it takes its default
 * (`lookback_window_days` 30, `is_default` false, `counts_as_cash` false, `attribution_eligible` true).
 */
export const UpsertGoalDefinition = Schema.Struct({
  conversion_key: ConversionKey,
  name: DefinitionName,
  event_names: EventNames,
  lookback_window_days: Schema.optionalKey(LookbackWindowDays),
  /** `true` makes this the profile's default, moving the flag off the previous one in the same transaction. */
  is_default: Schema.optionalKey(Schema.Boolean),
  counts_as_cash: Schema.optionalKey(Schema.Boolean),
  attribution_eligible: Schema.optionalKey(Schema.Boolean)
})
export type UpsertGoalDefinition = typeof UpsertGoalDefinition.Type

/** PATCH /api/v1/goals/definitions/{id}: the fields given change; `conversion_key` and `kind` never do. */
export const PatchGoalDefinition = Schema.Struct({
  name: Schema.optionalKey(DefinitionName),
  event_names: Schema.optionalKey(EventNames),
  lookback_window_days: Schema.optionalKey(LookbackWindowDays),
  is_default: Schema.optionalKey(Schema.Boolean),
  counts_as_cash: Schema.optionalKey(Schema.Boolean),
  attribution_eligible: Schema.optionalKey(Schema.Boolean)
})
export type PatchGoalDefinition = typeof PatchGoalDefinition.Type

/**
 * The deprecated POST /api/v1/goals (successor POST /api/v1/goals/definitions): one event name, the
 * conversion key derived from `name` (lower case; every run of other characters becomes `_`).
 */
export const LegacyGoal = Schema.Struct({
  name: DefinitionName,
  event_name: EventName,
  lookback_window_days: Schema.optionalKey(LookbackWindowDays),
  is_default: Schema.optionalKey(Schema.Boolean),
  counts_as_cash: Schema.optionalKey(Schema.Boolean),
  attribution_eligible: Schema.optionalKey(Schema.Boolean)
})
export type LegacyGoal = typeof LegacyGoal.Type

/** One definition of PUT /api/v1/profile/outcome-definitions: absent optional fields take their defaults. */
export const OutcomeDefinitionInput = Schema.Struct({
  conversion_key: ConversionKey,
  name: DefinitionName,
  kind: Schema.optionalKey(DefinitionKind),
  event_names: EventNames,
  event_key: Schema.optionalKey(Schema.NullOr(EventName)),
  lookback_window_days: Schema.optionalKey(LookbackWindowDays),
  is_default: Schema.optionalKey(Schema.Boolean),
  counts_as_cash: Schema.optionalKey(Schema.Boolean),
  attribution_eligible: Schema.optionalKey(Schema.Boolean)
})
export type OutcomeDefinitionInput = typeof OutcomeDefinitionInput.Type

/** The profile's whole set: definitions not listed are removed. */
export const PutOutcomeDefinitions = Schema.Struct({
  definitions: Schema.Array(OutcomeDefinitionInput).check(Schema.isMaxLength(200))
})
export type PutOutcomeDefinitions = typeof PutOutcomeDefinitions.Type

/** PATCH /api/v1/outcome-definitions/{id}: the stage's outcome key (null unmaps it). */
export const PatchOutcomeDefinition = Schema.Struct({
  event_key: Schema.NullOr(EventName)
})
export type PatchOutcomeDefinition = typeof PatchOutcomeDefinition.Type

/**
 * A key a `pipeline_stage` definition may map to: an event name the profile has received
 * (`seen_in_events`), or one an `event` definition lists (`conversion_key` names it).
 */
export const OutcomeKey = Schema.Struct({
  key: Schema.String,
  seen_in_events: Schema.Boolean,
  conversion_key: Schema.NullOr(Schema.String)
}).annotate({ identifier: "OutcomeKey" })
export type OutcomeKey = typeof OutcomeKey.Type

export const OutcomeDefinitions = Schema.Struct({
  definitions: Schema.Array(ConversionDefinition),
  outcomes: Schema.Array(OutcomeKey)
}).annotate({ identifier: "OutcomeDefinitions" })
export type OutcomeDefinitions = typeof OutcomeDefinitions.Type

/** The full-profile replay a classification write queued (or joined), null when nothing changed. */
export const ReplayMeta = Schema.Struct({ replay_job_id: Schema.NullOr(Schema.String) })

export const DefinitionCreated = Schema.Struct({
  data: ConversionDefinition,
  meta: Schema.Struct({ created: Schema.Literal(true), replay_job_id: Schema.NullOr(Schema.String) })
}).pipe(HttpApiSchema.status(201))

export const DefinitionUpdated = Schema.Struct({
  data: ConversionDefinition,
  meta: Schema.Struct({ created: Schema.Literal(false), replay_job_id: Schema.NullOr(Schema.String) })
})

export const DefinitionBody = Schema.Struct({ data: ConversionDefinition, meta: ReplayMeta })

export const DefinitionPage = Page(ConversionDefinition)

export const OutcomeDefinitionsBody = Schema.Struct({ data: OutcomeDefinitions })
export const OutcomeDefinitionsReplaced = Schema.Struct({ data: OutcomeDefinitions, meta: ReplayMeta })

export const ReplayState = Schema.Literals(["queued", "running", "succeeded", "failed"])
export type ReplayState = typeof ReplayState.Type

/**
 * A full-profile attribution replay (a durable job). `progress` counts conversions recomputed by
 * the current attempt; `total` is known once the attempt starts. `error` is the last attempt's
 * failure (kept while a retry is queued; the job is `failed` after the last attempt).
 */
export const ReplayJob = Schema.Struct({
  job_id: Schema.String,
  state: ReplayState,
  reason: Schema.String,
  progress: Schema.Int,
  total: Schema.NullOr(Schema.Int),
  attempts: Schema.Int,
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  finished_at: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String)
}).annotate({ identifier: "ReplayJob" })
export type ReplayJob = typeof ReplayJob.Type

/** The most recent replay of the profile, or null when it never had one. */
export const ReplayStatusBody = Schema.Struct({ data: Schema.NullOr(ReplayJob) })

/** 202: the replay is queued (or was already queued: `coalesced`). */
export const RecomputeAccepted = Schema.Struct({
  data: ReplayJob,
  meta: Schema.Struct({ coalesced: Schema.Boolean })
}).pipe(HttpApiSchema.status(202))
