/**
 * Data-processing agreement (DPA) and business-associate agreement (BAA) contract: the
 * app-level DPA an OAuth app's owner workspace accepts in the console, and the profile-level
 * DPA and BAA a profile's own owner accepts. Decision 0024.
 */
import { Schema } from "effect"
import { Uuid } from "./common.ts"

/** The DPA text in force; accepting another version is a 400. Published in every DPA answer. */
export const CURRENT_DPA_VERSION = "2026-11-01.dpa.v1"
/** The BAA text in force (profiles exporting under `hipaa`). */
export const CURRENT_BAA_VERSION = "2026-11-01.baa.v1"

export const AgreementStatus = Schema.Literals(["not_accepted", "accepted", "withdrawn"])
export type AgreementStatus = typeof AgreementStatus.Type

/** Why exports of a profile are held (its privacy mode needs an agreement it does not have). */
export const ExportHold = Schema.Literals(["dpa_not_accepted", "baa_not_accepted"])
export type ExportHold = typeof ExportHold.Type

export const AcceptAgreement = Schema.Struct({
  /** Must equal the current version (`current_version` of the GET answer). */
  version: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100))
})
export type AcceptAgreement = typeof AcceptAgreement.Type

/** The app-level DPA of an OAuth app. */
export const AppDpa = Schema.Struct({
  app_id: Uuid,
  owner_workspace_id: Uuid,
  dpa_status: AgreementStatus,
  /** Version, time and acceptor (user id) of the last acceptance; kept after a withdrawal. */
  dpa_version: Schema.NullOr(Schema.String),
  dpa_accepted_at: Schema.NullOr(Schema.String),
  dpa_accepted_by: Schema.NullOr(Schema.String),
  current_version: Schema.String
}).annotate({ identifier: "AppDpa" })
export type AppDpa = typeof AppDpa.Type

export const AppDpaBody = Schema.Struct({ data: AppDpa })
export const AppDpaChanged = Schema.Struct({ data: Schema.Struct({ ...AppDpa.fields, changed: Schema.Boolean }) })

/** One agreement as stored on the profile itself. */
export const OwnAgreement = Schema.Struct({
  status: AgreementStatus,
  version: Schema.NullOr(Schema.String),
  accepted_at: Schema.NullOr(Schema.String),
  accepted_by: Schema.NullOr(Schema.String)
})

/**
 * A profile's agreements. `dpa_*` is the effective DPA: the profile's own acceptance when its
 * owner accepted, otherwise (for a profile an app provisioned) the app's; `dpa_source` says which.
 */
export const ProfileAgreements = Schema.Struct({
  profile_id: Uuid,
  workspace_id: Uuid,
  privacy_mode: Schema.Literals(["standard", "platform_safe", "hipaa", "custom"]),
  dpa_status: AgreementStatus,
  dpa_version: Schema.NullOr(Schema.String),
  dpa_accepted_at: Schema.NullOr(Schema.String),
  dpa_accepted_by: Schema.NullOr(Schema.String),
  dpa_source: Schema.Literals(["profile", "app", "none"]),
  /** The app that provisioned the profile (whose DPA it inherits), if any. */
  provisioned_by_app_id: Schema.NullOr(Uuid),
  /** The profile's own DPA, whatever the effective one is. */
  own_dpa: OwnAgreement,
  baa_status: AgreementStatus,
  baa_version: Schema.NullOr(Schema.String),
  baa_accepted_at: Schema.NullOr(Schema.String),
  baa_accepted_by: Schema.NullOr(Schema.String),
  current_dpa_version: Schema.String,
  current_baa_version: Schema.String,
  /** Why exports are held under the privacy mode; null when they are not. */
  export_hold: Schema.NullOr(ExportHold)
}).annotate({ identifier: "ProfileAgreements" })
export type ProfileAgreements = typeof ProfileAgreements.Type

export const ProfileAgreementsBody = Schema.Struct({ data: ProfileAgreements })
export const ProfileAgreementsChanged = Schema.Struct({
  data: Schema.Struct({ ...ProfileAgreements.fields, changed: Schema.Boolean })
})
