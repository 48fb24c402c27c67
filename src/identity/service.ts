/**
 * Merge review (decision 0040): the proposer, the review queue, previews, decisions, merges and
 * their undo. An identifier held by two live customers never merges them silently: it raises a
 * proposal, and a person decides. Every route answers both sides' identity, so it needs
 * `customers:read` and is refused on healthcare-family profiles (S5.5).
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { isUuid } from "../../schema/common.ts"
import {
  CustomerNotFound,
  type DatabaseUnavailable,
  InsufficientScope,
  InvalidParameter,
  InvalidState,
  NotFound
} from "../../schema/errors.ts"
import { isIsoDateTime } from "../../schema/events.ts"
import {
  type CustomerSide,
  type Decision,
  type MergeHistoryEntry,
  type MergeHistoryQuery,
  type MergePreview,
  type MergePreviewQuery,
  type MergeProposal,
  type ProposalsQuery,
  type StatusCounts
} from "../../schema/identity.ts"
import { AuditLog } from "../kernel/audit/repo.ts"
import type { PrincipalShape, ProfileContext } from "../kernel/principal.ts"
import { pageOf, parseCursor } from "../platform/pagination.ts"
import { HealthcareCheck } from "../accounts/healthcare.ts"
import { IdentityRepo, type MergeRow, type Moved, type ProposalRow, type SideRow } from "./repo.ts"
import { CustomersRepo } from "./customers/repo.ts"
import { DeclaredSourcesRepo } from "./declared-sources/repo.ts"
import { Conversions } from "../attribution/conversions/service.ts"
import { Touches } from "../attribution/touches/service.ts"
import { invalidQuery } from "../../schema/query-errors.ts"

export const DEFAULT_SNOOZE_DAYS = 30
const DEFAULT_PAGE = 50

type Page<A> = { readonly data: ReadonlyArray<A>; readonly pagination: { readonly has_next: boolean; readonly cursor: string | null } }

const renderSide = (row: SideRow): CustomerSide => ({
  customer_profile_id: row.id,
  customer_key: row.customer_key,
  first_name: row.first_name,
  last_name: row.last_name,
  identifiers: row.identifiers,
  touch_count: row.touch_count,
  conversion_count: row.conversion_count,
  created_at: row.created_at
})

const olderFirst = (a: SideRow, b: SideRow) => (a.created_at < b.created_at || (a.created_at === b.created_at && a.id < b.id) ? -1 : 1)

const renderHistory = (row: MergeRow): MergeHistoryEntry => ({
  audit_log_id: row.id,
  survivor_customer_profile_id: row.survivor_id,
  merged_customer_profile_id: row.merged_id,
  merged_customer_key: row.merged_customer_key,
  proposal_id: row.proposal_id,
  merged_at: row.merged_at,
  undone_at: row.undone_at,
  moved: {
    touches: row.moved.touches.length,
    outcome_events: row.moved.outcome_events.length,
    conversions: row.moved.conversions.length,
    identifiers: row.moved.identifiers.length
  }
})

export class IdentityService extends Context.Service<IdentityService, {
  readonly scan: (actor: PrincipalShape, profile: ProfileContext) => Effect.Effect<
    { readonly pairs: number; readonly proposed: number; readonly customers_scanned: number },
    DatabaseUnavailable | InsufficientScope
  >
  readonly list: (
    profile: ProfileContext,
    query: ProposalsQuery
  ) => Effect.Effect<Page<MergeProposal> & { readonly status_counts: StatusCounts }, DatabaseUnavailable | InvalidParameter | InsufficientScope>
  readonly previewProposal: (profile: ProfileContext, id: string) => Effect.Effect<MergePreview, DatabaseUnavailable | NotFound | InsufficientScope | InvalidState>
  readonly previewPair: (
    profile: ProfileContext,
    query: MergePreviewQuery
  ) => Effect.Effect<MergePreview, DatabaseUnavailable | InvalidParameter | CustomerNotFound | InsufficientScope | InvalidState>
  readonly decide: (
    actor: PrincipalShape,
    profile: ProfileContext,
    id: string,
    decision: Decision
  ) => Effect.Effect<{ readonly data: MergeProposal; readonly meta: { readonly changed: boolean } }, DatabaseUnavailable | NotFound | InvalidParameter | InvalidState | InsufficientScope>
  readonly history: (
    profile: ProfileContext,
    query: MergeHistoryQuery
  ) => Effect.Effect<ReadonlyArray<MergeHistoryEntry>, DatabaseUnavailable | InvalidParameter | CustomerNotFound | InsufficientScope>
  readonly undo: (
    actor: PrincipalShape,
    profile: ProfileContext,
    auditLogId: string
  ) => Effect.Effect<{ readonly data: MergeHistoryEntry; readonly meta: { readonly changed: boolean } }, DatabaseUnavailable | NotFound | InvalidState | InsufficientScope>
}>()("svc/IdentityService") {
  static readonly layer = Layer.effect(IdentityService)(
    Effect.gen(function*() {
      const repo = yield* IdentityRepo
      const customers = yield* CustomersRepo
      const declaredSources = yield* DeclaredSourcesRepo
      const touches = yield* Touches
      const conversions = yield* Conversions
      const audit = yield* AuditLog
      const healthcare = yield* HealthcareCheck

      /**
       * Moves everything of the merged customer to the survivor through each table's owner, marks
       * it merged, queues re-credit, recomputes first payments and records the merge; in the
       * caller's transaction.
       */
      const mergeCustomers = (input: {
        readonly mergeId: string
        readonly profileId: string
        readonly survivorId: string
        readonly mergedId: string
        readonly proposalId: string | null
      }) =>
        Effect.gen(function*() {
          const { mergedId: m, survivorId: s } = input
          const touchIds = yield* touches.moveToCustomer(m, s)
          const eventIds = yield* conversions.moveEvents(m, s)
          const conversionIds = yield* conversions.moveConversions(m, s)
          const identifierIds = yield* customers.moveIdentifiers(m, s)
          // One declared source per customer: the survivor's answer stands when both answered.
          const declared = yield* declaredSources.moveDeclaredSources(m, s)
          const remerged = yield* customers.markMerged(m, s)
          // The survivor's conversions are credited again by the attribution worker.
          yield* conversions.recreditCustomers([s])
          yield* conversions.recomputeFirstPayments(input.profileId, [s, m])
          const moved: Moved = {
            touches: touchIds,
            outcome_events: eventIds,
            conversions: conversionIds.conversions,
            payer_conversions: conversionIds.payer,
            identifiers: identifierIds.moved,
            hidden_identifiers: identifierIds.hidden,
            declared_sources: declared,
            remerged
          }
          yield* repo.recordMerge(input, moved)
          return moved
        })

      /** Puts back every row the merge moved, unmarks the merged customer, re-credits and recomputes both; in the caller's transaction. */
      const undoMerge = (profileId: string, row: MergeRow) =>
        Effect.gen(function*() {
          const { merged_id: m, moved, survivor_id: s } = row
          yield* touches.returnToCustomer(moved.touches, s, m)
          yield* conversions.returnEvents(moved.outcome_events, s, m)
          yield* conversions.returnConversions(moved.conversions, moved.payer_conversions, s, m)
          yield* customers.restoreIdentifiers(m, moved.identifiers, moved.hidden_identifiers)
          yield* declaredSources.returnDeclaredSources(moved.declared_sources, m)
          yield* customers.unmarkMerged(m, s, moved.remerged)
          // Both customers' conversions are credited again by the attribution worker.
          yield* conversions.recreditCustomers([s, m])
          yield* conversions.recomputeFirstPayments(profileId, [s, m])
          yield* repo.markUndone(row.id)
          // The pair stays apart: a human said so. The proposer never reopens a dismissed pair.
          if (row.proposal_id !== null) yield* repo.dismissProposal(row.proposal_id)
        })

      const noProposal = () => new NotFound({ message: "No merge proposal of this profile has this id.", reason: "merge_proposal_not_found" })
      const notLive = () =>
        new InvalidState({
          message: "One of the two customers was merged or erased since: there is nothing left to merge.",
          reason: "customer_not_live"
        })

      /** Both sides, rendered, in the order asked. */
      const sidesOf = Effect.fnUntraced(function*(profile: ProfileContext, a: string, b: string) {
        const found = yield* repo.sides(profile.profileId, [a, b])
        const left = found.get(a)
        const right = found.get(b)
        if (left === undefined || right === undefined) return Option.none<readonly [SideRow, SideRow]>()
        return Option.some([left, right] as const)
      })

      const render = Effect.fnUntraced(function*(profile: ProfileContext, row: ProposalRow) {
        const sides = yield* sidesOf(profile, row.customer_a, row.customer_b)
        if (Option.isNone(sides)) return yield* Effect.die("a proposal names a customer of another profile")
        return {
          id: row.id,
          status: row.status,
          evidence: row.evidence,
          customers: [renderSide(sides.value[0]), renderSide(sides.value[1])],
          created_at: row.created_at,
          decided_at: row.decided_at,
          snoozed_until: row.snoozed_until,
          merge_audit_log_id: row.merge_id
        } satisfies MergeProposal
      })

      const preview = Effect.fnUntraced(function*(survivor: SideRow, merged: SideRow) {
        if (!survivor.live || !merged.live) return yield* notLive()
        return { survivor: renderSide(survivor), merged: renderSide(merged), moves: yield* repo.previewMoves(survivor.id, merged.id) }
      })

      const scan = Effect.fn("Identity.scan")(function*(actor: PrincipalShape, profile: ProfileContext) {
        yield* healthcare.refuse(profile)
        const counts = yield* repo.scan(profile.profileId)
        yield* audit.record({
          actor,
          action: "identity.merge_proposals_scanned",
          targetKind: "profile",
          targetId: profile.profileId,
          workspaceId: profile.workspaceId,
          profileId: profile.profileId,
          details: counts
        })
        return counts
      })

      const list = Effect.fn("Identity.listProposals")(function*(
        profile: ProfileContext,
        query: ProposalsQuery
      ) {
        yield* healthcare.refuse(profile)
        const limit = query.limit ?? DEFAULT_PAGE
        const status = query.status ?? null
        // A cursor this queue did not issue is refused (decision 0138).
        const keyset = yield* parseCursor(query.cursor, (k) => isIsoDateTime(k.createdAt) && isUuid(k.id))
        const after = Option.map(keyset, (k) => ({ at: k.createdAt, id: k.id }))
        const rows = yield* repo.listProposals(profile.profileId, status, after, limit)
        const { page, pagination } = pageOf(rows, limit, (row) => ({ createdAt: row.created_at, id: row.id }))
        const counts = yield* repo.statusCounts(profile.profileId)
        return {
          data: yield* Effect.forEach(page, (row) => render(profile, row)),
          status_counts: {
            open: counts["open"] ?? 0,
            snoozed: counts["snoozed"] ?? 0,
            merged: counts["merged"] ?? 0,
            dismissed: counts["dismissed"] ?? 0,
            superseded: counts["superseded"] ?? 0
          },
          pagination
        }
      })

      const findProposal = (profile: ProfileContext, id: string, lock: boolean) =>
        isUuid(id)
          ? Effect.flatMap(repo.proposal(profile.profileId, id.toLowerCase(), lock), Option.match({
            onNone: () => Effect.fail(noProposal()),
            onSome: Effect.succeed
          }))
          : Effect.fail(noProposal())

      /** The survivor (default: the older) and the merged side of a pair. */
      const arrange = (pair: readonly [SideRow, SideRow], survivorId: string | undefined) => {
        if (survivorId === undefined) {
          const [older, younger] = [...pair].sort(olderFirst)
          return Option.some({ survivor: older!, merged: younger! })
        }
        const survivor = pair.find((side) => side.id === survivorId.toLowerCase())
        const merged = pair.find((side) => side.id !== survivorId.toLowerCase())
        return survivor === undefined || merged === undefined ? Option.none() : Option.some({ survivor, merged })
      }

      const previewProposal = Effect.fn("Identity.previewProposal")(function*(profile: ProfileContext, id: string) {
        yield* healthcare.refuse(profile)
        const row = yield* findProposal(profile, id, false)
        const pair = yield* sidesOf(profile, row.customer_a, row.customer_b)
        if (Option.isNone(pair)) return yield* Effect.die("a proposal names a customer of another profile")
        const arranged = arrange(pair.value, undefined)
        if (Option.isNone(arranged)) return yield* Effect.die("a pair without two sides")
        return yield* preview(arranged.value.survivor, arranged.value.merged)
      })

      const previewPair = Effect.fn("Identity.previewPair")(function*(
        profile: ProfileContext,
        query: MergePreviewQuery
      ) {
        yield* healthcare.refuse(profile)
        if (query.a.toLowerCase() === query.b.toLowerCase()) return yield* invalidQuery("b", "Expected another customer than a")
        const pair = yield* sidesOf(profile, query.a.toLowerCase(), query.b.toLowerCase())
        if (Option.isNone(pair)) {
          return yield* new CustomerNotFound({ message: "No customer of this profile has one of these ids." })
        }
        const arranged = arrange(pair.value, query.survivor)
        if (Option.isNone(arranged)) return yield* invalidQuery("survivor", "Expected a or b")
        return yield* preview(arranged.value.survivor, arranged.value.merged)
      })

      const decide = Effect.fn("Identity.decide")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        id: string,
        decision: Decision
      ) {
        yield* healthcare.refuse(profile)
        let snoozeUntil: string | null = null
        if (decision.decision === "snooze") {
          const now = yield* Clock.currentTimeMillis
          if (decision.snooze_until !== undefined) {
            if (!isIsoDateTime(decision.snooze_until) || Date.parse(decision.snooze_until) <= now) {
              return yield* new InvalidParameter({
                message: "body.snooze_until: Expected a future ISO 8601 date-time with an offset",
                reason: "invalid_parameter:snooze_until"
              })
            }
            snoozeUntil = new Date(Date.parse(decision.snooze_until)).toISOString()
          } else snoozeUntil = new Date(now + DEFAULT_SNOOZE_DAYS * 86_400_000).toISOString()
        }
        const outcome = yield* repo.transaction(Effect.gen(function*() {
          // A merge locks the two customers before the proposal, the order ingest (customers, then
          // the proposer's upsert) and erasure use: the other order deadlocked under concurrency.
          if (decision.decision === "merge") {
            const named = yield* findProposal(profile, id, false)
            yield* repo.lockPair(named.customer_a, named.customer_b)
          }
          const row = yield* findProposal(profile, id, true)
          const target = decision.decision === "merge" ? "merged" : decision.decision === "dismiss" ? "dismissed" : "snoozed"
          // The same decision again answers the proposal as it is (a retry); a decided proposal takes no other.
          if (row.status === target && target !== "snoozed") return { row, changed: false }
          if (row.status === "merged" || row.status === "dismissed" || row.status === "superseded") {
            return yield* new InvalidState({
              message: `This proposal is ${row.status}; it takes no other decision.${row.status === "merged" ? " Undo the merge through its audit log id." : ""}`,
              reason: `proposal_${row.status}`
            })
          }
          if (decision.decision !== "merge") {
            yield* repo.setProposalStatus(row.id, target === "snoozed" ? "snoozed" : "dismissed", snoozeUntil, null)
            yield* audit.record({
              actor,
              action: `identity.merge_proposal_${target}`,
              targetKind: "merge_proposal",
              targetId: row.id,
              workspaceId: profile.workspaceId,
              profileId: profile.profileId,
              details: snoozeUntil === null ? {} : { snooze_until: snoozeUntil }
            })
            return { row, changed: true }
          }
          if (!(yield* repo.lockPair(row.customer_a, row.customer_b))) return yield* notLive()
          const pair = yield* sidesOf(profile, row.customer_a, row.customer_b)
          if (Option.isNone(pair)) return yield* Effect.die("a proposal names a customer of another profile")
          const arranged = arrange(pair.value, decision.survivor_customer_profile_id)
          if (Option.isNone(arranged)) {
            return yield* new InvalidParameter({
              message: "body.survivor_customer_profile_id: Expected one of the proposal's two customers",
              reason: "invalid_parameter:survivor_customer_profile_id"
            })
          }
          const mergeId = crypto.randomUUID()
          const moved = yield* mergeCustomers({
            mergeId,
            profileId: profile.profileId,
            survivorId: arranged.value.survivor.id,
            mergedId: arranged.value.merged.id,
            proposalId: row.id
          })
          yield* repo.setProposalStatus(row.id, "merged", null, mergeId)
          yield* repo.supersede(arranged.value.merged.id, row.id)
          yield* audit.record({
            id: mergeId,
            actor,
            action: "customer.merged",
            targetKind: "customer",
            targetId: arranged.value.survivor.id,
            workspaceId: profile.workspaceId,
            profileId: profile.profileId,
            details: {
              proposal_id: row.id,
              merged_customer_profile_id: arranged.value.merged.id,
              moved: Object.fromEntries(Object.entries(moved).map(([kind, list]) => [kind, list.length]))
            }
          })
          return { row, changed: true }
        }))
        const fresh = yield* findProposal(profile, outcome.row.id, false)
        return { data: yield* render(profile, fresh), meta: { changed: outcome.changed } }
      })

      const history = Effect.fn("Identity.history")(function*(
        profile: ProfileContext,
        query: MergeHistoryQuery
      ) {
        yield* healthcare.refuse(profile)
        const given = [query.customer_profile_id, query.customer_key].filter((value) => value !== undefined)
        if (given.length !== 1) {
          return yield* new InvalidParameter({ message: "query: send exactly one of customer_profile_id or customer_key.", reason: "selector" })
        }
        let customerId: Option.Option<string>
        if (query.customer_profile_id !== undefined) {
          const sides = yield* repo.sides(profile.profileId, [query.customer_profile_id.toLowerCase()])
          customerId = Option.fromNullishOr(sides.get(query.customer_profile_id.toLowerCase())?.id)
        } else customerId = yield* customers.customerByKey(profile.profileId, query.customer_key ?? "")
        if (Option.isNone(customerId)) return yield* new CustomerNotFound({ message: "No customer of this profile matches." })
        return (yield* repo.history(profile.profileId, customerId.value)).map(renderHistory)
      })

      const undo = Effect.fn("Identity.undo")(function*(actor: PrincipalShape, profile: ProfileContext, auditLogId: string) {
        yield* healthcare.refuse(profile)
        const noMerge = () => new NotFound({ message: "No merge of this profile has this audit log id.", reason: "merge_not_found" })
        if (!isUuid(auditLogId)) return yield* noMerge()
        return yield* repo.transaction(Effect.gen(function*() {
          const found = yield* repo.mergeById(profile.profileId, auditLogId.toLowerCase(), true)
          if (Option.isNone(found)) return yield* noMerge()
          const row = found.value
          // Undone already: a retry answers the same.
          if (row.undone_at !== null) return { data: renderHistory(row), meta: { changed: false } }
          const sides = yield* repo.sides(profile.profileId, [row.survivor_id, row.merged_id])
          const survivor = sides.get(row.survivor_id)
          if (survivor === undefined || !survivor.live) {
            return yield* new InvalidState({
              message: "The surviving customer was merged again or erased since; undo that first.",
              reason: "survivor_not_live"
            })
          }
          yield* repo.lockPair(row.survivor_id, row.merged_id)
          yield* undoMerge(profile.profileId, row)
          yield* audit.record({
            actor,
            action: "customer.merge_undone",
            targetKind: "customer",
            targetId: row.survivor_id,
            workspaceId: profile.workspaceId,
            profileId: profile.profileId,
            details: { merge_audit_log_id: row.id, merged_customer_profile_id: row.merged_id }
          })
          const undone = yield* repo.mergeById(profile.profileId, row.id, false)
          if (Option.isNone(undone)) return yield* Effect.die("an undone merge vanished")
          return { data: renderHistory(undone.value), meta: { changed: true } }
        }))
      })

      return { scan, list, previewProposal, previewPair, decide, history, undo }
    })
  ).pipe(Layer.provide([
    IdentityRepo.layer,
    CustomersRepo.layer,
    DeclaredSourcesRepo.layer,
    Touches.layer,
    Conversions.layer,
    AuditLog.layer,
    HealthcareCheck.layer
  ]))
}
