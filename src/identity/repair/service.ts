/**
 * Identity repair and inferred identity links (decision 0039).
 *
 * The repair scan reports the profile's live customers missing a primary email or phone (a
 * backfill repairs them) and duplicate email or phone groups (merge review only). Repair
 * previews or applies the backfills, never a merge. Links are proposed by a deterministic scan
 * (shared click id or a held anonymous id) and decided by a person: accept binds the visitor,
 * reject keeps the pair apart for good.
 */
import { Context, Effect, Layer, Option } from "effect"
import { isUuid } from "../../../schema/common.ts"
import {
  type DatabaseUnavailable,
  InsufficientScope,
  InvalidParameter,
  InvalidState,
  NotFound
} from "../../../schema/errors.ts"
import {
  type IdentityLink,
  type LinkDecision,
  type LinkDecisionAnswer,
  type LinkPage,
  type LinkScanResult,
  type LinkStatus,
  type LinksQuery,
  MAX_REPAIR_OFFSET,
  REPAIR_SAMPLE_SIZE,
  type RepairIdentifierType,
  RepairIdentifierTypes,
  type RepairRequest,
  type RepairResult,
  type RepairScanPage,
  type RepairScanQuery,
  type RepairScanRow
} from "../../../schema/identity-repair.ts"
import { AuditLog } from "../../kernel/audit/repo.ts"
import type { PrincipalShape, ProfileContext } from "../../kernel/principal.ts"
import { pageOf, parseCursor } from "../../platform/pagination.ts"
import { HealthcareCheck } from "../../accounts/healthcare.ts"
import { isIsoDateTime } from "../../../schema/events.ts"
import { type BackfillOutcome, CustomersRepo, type ScanRow } from "../customers/repo.ts"
import { IdentityRepo } from "../repo.ts"
import { IdentityRepairRepo, type LinkKeyset, type LinkRow } from "./repo.ts"
import { Conversions } from "../../attribution/conversions/service.ts"
import { Touches } from "../../attribution/touches/service.ts"

export const MAX_PAGE = 100
export const DEFAULT_PAGE = 50
/** Offsets beyond this are refused (by the contract): page a scan that large by narrowing it, not by skipping. */
export const MAX_OFFSET = MAX_REPAIR_OFFSET

/** The lists' parameters, decoded by the contract (`RepairScanQuery`, `LinksQuery`). */
export type ScanInput = RepairScanQuery
export type LinksInput = LinksQuery

const linkNotFound = () => new NotFound({ message: "No identity link has this id in this profile." })

const renderScanRow = (row: ScanRow): RepairScanRow => {
  const missing = row.type === "missing_primary_email" || row.type === "missing_primary_phone"
  const customer = row.customer_ids[0]
  // A customer whose every email (or phone) is shared with another customer waits for merge review.
  const backfill = missing && row.identifier_id !== null && customer !== undefined
    ? { customer_profile_id: customer, identifier_id: row.identifier_id, identifier_type: row.identifier_type, is_primary: true as const }
    : null
  return {
    type: row.type,
    identifier_type: row.identifier_type,
    value: row.value,
    customer_profile_ids: row.customer_ids,
    resolution: backfill === null ? "merge_review" : "backfill_primary",
    auto_repairable: backfill !== null,
    backfill
  }
}

const renderBackfills = (
  mode: RepairRequest["mode"],
  types: ReadonlyArray<RepairIdentifierType>,
  outcome: BackfillOutcome
): RepairResult => {
  const total = outcome.email_count + outcome.phone_count
  return {
    mode,
    identifier_types: types,
    backfill_count: total,
    email_backfill_count: outcome.email_count,
    phone_backfill_count: outcome.phone_count,
    backfills: outcome.sample.map((row) => ({
      customer_profile_id: row.customer_id,
      identifier_id: row.identifier_id,
      identifier_type: row.identifier_type,
      is_primary: true
    })),
    has_more_backfills: total > REPAIR_SAMPLE_SIZE,
    duplicate_group_count: outcome.duplicate_group_count,
    changed: mode === "apply" && total > 0
  }
}

const renderLink = (row: LinkRow): IdentityLink => ({
  id: row.id,
  status: row.status,
  anonymous_id: row.anonymous_id,
  customer_profile_id: row.customer_id,
  customer_key: row.customer_key,
  join_method: row.join_method,
  evidence: row.evidence,
  unbound_touch_count: row.unbound_touch_count,
  bound_touch_count: row.bound_touch_count,
  created_at: row.created_at,
  updated_at: row.updated_at,
  decided_at: row.decided_at
})

const decidedStatus = { accept: "accepted", reject: "rejected" } as const

export class IdentityRepair extends Context.Service<IdentityRepair, {
  readonly scan: (
    profile: ProfileContext,
    input: ScanInput
  ) => Effect.Effect<RepairScanPage, DatabaseUnavailable | InvalidParameter | InsufficientScope>
  readonly repair: (
    principal: PrincipalShape,
    profile: ProfileContext,
    request: RepairRequest
  ) => Effect.Effect<RepairResult, DatabaseUnavailable>
  readonly scanLinks: (profile: ProfileContext) => Effect.Effect<LinkScanResult, DatabaseUnavailable>
  readonly listLinks: (
    profile: ProfileContext,
    input: LinksInput
  ) => Effect.Effect<LinkPage, DatabaseUnavailable | InvalidParameter | InsufficientScope>
  readonly decide: (
    principal: PrincipalShape,
    profile: ProfileContext,
    id: string,
    decision: LinkDecision
  ) => Effect.Effect<LinkDecisionAnswer, DatabaseUnavailable | NotFound | InvalidState | InsufficientScope>
}>()("svc/IdentityRepair") {
  static readonly layer = Layer.effect(IdentityRepair)(
    Effect.gen(function*() {
      const repo = yield* IdentityRepairRepo
      const customers = yield* CustomersRepo
      const identity = yield* IdentityRepo
      const touches = yield* Touches
      const conversions = yield* Conversions
      const audit = yield* AuditLog

      /**
       * Binds the visitor's unbound touches to the customer, records the anonymous id as the
       * customer's identifier, queues the customer's conversions for crediting again, withdraws the
       * visitor's other open proposals and marks the link accepted; in the caller's transaction.
       */
      const acceptLink = (link: LinkRow, profileId: string) =>
        Effect.gen(function*() {
          const boundTouchCount = yield* touches.bindVisitor(profileId, link.anonymous_id, link.customer_id, link.join_method)
          // Later touches of the visitor bind on arrival, and crediting reads them (`AttributionRepo.candidateTouches`).
          yield* customers.addIdentifiers([
            { profileId, customerId: link.customer_id, kind: "anonymous_id", value: link.anonymous_id }
          ])
          const recreditQueuedCount = yield* conversions.recreditCustomer(profileId, link.customer_id)
          yield* identity.acceptLink({ id: link.id, profileId, anonymousId: link.anonymous_id, boundTouchCount })
          return { boundTouchCount, recreditQueuedCount }
        })

      const healthcare = yield* HealthcareCheck
      /** S5.5: answers carrying identifiers or visitor ids are person reads, refused on healthcare-family profiles. */
      const refuseOnHealthcare = healthcare.refuse

      const scan = Effect.fn("IdentityRepair.scan")(function*(profile: ProfileContext, input: ScanInput) {
        const offset = input.offset ?? 0
        const limit = input.limit ?? DEFAULT_PAGE
        yield* refuseOnHealthcare(profile)
        const { summary, rows } = yield* customers.repairScan(profile.profileId, offset, limit)
        const total = summary.missing_primary_email_count + summary.missing_primary_phone_count +
          summary.duplicate_email_group_count + summary.duplicate_phone_group_count
        const hasNext = offset + rows.length < total
        return {
          data: rows.map(renderScanRow),
          summary,
          pagination: {
            has_next: hasNext,
            cursor: null,
            offset,
            limit,
            next_offset: hasNext ? offset + rows.length : null,
            total_count: total
          }
        } satisfies RepairScanPage
      })

      const repair = Effect.fn("IdentityRepair.repair")(function*(
        principal: PrincipalShape,
        profile: ProfileContext,
        request: RepairRequest
      ) {
        const types = RepairIdentifierTypes.filter((type) => request.identifier_types?.includes(type) ?? true)
        if (request.mode === "preview") {
          return renderBackfills("preview", types, yield* customers.previewBackfills(profile.profileId, types))
        }
        return yield* repo.transaction(Effect.gen(function*() {
          yield* repo.lockProfile(profile.profileId, "repair")
          const result = renderBackfills("apply", types, yield* customers.applyBackfills(profile.profileId, types))
          // Nothing written, nothing to audit: a repeat of an apply is a no-op.
          if (result.changed) {
            yield* audit.record({
              actor: principal,
              action: "identity.repair.applied",
              targetKind: "profile",
              targetId: profile.profileId,
              workspaceId: profile.workspaceId,
              profileId: profile.profileId,
              details: {
                identifier_types: types,
                backfill_count: result.backfill_count,
                email_backfill_count: result.email_backfill_count,
                phone_backfill_count: result.phone_backfill_count,
                identifier_ids: result.backfills.map((row) => row.identifier_id)
              }
            })
          }
          return result
        }))
      })

      const scanLinks = Effect.fn("IdentityRepair.scanLinks")(function*(profile: ProfileContext) {
        const counts = yield* repo.transaction(Effect.gen(function*() {
          yield* repo.lockProfile(profile.profileId, "links")
          return yield* identity.scanLinks(profile.profileId)
        }))
        yield* Effect.annotateCurrentSpan({ "svc.links.created": counts.created, "svc.links.withdrawn": counts.withdrawn })
        return {
          created_count: counts.created,
          updated_count: counts.updated,
          withdrawn_count: counts.withdrawn,
          status_counts: yield* repo.statusCounts(profile.profileId)
        } satisfies LinkScanResult
      })

      const listLinks = Effect.fn("IdentityRepair.listLinks")(function*(profile: ProfileContext, input: LinksInput) {
        const limit = input.limit ?? DEFAULT_PAGE
        const status: Option.Option<LinkStatus> = Option.fromUndefinedOr(input.status)
        // A cursor this list did not issue is refused (decision 0138).
        const after = Option.map(
          yield* parseCursor(input.cursor, (keyset) => isIsoDateTime(keyset.createdAt) && isUuid(keyset.id)),
          (keyset): LinkKeyset => ({ at: keyset.createdAt, id: keyset.id })
        )
        yield* refuseOnHealthcare(profile)
        const rows = yield* repo.listLinks(profile.profileId, status, after, limit)
        const { page, pagination } = pageOf(rows, limit, (row) => ({ createdAt: row.created_at, id: row.id }))
        return { data: page.map(renderLink), status_counts: yield* repo.statusCounts(profile.profileId), pagination } satisfies LinkPage
      })

      const decide = Effect.fn("IdentityRepair.decide")(function*(
        principal: PrincipalShape,
        profile: ProfileContext,
        id: string,
        decision: LinkDecision
      ) {
        yield* refuseOnHealthcare(profile)
        if (!isUuid(id)) return yield* linkNotFound()
        const target = decidedStatus[decision.decision]
        const outcome = yield* repo.transaction(Effect.gen(function*() {
          yield* repo.lockProfile(profile.profileId, "links")
          const found = yield* repo.linkForUpdate(profile.profileId, id.toLowerCase())
          if (Option.isNone(found)) return yield* linkNotFound()
          const link = found.value
          if (link.status === target) return { changed: false, recredit: 0 }
          if (link.status !== "proposed") {
            return yield* new InvalidState({
              message: `This link was already ${link.status}; a decision is final.`,
              reason: `link_${link.status}`
            })
          }
          if (decision.decision === "reject") {
            yield* identity.rejectLink(link.id)
            yield* audit.record({
              actor: principal,
              action: "identity.link.rejected",
              targetKind: "identity_link",
              targetId: link.id,
              workspaceId: profile.workspaceId,
              profileId: profile.profileId,
              details: { customer_id: link.customer_id, evidence: link.evidence }
            })
            return { changed: true, recredit: 0 }
          }
          if (!link.customer_live) {
            return yield* new InvalidState({
              message: "The customer of this link was merged into another since it was proposed; scan again for a link to the survivor.",
              reason: "customer_not_live"
            })
          }
          const accepted = yield* acceptLink(link, profile.profileId)
          yield* audit.record({
            actor: principal,
            action: "identity.link.accepted",
            targetKind: "identity_link",
            targetId: link.id,
            workspaceId: profile.workspaceId,
            profileId: profile.profileId,
            details: {
              customer_id: link.customer_id,
              join_method: link.join_method,
              evidence: link.evidence,
              bound_touch_count: accepted.boundTouchCount,
              recredit_queued_count: accepted.recreditQueuedCount
            }
          })
          return { changed: true, recredit: accepted.recreditQueuedCount }
        }))
        const link = yield* repo.link(profile.profileId, id.toLowerCase())
        if (Option.isNone(link)) return yield* linkNotFound()
        return {
          data: renderLink(link.value),
          meta: { changed: outcome.changed, recredit_queued_count: outcome.recredit }
        } satisfies LinkDecisionAnswer
      })

      return { scan, repair, scanLinks, listLinks, decide }
    })
  ).pipe(Layer.provide([
    IdentityRepairRepo.layer,
    CustomersRepo.layer,
    IdentityRepo.layer,
    Touches.layer,
    Conversions.layer,
    AuditLog.layer,
    HealthcareCheck.layer
  ]))
}
