/**
 * The agent surface's tools (decision 0103): each is one operation of the HTTP API, calling the
 * same domain service its handler calls, with that operation's scope, and its arguments decoded
 * by the same Effect schema (published to agents as the tool's JSON Schema `inputSchema`).
 */
import { Effect, Schema } from "effect"
import { AnalyticsQuery, OverviewQuery } from "../../schema/analytics.ts"
import { CampaignsListQuery } from "../../schema/analytics-campaigns.ts"
import { UpsertGoalDefinition } from "../../schema/attribution.ts"
import { PageQuery } from "../../schema/common.ts"
import { ConversionJourneyParams, JourneyPageQuery } from "../../schema/customers.ts"
import { ConversionsQuery } from "../../schema/events.ts"
import { DeliveriesQuery } from "../../schema/exports.ts"
import { RecommendationParams, RecommendationsQuery } from "../../schema/recommendations.ts"
import type { PrincipalShape, ProfileContext } from "../kernel/principal.ts"
import { checkHeldScopes, type UserTokenHalves } from "../kernel/scope-check.ts"
import type { AnalyticsService } from "../analytics/overview/service.ts"
import type { CampaignsService } from "../analytics/campaigns/service.ts"
import type { Calibrations } from "../analytics/calibration.ts"
import { calibrateCampaigns, calibrateOverview } from "../analytics/calibrated.ts"
import type { Definitions } from "../attribution/definitions/service.ts"
import type { CustomersService } from "../identity/customers/service.ts"
import type { EventsService } from "../ingestion/events/outcomes/service.ts"
import type { ExportPipeline } from "../exports/pipeline/service.ts"
import type { ConversionSyncWiring } from "../exports/wiring/service.ts"
import type { Recommendations } from "../ads/recommendations/service.ts"
import type { Workspaces } from "../accounts/workspaces/service.ts"
import type { ExperimentReads } from "../experiments/service.ts"
import type { McpRepo } from "./repo.ts"

/** What a tool acts as: the token's person, and on profile tools the profile with the narrowed scopes. */
export interface ToolCall {
  /** A user-token principal; on profile tools its scopes are already the effective ones there. */
  readonly principal: PrincipalShape & { readonly kind: "user_token" }
  readonly profile: ProfileContext
}

export interface PersonCall {
  readonly principal: PrincipalShape & { readonly kind: "user_token" }
}

interface ToolBase {
  readonly name: string
  readonly title: string
  readonly description: string
  /** Scopes the call needs (all of them), checked against the token's effective scopes. */
  readonly scopes: ReadonlyArray<string>
  /** A write: also needs the workspace's `mcp_writeback_enabled`. */
  readonly write: boolean
  /** Answers on an app-provisioned profile only with the attribution add-on on (like its HTTP route). */
  readonly entitlement: boolean
  /** Units of the token's per-minute allowance (the HTTP operation's cost). */
  readonly cost: number
  /** The Effect schema of the arguments (decoded with excess keys refused). */
  readonly input: Schema.Codec<unknown, unknown>
}

/** A tool over one profile: `profile_id` is among its arguments. */
export interface ProfileTool extends ToolBase {
  readonly grain: "profile"
  readonly run: (args: unknown, call: ToolCall) => Effect.Effect<unknown, unknown>
}

/** A tool over what the person can reach (no profile). */
export interface PersonTool extends ToolBase {
  readonly grain: "person"
  readonly run: (args: unknown, call: PersonCall) => Effect.Effect<unknown, unknown>
}

export type McpTool = ProfileTool | PersonTool

/**
 * The one scope rule of a tool, for `tools/list` and `tools/call` alike: the refusal when `held`
 * lacks any of the tool's scopes, undefined when it may be called. `tools/list` asks it of the
 * token's grant; `tools/call` of the effective scopes on the named profile (grant ∩ membership),
 * with `halves` to say which half is short.
 */
export const toolScopeRefusal = (tool: McpTool, held: ReadonlyArray<string>, halves?: UserTokenHalves) =>
  checkHeldScopes("user_token", held, { scopes: tool.scopes }, halves)

export const ProfileIdArg = Schema.String.annotate({ description: "The profile to act on (uuid); list_profiles names those you can reach" })

interface Spec<A> {
  readonly name: string
  readonly title: string
  readonly description: string
  readonly scopes: ReadonlyArray<string>
  readonly write?: boolean
  readonly entitlement?: boolean
  readonly cost?: number
  readonly input: Schema.Codec<A, unknown>
}

/**
 * A profile tool from a schema and a run over its decoded arguments. The decode happens in the
 * service (one place for `validation_error`); `run` receives what `input` decoded.
 */
const profileTool = <A extends { readonly profile_id: string }>(
  spec: Spec<A>,
  run: (args: A, call: ToolCall) => Effect.Effect<unknown, unknown>
): ProfileTool => ({
  ...base(spec),
  grain: "profile",
  run: (args, call) => Effect.flatMap(Schema.decodeUnknownEffect(spec.input)(args), (decoded) => run(decoded, call))
})

const personTool = <A>(spec: Spec<A>, run: (args: A, call: PersonCall) => Effect.Effect<unknown, unknown>): PersonTool => ({
  ...base(spec),
  grain: "person",
  run: (args, call) => Effect.flatMap(Schema.decodeUnknownEffect(spec.input)(args), (decoded) => run(decoded, call))
})

const base = <A>(spec: Spec<A>) => ({
  name: spec.name,
  title: spec.title,
  description: spec.description,
  scopes: spec.scopes,
  write: spec.write ?? false,
  entitlement: spec.entitlement ?? false,
  cost: spec.cost ?? 1,
  input: spec.input
})

/** `profile_id` and the operation's own query or body fields. */
const onProfile = <F extends Schema.Struct.Fields>(fields: F) => Schema.Struct({ profile_id: ProfileIdArg, ...fields })

export interface ToolServices {
  readonly analytics: AnalyticsService["Service"]
  readonly campaigns: CampaignsService["Service"]
  readonly events: EventsService["Service"]
  readonly customers: CustomersService["Service"]
  readonly recommendations: Recommendations["Service"]
  readonly definitions: Definitions["Service"]
  readonly wiring: ConversionSyncWiring["Service"]
  readonly exports: ExportPipeline["Service"]
  readonly workspaces: Workspaces["Service"]
  readonly experiments: ExperimentReads["Service"]
  readonly calibrations: Calibrations["Service"]
  readonly repo: McpRepo["Service"]
}

/** Drops `profile_id` before handing the rest to the operation's service, which never saw it as a field. */
const withoutProfile = <A extends { readonly profile_id: string }>({ profile_id: _profile, ...rest }: A) => rest

export const makeTools = (services: ToolServices): ReadonlyArray<McpTool> => [
  personTool({
    name: "list_workspaces",
    title: "Workspaces",
    description: "The workspaces this person belongs to (GET /api/v1/workspaces). Paged: limit and cursor.",
    scopes: [],
    input: Schema.Struct(PageQuery)
  }, (args, call) => services.workspaces.list(call.principal, args)),
  personTool({
    name: "list_profiles",
    title: "Profiles",
    description:
      "The profiles this person can reach, with their workspace and the person's role there; pass a profile_id to the other tools. " +
      "Optionally only one workspace's.",
    scopes: [],
    input: Schema.Struct({
      workspace_id: Schema.optionalKey(Schema.String.annotate({ description: "Only this workspace's profiles" }))
    })
  }, (args, call) => Effect.map(services.repo.reachableProfiles(call.principal.userId, args.workspace_id), (data) => ({ data }))),
  profileTool({
    name: "analytics_overview",
    title: "Analytics overview",
    description:
      "Outcomes, cash payments, revenue, spend and ROAS of a period and the one before it (GET /api/v1/overview). " +
      "calibrated: \"true\" adds `calibration`, the measured incrementality of campaigns with a completed experiment, beside " +
      "the modelled figures. Needs analytics:read.",
    scopes: ["analytics:read"],
    input: onProfile(OverviewQuery)
  }, (args, call) =>
    Effect.flatMap(
      services.analytics.overview(call.profile, withoutProfile(args)),
      (answer) => calibrateOverview(services.calibrations, call.profile, args, answer)
    )),
  profileTool({
    name: "analytics_timeseries",
    title: "Analytics timeseries",
    description: "The overview's measures per calendar day of the profile's time zone (GET /api/v1/timeseries). Needs analytics:read.",
    scopes: ["analytics:read"],
    input: onProfile(AnalyticsQuery)
  }, (args, call) => services.analytics.timeseries(call.profile, withoutProfile(args))),
  profileTool({
    name: "list_campaigns",
    title: "Campaigns",
    description: "Campaigns with spend, credited outcomes and revenue under a model (GET /api/v1/campaigns). calibrated: \"true\" " +
      "(level campaign) adds each row's `calibration`: incremental_conversions and incrementality_factor of its latest completed " +
      "experiment, beside the modelled figures. Needs campaigns:read.",
    scopes: ["campaigns:read"],
    input: onProfile(CampaignsListQuery)
  }, (args, call) =>
    Effect.flatMap(
      services.campaigns.campaigns(call.profile, withoutProfile(args)),
      (answer) => calibrateCampaigns(services.calibrations, call.profile, args, answer)
    )),
  profileTool({
    name: "list_conversions",
    title: "Conversions",
    description: "The profile's conversions, newest first (GET /api/v1/conversions). Needs conversions:read.",
    scopes: ["conversions:read"],
    input: onProfile(ConversionsQuery)
  }, (args, call) => services.events.listConversions(call.profile, withoutProfile(args))),
  profileTool({
    name: "conversion_journey",
    title: "Conversion journey",
    description:
      "A conversion's journey: the person's touches up to it, with this conversion's credit (GET /api/v1/conversions/{id}/journey). " +
      "Needs conversions:read. Rows carry personal data only with customers:read (grant mcp:read_pii) in a workspace whose " +
      "MCP pii_mode is full; otherwise they are projected.",
    scopes: ["conversions:read"],
    input: onProfile({ ...ConversionJourneyParams, ...JourneyPageQuery })
  }, ({ id, profile_id: _profile, ...page }, call) => services.customers.conversionJourney(call.principal, call.profile, id, page)),
  profileTool({
    name: "list_recommendations",
    title: "Recommendations",
    description: "The profile's recommendations with their proposed actions (GET /api/v1/recommendations). Needs campaigns:read.",
    scopes: ["campaigns:read"],
    input: onProfile(RecommendationsQuery)
  }, (args, call) => services.recommendations.list(call.profile, withoutProfile(args))),
  profileTool({
    name: "experiment_results",
    title: "Experiment results",
    description:
      "An experiment's measured lift with its 95 % interval (or insufficient_data with the reason), its method and failed checks " +
      "(GET /api/v1/experiments/{id}/results). A draft answers invalid_state. Needs analytics:read.",
    scopes: ["analytics:read"],
    input: onProfile({ id: Schema.String.annotate({ description: "The experiment's id" }) })
  }, (args, call) => Effect.map(services.experiments.results(call.profile, args.id), (data) => ({ data }))),
  profileTool({
    name: "conversion_sync_wiring",
    title: "Conversion-sync wiring",
    description:
      "How the profile's conversions reach the ad platform: destinations, datasets and ad sets (GET /api/v1/conversion-sync/wiring, " +
      "stored view; the ad platform is not read). Needs exports:read (grant mcp:write).",
    scopes: ["exports:read"],
    input: onProfile({})
  }, (_args, call) => Effect.map(services.wiring.view(call.profile, false), (data) => ({ data }))),
  profileTool({
    name: "list_export_deliveries",
    title: "Conversion-sync deliveries",
    description: "Conversion exports and their delivery outcomes, newest first (GET /api/v1/exports/deliveries). Needs exports:read.",
    scopes: ["exports:read"],
    input: onProfile(DeliveriesQuery)
  }, (args, call) => services.exports.deliveries(call.profile, withoutProfile(args))),
  profileTool({
    name: "upsert_goal_definition",
    title: "Create or update a goal definition",
    description:
      "Creates the definition of conversion_key, or updates it (POST /api/v1/goals/definitions); classification changes queue a " +
      "replay. Safe to retry: the same body leaves the same definition. Needs goals:write (grant mcp:write) and the workspace's " +
      "mcp_writeback_enabled.",
    scopes: ["goals:write"],
    write: true,
    input: onProfile(UpsertGoalDefinition.fields)
  }, (args, call) =>
    Effect.map(services.definitions.upsert(call.principal, call.profile, withoutProfile(args)), (written) => ({
      data: written.definition,
      meta: { created: written.created, replay_job_id: written.replayJobId }
    }))),
  profileTool({
    name: "dismiss_recommendation",
    title: "Dismiss a recommendation",
    description:
      "Dismisses an open recommendation (POST /api/v1/recommendations/{id}/dismiss); dismissing a dismissed one answers it " +
      "unchanged. Needs campaigns:apply (grant mcp:write), the attribution add-on, and the workspace's mcp_writeback_enabled.",
    scopes: ["campaigns:apply"],
    write: true,
    entitlement: true,
    input: onProfile(RecommendationParams)
  }, (args, call) => services.recommendations.dismiss(call.profile, args.id))
]
