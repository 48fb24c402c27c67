/**
 * The connected CRM's pipeline stages with their outcome mappings (decision 0060). Stages are read
 * live through the `Crm` port on every call (never copied); mappings come from the profile's
 * conversion definitions (a definition listing a stage's event name owns it), otherwise from the
 * suggestion for the stage's kind and label among the profile's outcome keys.
 */
import { Context, Effect, Layer, Option, Stream } from "effect"
import type { ConversionDefinition, OutcomeKey } from "../../../schema/attribution.ts"
import {
  type PipelineStage,
  type PipelineStages,
  type StageLocale,
  type StageMapping,
  type StagesStatus
} from "../../../schema/connections-stages.ts"
import {
  AdplatformUnavailable,
  type DatabaseUnavailable,
  InvalidState,
  NotFound,
  RateLimitExceeded
} from "../../../schema/errors.ts"
import type { Connection } from "../../../schema/connections.ts"
import { heldScopes, type PrincipalShape, type ProfileContext } from "../../kernel/principal.ts"
import { Crm, type CrmPipeline, type CrmStage } from "../providers/crm/port.ts"
import type { ProviderError } from "../providers/errors.ts"
import { isProviderKind } from "../providers/registry.ts"
import type { Keyset } from "../../platform/pagination.ts"
import { ConnectionsRepo } from "../repo.ts"
import { ConnectionSessions } from "../sessions.ts"
import { StageOutcomes } from "./outcomes.ts"

const PROVIDER = "crm"
const PAGE = 100

/** The event name a definition lists to map a stage (what a deal reaching it is recorded under). */
export const stageEventName = (stageId: string) => `crm.stage.${stageId}`

/** Outcome-key patterns per meaning, best first: the first key matching the earliest pattern wins. */
const SALE_KEYS = [/payment/i, /purchase/i, /sale/i, /paid|pago/i, /order|compra|venta/i, /won|deal/i]
const APPOINTMENT_KEYS = [/appointment|cita/i, /schedule/i, /book/i, /meeting|reuni/i]
const APPOINTMENT_LABEL = /appointment|booked|booking|meeting|\bcita\b|reserv|reuni/i

const firstMatch = (patterns: ReadonlyArray<RegExp>, keys: ReadonlyArray<string>): string | null => {
  for (const pattern of patterns) {
    const found = keys.find((key) => pattern.test(key))
    if (found !== undefined) return found
  }
  return null
}

/**
 * The outcome the service suggests for a stage among `keys` (the read's `outcomes[].key`): a
 * `won` stage a payment or sale-like key, an open stage labelled as an appointment an
 * appointment-like key; a lost or other open stage none.
 */
export const suggestOutcome = (stage: CrmStage, keys: ReadonlyArray<string>): string | null => {
  if (stage.kind === "won") return firstMatch(SALE_KEYS, keys)
  if (stage.kind === "open" && (APPOINTMENT_LABEL.test(stage.label.en) || APPOINTMENT_LABEL.test(stage.label.es))) {
    return firstMatch(APPOINTMENT_KEYS, keys)
  }
  return null
}

/** The mapping in force for a stage: the definition listing it, else the suggestion, else none. */
export const stageMapping = (
  stage: CrmStage,
  definitions: ReadonlyArray<ConversionDefinition>,
  suggestion: string | null
): StageMapping => {
  const name = stageEventName(stage.id)
  const owner = definitions.find((definition) => definition.event_names.includes(name))
  if (owner !== undefined) {
    return {
      outcome: owner.kind === "pipeline_stage" ? owner.event_key : owner.conversion_key,
      source: "user",
      definition_id: owner.id
    }
  }
  return suggestion === null
    ? { outcome: null, source: "engine_default", definition_id: null }
    : { outcome: suggestion, source: "suggested", definition_id: null }
}

const overallStatus = (stages: ReadonlyArray<PipelineStage>): StagesStatus =>
  stages.some((stage) => stage.kind === "won" && stage.current.source === "engine_default") ? "unmapped" : "ready"

const providerFacts = { provider: PROVIDER }

type StagesError = NotFound | InvalidState | RateLimitExceeded | AdplatformUnavailable | DatabaseUnavailable

export class ConnectionStages extends Context.Service<ConnectionStages, {
  readonly stages: (
    actor: PrincipalShape,
    profile: ProfileContext,
    provider: string,
    locale: StageLocale | undefined
  ) => Effect.Effect<PipelineStages, StagesError>
}>()("svc/ConnectionStages") {
  static readonly layer = Layer.effect(ConnectionStages)(
    Effect.gen(function*() {
      const connections = yield* ConnectionsRepo
      const sessions = yield* ConnectionSessions
      const crm = yield* Crm
      const definitions = yield* StageOutcomes

      /** The provider's failures as the documented codes (decision 0060). */
      const providerFailure = (connectionId: string, error: ProviderError) => {
        switch (error._tag) {
          case "ProviderAuthRevoked":
            return Effect.as(sessions.reportAuthRevoked(connectionId), "reconnect_required" as const)
          case "ProviderThrottled":
            return Effect.fail(
              new RateLimitExceeded({
                message: "The CRM is throttling this connection's calls; retry after the delay.",
                reason: "provider_throttled",
                retry_after_seconds: Math.max(1, Math.ceil(error.retryAfterSeconds)),
                ...providerFacts
              })
            )
          case "ProviderPermissionMissing":
            return Effect.fail(
              new InvalidState({
                message: `The CRM grant lacks ${error.permission}; reconnect the CRM and grant it.`,
                reason: "permission_missing",
                reconnect_required: true,
                ...providerFacts
              })
            )
          case "ProviderUnavailable":
            return Effect.fail(
              new AdplatformUnavailable({
                message: "The CRM is unreachable; retry later.",
                reason: "provider_unavailable",
                ...providerFacts,
                ...(error.status === null ? {} : { provider_status: error.status })
              })
            )
          case "ProviderRefused":
            return Effect.fail(
              new AdplatformUnavailable({
                message: "The CRM refused to list its pipelines.",
                reason: "provider_refused",
                ...providerFacts,
                provider_status: error.status,
                provider_code: error.code,
                provider_message: error.detail
              })
            )
        }
      }

      const pipelinesOf = (connectionId: string) =>
        sessions.session(connectionId).pipe(
          Effect.flatMap((session) => Stream.runCollect(crm.pipelines(session))),
          Effect.map((pipelines): ReadonlyArray<CrmPipeline> | "reconnect_required" => pipelines),
          Effect.catchTags({
            ProviderAuthRevoked: (error) => providerFailure(connectionId, error),
            ProviderThrottled: (error) => providerFailure(connectionId, error),
            ProviderPermissionMissing: (error) => providerFailure(connectionId, error),
            ProviderUnavailable: (error) => providerFailure(connectionId, error),
            ProviderRefused: (error) => providerFailure(connectionId, error)
          })
        )

      /** The profile's live CRM connections, every page of its connections read (a profile has few). */
      const crmConnections = Effect.fn("ConnectionStages.crmConnections")(function*(profileId: string) {
        const found: Array<Connection> = []
        let after = Option.none<Keyset>()
        while (true) {
          const page = yield* connections.list(profileId, PAGE, after)
          found.push(...page.slice(0, PAGE).filter((c) => c.provider === PROVIDER))
          const last = page[PAGE - 1]
          if (page.length <= PAGE || last === undefined) return found
          after = Option.some({ createdAt: last.created_at, id: last.id })
        }
      })

      const stages = Effect.fn("ConnectionStages.stages")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        provider: string,
        localeParam: StageLocale | undefined
      ) {
        const locale: StageLocale = localeParam ?? "en"
        if (!isProviderKind(provider)) return yield* new NotFound({ message: `No such provider: ${provider}.` })
        // Only a CRM has pipeline stages: for every other provider the route names nothing.
        if (provider !== PROVIDER) {
          return yield* new NotFound({ message: `Pipeline stages exist for the crm provider only, not ${provider}.`, reason: "not_a_crm" })
        }
        const canWrite = heldScopes(actor).includes("goals:write")
        const read = yield* definitions.outcomeDefinitions(profile)
        const keys = read.outcomes.map((outcome: OutcomeKey) => outcome.key)
        const base = { provider: PROVIDER, locale, can_write: canWrite, outcomes: keys }

        const live = yield* crmConnections(profile.profileId)
        const connection = live.find((c) => c.status !== "reconnect_required") ?? live[0]
        if (connection === undefined) {
          return { ...base, status: "not_connected", next_step: "connect_crm", connection_id: null, stages: [] } satisfies PipelineStages
        }
        const needsReconnect = {
          ...base,
          status: "reconnect_required",
          next_step: "reconnect_crm",
          connection_id: connection.id,
          stages: []
        } satisfies PipelineStages
        if (connection.status === "reconnect_required") return needsReconnect
        const pipelines = yield* pipelinesOf(connection.id)
        if (pipelines === "reconnect_required") return needsReconnect

        const rows: Array<PipelineStage> = []
        for (const pipeline of pipelines) {
          const ordered = [...pipeline.stages].sort((a, b) => a.position - b.position)
          for (const stage of ordered) {
            const suggestion = suggestOutcome(stage, keys)
            rows.push({
              id: stage.id,
              pipeline_id: pipeline.id,
              pipeline_label: pipeline.label[locale],
              label: stage.label[locale],
              position: stage.position,
              kind: stage.kind,
              event_name: stageEventName(stage.id),
              suggested_outcome: suggestion,
              current: stageMapping(stage, read.definitions, suggestion),
              // A lost deal is not an outcome; the definitions routes stay the one place mappings are written.
              writable: canWrite && profile.attributionEnabled && stage.kind !== "lost"
            })
          }
        }
        const status = overallStatus(rows)
        return {
          ...base,
          status,
          next_step: status === "unmapped" ? "map_stages" : null,
          connection_id: connection.id,
          stages: rows
        } satisfies PipelineStages
      })

      return { stages }
    })
  ).pipe(Layer.provide([ConnectionsRepo.layer, ConnectionSessions.layer]))
}
