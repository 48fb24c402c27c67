/**
 * Platform-Safe (issue 20 part 4, decisions 0089-0090): provisioning the Clean Dataset, the
 * target switch, and the re-point / rebuild of ad sets with the consent contract.
 */
import { Schema, SchemaTransformation } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { PlatformSafeTarget } from "./exports.ts"
import { PrivacyMode } from "./tenancy.ts"

/** The current consent version for automated ad-set rebuilds (api-concepts.md, consent contract). */
export const REBUILD_CONSENT_VERSION = "2026-09-23.duplicate-swap.v1"

/**
 * The consent texts, line by line, per locale: rendered joined by single newlines with no
 * trailing newline; `text_hash` is the SHA-256 (lowercase hex, UTF-8) of exactly that string.
 */
export const REBUILD_CONSENT_LINES = {
  en: [
    "I authorise the automated rebuild of the selected ad sets.",
    "Each rebuilt ad set is a copy: a new ad set with a new id, and its reporting starts again from zero.",
    "The learning phase restarts on each copy.",
    "Each copy is created paused, switched on after its ads exist, and the original is then paused; the original is never deleted.",
    "For a short time both the original and the copy can deliver.",
    "If the ad platform refuses to pause the original, both keep spending until I pause one.",
    "If I choose to run both, the original keeps running next to the copy and the budget is doubled."
  ],
  es: [
    "Autorizo la reconstrucción automática de los conjuntos de anuncios seleccionados.",
    "Cada conjunto reconstruido es una copia: un conjunto de anuncios nuevo con un id nuevo, y sus informes empiezan de nuevo desde cero.",
    "La fase de aprendizaje se reinicia en cada copia.",
    "Cada copia se crea en pausa, se activa cuando sus anuncios existen y después se pausa el original; el original nunca se elimina.",
    "Durante un breve tiempo pueden entregar tanto el original como la copia.",
    "Si la plataforma publicitaria rechaza pausar el original, ambos siguen gastando hasta que yo pause uno.",
    "Si elijo mantener ambos activos, el original sigue activo junto a la copia y el presupuesto se duplica."
  ]
} as const

export type ConsentLocale = keyof typeof REBUILD_CONSENT_LINES

/** The text of a locale exactly as rendered (and hashed). */
export const rebuildConsentText = (locale: ConsentLocale): string => REBUILD_CONSENT_LINES[locale].join("\n")

export const PromotedObject = Schema.Struct({ pixel_id: Schema.String, custom_event_type: Schema.String })

export const ProvisionBody = Schema.Struct({
  dataset_name: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100)))
})
export type ProvisionBody = typeof ProvisionBody.Type

export const ProvisionChecks = Schema.Struct({
  privacy_mode: PrivacyMode,
  /** The ad-platform connection used (the spec's neutral form of the platform's connection id). */
  adplatform_connection_id: Schema.NullOr(Schema.String),
  ads_management: Schema.Boolean,
  outcome_types_tracked: Schema.Array(Schema.String),
  outcome_types_mapped: Schema.Array(Schema.String),
  dpa_status: Schema.String,
  platform_safe_target: PlatformSafeTarget
})
export type ProvisionChecks = typeof ProvisionChecks.Type

export const CustomConversion = Schema.Struct({ outcome_type: Schema.String, id: Schema.String, custom_event_type: Schema.String })

export const ProvisionAnswer = Schema.Struct({
  status: Schema.Literals(["provisioned", "already_provisioned", "action_required"]),
  reason: Schema.NullOr(Schema.Literals(["ads_management_missing", "pixel_slot_taken"])),
  missing_permissions: Schema.optionalKey(Schema.Array(Schema.String)),
  manual_steps: Schema.optionalKey(Schema.Array(Schema.String)),
  clean_dataset_id: Schema.NullOr(Schema.String),
  destination_id: Schema.NullOr(Schema.String),
  custom_conversions: Schema.Array(CustomConversion),
  checks: ProvisionChecks
})
export type ProvisionAnswer = typeof ProvisionAnswer.Type

export const ProvisionResult = Schema.Struct({ data: ProvisionAnswer })

export const TargetBody = Schema.Struct({
  target: PlatformSafeTarget,
  confirm_live_ad_sets: Schema.optionalKey(Schema.Boolean)
})
export type TargetBody = typeof TargetBody.Type

export const AdSetToRecreate = Schema.Struct({
  ad_set_id: Schema.String,
  name: Schema.String,
  status: Schema.String,
  current: PromotedObject,
  /** The Clean Dataset target: the standard event on the clean dataset, not the custom conversion. */
  target: Schema.Struct({ pixel_id: Schema.String, custom_event_type: Schema.String, optimize_on: Schema.Literal("standard_event") })
})
export type AdSetToRecreate = typeof AdSetToRecreate.Type

export const TargetAnswer = Schema.Struct({
  switched: Schema.Boolean,
  platform_safe_target: PlatformSafeTarget,
  ad_sets_to_recreate: Schema.Array(AdSetToRecreate),
  /** When switching to `clean` needed a provision: its answer (`action_required` leaves the target). */
  provision: Schema.NullOr(ProvisionAnswer)
})
export type TargetAnswer = typeof TargetAnswer.Type
export const TargetResult = Schema.Struct({ data: TargetAnswer })

const AdSetId = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100), Schema.isPattern(/^[A-Za-z0-9_.:-]+$/u))

const AdSetIds = Schema.Array(AdSetId).check(Schema.isMinLength(1), Schema.isMaxLength(50))

const RepointFields = {
  confirm_recreate: Schema.optionalKey(Schema.Boolean),
  duplicate_swap_mode: Schema.optionalKey(Schema.Literals(["switch", "run_both"])),
  /** `{version, text_hash, accepted_by, accepted_at}`; checked by the service (422 when malformed). */
  consent: Schema.optionalKey(Schema.Unknown)
}

const sameIds = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((id, i) => id === b[i])

/**
 * The repoint body as sent: the specification spells the list `ad_sets_ids` (api-endpoints.md),
 * the service `ad_set_ids`; either is accepted, both only when they list the same ids.
 */
const RepointWire = Schema.Struct({
  ad_set_ids: Schema.optionalKey(AdSetIds.annotate({ description: "The ad sets to point at the Clean Dataset (1 to 50 ids)." })),
  ad_sets_ids: Schema.optionalKey(
    AdSetIds.annotate({ description: "The same list under the specification's spelling; send one of the two (both only with the same ids)." })
  ),
  ...RepointFields
}).check(Schema.makeFilter((body) => {
  if (body.ad_set_ids === undefined && body.ad_sets_ids === undefined) return "Expected `ad_set_ids` (or its alias `ad_sets_ids`)"
  if (body.ad_set_ids !== undefined && body.ad_sets_ids !== undefined && !sameIds(body.ad_set_ids, body.ad_sets_ids)) {
    return "`ad_set_ids` and its alias `ad_sets_ids` list different ad sets; send one of them"
  }
  return undefined
}))

/** What the service reads: one list, `ad_set_ids`, whichever spelling carried it. */
export const RepointBody = RepointWire.pipe(
  Schema.decodeTo(
    Schema.Struct({ ad_set_ids: AdSetIds, ...RepointFields }),
    SchemaTransformation.transform({
      decode: ({ ad_set_ids, ad_sets_ids, ...rest }) => ({ ...rest, ad_set_ids: ad_set_ids ?? ad_sets_ids ?? [] }),
      encode: (body) => body
    })
  )
)
export type RepointBody = typeof RepointBody.Type

export const RepointOutcome = Schema.Struct({
  ad_set_id: Schema.String,
  outcome: Schema.Literals(["repointed", "already_repointed", "needs_recreate", "recreated", "duplicated", "not_found", "in_progress"]),
  new_ad_set_id: Schema.NullOr(Schema.String),
  /** The platform refused to pause the original: both keep spending. */
  pause_refused: Schema.Boolean
})
export type RepointOutcome = typeof RepointOutcome.Type

export const RebuildWarning = Schema.Struct({
  code: Schema.Literals(["new_ad_set_ids", "learning_reset", "double_spend_window", "double_spend_risk", "budget_doubled"]),
  ad_set_ids: Schema.Array(Schema.String)
})
export type RebuildWarning = typeof RebuildWarning.Type

export const RepointAnswer = Schema.Struct({
  results: Schema.Array(RepointOutcome),
  needs_recreate: Schema.Array(Schema.String),
  recreated: Schema.Array(Schema.String),
  duplicated: Schema.Array(Schema.String),
  warnings: Schema.Array(RebuildWarning)
})
export type RepointAnswer = typeof RepointAnswer.Type
export const RepointResult = Schema.Struct({ data: RepointAnswer })

export const DataSource = Schema.Literals(["whatsapp", "website", "instagram"])
export type DataSource = typeof DataSource.Type

const EnsuredFields = {
  source: DataSource,
  /** The chat business account, the pixel, or the social account the dataset belongs to. */
  account_id: Schema.String,
  dataset_id: Schema.String,
  destination_id: Schema.String,
  /** The ad account's pixels (website only; empty for the other sources). */
  selectable_pixels: Schema.Array(Schema.Struct({ id: Schema.String, name: Schema.String }))
}

/** 201: the dataset was created (or attached) and wired now. */
export const EnsureCreated = Schema.Struct({ data: Schema.Struct({ ...EnsuredFields, created: Schema.Literal(true) }) }).pipe(
  HttpApiSchema.status(201)
)
/** 200: it already existed. */
export const EnsureExisting = Schema.Struct({ data: Schema.Struct({ ...EnsuredFields, created: Schema.Literal(false) }) })

export const EnsureBody = Schema.Struct({
  dataset_name: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100)))
})
export type EnsureBody = typeof EnsureBody.Type

export const EnsureWebsiteBody = Schema.Struct({
  pixel_id: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100)))
})
export type EnsureWebsiteBody = typeof EnsureWebsiteBody.Type

export const WiringQuery = Schema.Struct({
  force: Schema.optionalKey(Schema.Literals(["0", "1"]).annotate({ description: "`1` reads the ad platform live (`ad_sets_to_move`)." }))
})
export type WiringQuery = typeof WiringQuery.Type

export const AdSetToMove = Schema.Struct({
  ad_set_id: Schema.String,
  name: Schema.String,
  current: PromotedObject,
  /** `wire_optimization` (a draft, re-pointed in place) or `recreate_ad_set` (published: duplicate swap). */
  remediation: Schema.Literals(["wire_optimization", "recreate_ad_set"])
})

export const PlatformSafeWiring = Schema.Struct({
  target: PlatformSafeTarget,
  target_destination_ids: Schema.Array(Schema.String),
  suppressed_destination_ids: Schema.Array(Schema.String),
  platform_safe_dataset: Schema.Struct({ status: Schema.Literals(["missing", "provisioned"]), clean_dataset_id: Schema.NullOr(Schema.String) }),
  event_mapping: Schema.Array(Schema.Struct({
    rule_id: Schema.String,
    conversion_key: Schema.String,
    destination_id: Schema.String,
    /** The neutral name sent; null when the outcome's own event name is sent (neutralised). */
    event_name: Schema.NullOr(Schema.String),
    double_count_risk: Schema.Boolean,
    other_sources_7d: Schema.Int
  })),
  categorization: Schema.Struct({
    checklist: Schema.Array(Schema.Struct({ item: Schema.String, done: Schema.Boolean, remediation: Schema.NullOr(Schema.String) })),
    events_not_accepted: Schema.Array(Schema.String)
  }),
  dpa_status: Schema.Struct({ status: Schema.String, remediation: Schema.NullOr(Schema.Literal("sign_dpa")) }),
  ad_sets_to_move: Schema.NullOr(Schema.Array(AdSetToMove)),
  cannot_automate: Schema.Array(Schema.Struct({ code: Schema.String, message: Schema.String }))
})

export const Wiring = Schema.Struct({
  data: Schema.Struct({
    profile_id: Schema.String,
    privacy_mode: PrivacyMode,
    /** Whether this answer read the ad platform (force=1 or recheck). */
    live: Schema.Boolean,
    destinations: Schema.Array(Schema.Struct({
      id: Schema.String,
      kind: Schema.String,
      dataset_id: Schema.String,
      clean_dataset: Schema.Boolean,
      status: Schema.String,
      routing: Schema.Literals(["active", "suppressed_platform_safe", "inactive"])
    })),
    platform_safe: Schema.NullOr(PlatformSafeWiring)
  })
})
export type WiringView = typeof Wiring.Type["data"]

export const WireAdSetsBody = Schema.Struct({
  rule_id: Schema.String.check(Schema.isUUID()),
  ad_set_ids: Schema.Array(AdSetId).check(Schema.isMinLength(1), Schema.isMaxLength(50)),
  confirm_duplicate_swap: Schema.optionalKey(Schema.Boolean),
  duplicate_swap_mode: Schema.optionalKey(Schema.Literals(["switch", "run_both"])),
  consent: Schema.optionalKey(Schema.Unknown)
})
export type WireAdSetsBody = typeof WireAdSetsBody.Type

export const WireAdSetsResult = Schema.Struct({
  data: Schema.Struct({
    results: Schema.Array(RepointOutcome),
    needs_duplicate_swap: Schema.Array(Schema.String),
    recreated: Schema.Array(Schema.String),
    duplicated: Schema.Array(Schema.String),
    warnings: Schema.Array(RebuildWarning)
  })
})

export const DataSourcesList = Schema.Struct({
  data: Schema.Array(Schema.Struct({
    source: DataSource,
    provider: Schema.String,
    connected: Schema.Boolean,
    wired: Schema.Boolean,
    dataset_id: Schema.NullOr(Schema.String),
    destination_id: Schema.NullOr(Schema.String),
    blockers: Schema.Array(Schema.String),
    export_preview_30d: Schema.Struct({ outcomes: Schema.Int }),
    /** Other profiles of the workspace sending to the same dataset. */
    shared_with_profiles: Schema.Array(Schema.String),
    /** `meta_destination_shared` (neutral: the ad-platform destination is shared with another profile). */
    warning: Schema.NullOr(Schema.Literal("meta_destination_shared"))
  }))
})

export const DataSourceOptions = Schema.Struct({
  data: Schema.Array(Schema.Struct({
    source: DataSource,
    provider: Schema.String,
    connected: Schema.Boolean,
    ensure_path: Schema.String,
    /** What the ensure call does: create a dataset, or attach an existing pixel. */
    action: Schema.Literals(["create_dataset", "attach_pixel"])
  }))
})

export const CreateDataset = Schema.Struct({
  source: DataSource,
  pixel_id: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100))),
  dataset_name: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100)))
})
export type CreateDataset = typeof CreateDataset.Type
