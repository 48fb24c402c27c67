/**
 * Conversion definitions over HTTP: goal definitions, the deprecated POST /api/v1/goals and
 * outcome definitions (the `event_key` rule). Decision 0030.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  DefinitionBody,
  DefinitionCreated,
  DefinitionPage,
  DefinitionUpdated,
  LegacyGoal,
  OutcomeDefinitionsBody,
  OutcomeDefinitionsReplaced,
  PatchGoalDefinition,
  PatchOutcomeDefinition,
  PutOutcomeDefinitions,
  UpsertGoalDefinition
} from "../../../schema/attribution.ts"
import { PageQuery } from "../../../schema/common.ts"
import { DatabaseUnavailable, NotFound, ValidationError, wireUnprocessable } from "../../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"


/** Reads: `goals:write` or `conversions:read`. */
const read = policy({
  scopes: ["goals:write", "conversions:read"],
  scopeMode: "any",
  auth: PROFILE_PRINCIPALS,
  idempotency: "none",
  grain: "profile"
})

/** Classification writes: `goals:write` (each queues a full-profile replay). */
const write = (idempotency: "optional" | "none") =>
  policy({ scopes: ["goals:write"], auth: PROFILE_PRINCIPALS, idempotency, grain: "profile" })

/** PATCH /outcome-definitions/{id} is the one definition write the spec gates on the attribution add-on. */
const gatedWrite = policy({
  scopes: ["goals:write"],
  auth: PROFILE_PRINCIPALS,
  idempotency: "none",
  grain: "profile",
  entitlement: "svc_attribution"
})

const id = { id: Schema.String }
const writeErrors = [ValidationError.wire, DatabaseUnavailable.wire] as const

export const DefinitionsApi = HttpApiGroup.make("definitions")
  .add(
    HttpApiEndpoint.get("listGoalDefinitions", "/goals/definitions", {
      query: PageQuery,
      success: DefinitionPage,
      error: [ValidationError.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "The profile's goal (conversion) definitions, oldest first")
      .annotateMerge(read),
    HttpApiEndpoint.post("upsertGoalDefinition", "/goals/definitions", {
      payload: UpsertGoalDefinition,
      success: [DefinitionCreated, DefinitionUpdated],
      error: writeErrors
    })
      .annotate(
        OpenApi.Summary,
        "Create (201) or update (200) the definition of conversion_key; is_default moves the default; classification changes queue a replay"
      )
      .annotateMerge(write("optional")),
    HttpApiEndpoint.patch("patchGoalDefinition", "/goals/definitions/:id", {
      params: id,
      payload: PatchGoalDefinition,
      success: DefinitionBody,
      error: [...writeErrors, NotFound.wire]
    })
      .annotate(OpenApi.Summary, "Edit a goal definition (the fields given); classification changes queue a replay")
      .annotateMerge(write("none")),
    HttpApiEndpoint.post("createGoal", "/goals", {
      payload: LegacyGoal,
      success: [DefinitionCreated, DefinitionUpdated],
      error: writeErrors
    })
      .annotate(OpenApi.Summary, "Deprecated (sunset 2026-12-04): create or update a goal from {name, event_name}; use POST /api/v1/goals/definitions")
      .annotate(OpenApi.Deprecated, true)
      .annotateMerge(write("optional")),
    HttpApiEndpoint.get("getOutcomeDefinitions", "/profile/outcome-definitions", {
      success: OutcomeDefinitionsBody,
      error: [DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Every definition of the profile and the outcome keys (outcomes[].key) a pipeline-stage event_key may name")
      .annotateMerge(read),
    HttpApiEndpoint.put("putOutcomeDefinitions", "/profile/outcome-definitions", {
      payload: PutOutcomeDefinitions,
      success: OutcomeDefinitionsReplaced,
      error: [...writeErrors, wireUnprocessable]
    })
      .annotate(OpenApi.Summary, "Replace the profile's definitions (unlisted ones are removed); 422 for an unknown stage event_key")
      .annotateMerge(write("none")),
    HttpApiEndpoint.patch("patchOutcomeDefinition", "/outcome-definitions/:id", {
      params: id,
      payload: PatchOutcomeDefinition,
      success: DefinitionBody,
      error: [...writeErrors, wireUnprocessable, NotFound.wire]
    })
      .annotate(OpenApi.Summary, "Set a pipeline-stage definition's event_key (one of outcomes[].key, else 422); idempotent")
      .annotateMerge(gatedWrite)
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Goal and outcome (conversion) definitions")
