/**
 * `GET /api/v1/connections/{provider}/stages` (decision 0060): the connected CRM's pipeline stages,
 * read live, each with the outcome the service suggests for it and the mapping in force.
 *
 * A stage is mapped through the outcome-definition routes: a definition whose `event_names` lists
 * the stage's `event_name` (`crm.stage.<stage id>`) owns the stage. On a `pipeline_stage`
 * definition its `event_key` is the outcome; on an `event` definition its `conversion_key` is.
 */
import { Schema } from "effect"

export const StageLocale = Schema.Literals(["en", "es"])
export type StageLocale = typeof StageLocale.Type

export const StagesQuery = Schema.Struct({
  /** `en` (default) or `es`: the language of the labels; anything else is 400 `invalid_parameter`. */
  locale: Schema.optionalKey(StageLocale)
})

/**
 * | source | when | `outcome` |
 * |---|---|---|
 * | `user` | a definition lists the stage's `event_name` | its `event_key` (`pipeline_stage`) or `conversion_key` (`event`); null when a person left it unmapped |
 * | `suggested` | no definition lists it and the service suggests an outcome | the suggestion |
 * | `engine_default` | no definition lists it and there is no suggestion | null: reaching the stage records no outcome |
 */
export const StageMappingSource = Schema.Literals(["suggested", "user", "engine_default"])
export type StageMappingSource = typeof StageMappingSource.Type

export const StageMapping = Schema.Struct({
  /** The outcome key a deal reaching the stage is recorded as; null when it records none. */
  outcome: Schema.NullOr(Schema.String),
  source: StageMappingSource,
  /** The definition that maps the stage (`user` only). */
  definition_id: Schema.NullOr(Schema.String)
})
export type StageMapping = typeof StageMapping.Type

export const PipelineStage = Schema.Struct({
  id: Schema.String,
  pipeline_id: Schema.String,
  pipeline_label: Schema.String,
  label: Schema.String,
  /** Order on the pipeline's board, from 0. */
  position: Schema.Int,
  /** `won` and `lost` close a deal. */
  kind: Schema.Literals(["open", "won", "lost"]),
  /** The event name a definition lists to map this stage. */
  event_name: Schema.String,
  /** One of `outcomes`, or null when nothing fits. */
  suggested_outcome: Schema.NullOr(Schema.String),
  current: StageMapping,
  /** Whether the caller may change this stage's mapping (`can_write`, and the stage is not a `lost` one). */
  writable: Schema.Boolean
}).annotate({ identifier: "PipelineStage" })
export type PipelineStage = typeof PipelineStage.Type

/**
 * | status | next_step | meaning |
 * |---|---|---|
 * | `not_connected` | `connect_crm` | the profile has no CRM connection; `stages` is empty |
 * | `reconnect_required` | `reconnect_crm` | the CRM grant is dead; `stages` is empty |
 * | `unmapped` | `map_stages` | a `won` stage records no outcome (`engine_default`) |
 * | `ready` | null | every `won` stage records an outcome or a person decided it |
 */
export const StagesStatus = Schema.Literals(["not_connected", "reconnect_required", "unmapped", "ready"])
export type StagesStatus = typeof StagesStatus.Type

export const StagesNextStep = Schema.NullOr(Schema.Literals(["connect_crm", "reconnect_crm", "map_stages"]))

export const PipelineStages = Schema.Struct({
  provider: Schema.String,
  locale: StageLocale,
  status: StagesStatus,
  /** The caller holds `goals:write` (mappings are written through the outcome-definition routes). */
  can_write: Schema.Boolean,
  next_step: StagesNextStep,
  connection_id: Schema.NullOr(Schema.String),
  /** The keys a stage may map to: `outcomes[].key` of `GET /api/v1/profile/outcome-definitions`. */
  outcomes: Schema.Array(Schema.String),
  stages: Schema.Array(PipelineStage)
}).annotate({ identifier: "PipelineStages" })
export type PipelineStages = typeof PipelineStages.Type

export const PipelineStagesBody = Schema.Struct({ data: PipelineStages })
