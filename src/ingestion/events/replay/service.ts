/**
 * `GET /api/v1/outcomes/recorded` (decision 0044): the profile's `outcome.recorded` events in
 * order, from the transactional outbox, within a 90-day window, from an opaque cursor. The same
 * events webhooks deliver; `contact` only for callers holding `customers:read`. On a
 * healthcare-family profile only the provisioning app's keys may replay (403
 * `healthcare_scope_forbidden` for anyone else).
 */
import { Context, Effect, Layer, Option } from "effect"
import { type DatabaseUnavailable, HealthcareScopeForbidden, InvalidParameter } from "../../../../schema/errors.ts"
import { DEFAULT_REPLAY_PAGE, type OutcomeRecordedEvent, type OutcomeReplayQuery, REPLAY_WINDOW_DAYS } from "../../../../schema/events.ts"
import { isHealthcareFamily } from "../../../../schema/scopes.ts"
import { PiiAccessLog } from "../../../kernel/audit/pii-access.ts"
import { heldScopes, type PrincipalShape, type ProfileContext } from "../../../kernel/principal.ts"
import { encodeCursor, parseCursor } from "../../../platform/pagination.ts"
import { OUTCOME_RECORDED } from "../outcomes/recorder.ts"
import { OutboxRepo } from "../../../kernel/outbox/repo.ts"
import { Conversions } from "../../../attribution/conversions/service.ts"
import { invalidQuery } from "../../../../schema/query-errors.ts"

/**
 * Rows newer than this are not answered yet: a transaction that began earlier may still commit
 * rows stamped before them, and a cursor must never pass over a row that appears later.
 */
export const SETTLE_SECONDS = 10

export class OutcomeReplay extends Context.Service<OutcomeReplay, {
  readonly list: (
    principal: PrincipalShape,
    profile: ProfileContext,
    query: OutcomeReplayQuery
  ) => Effect.Effect<
    { readonly data: ReadonlyArray<OutcomeRecordedEvent>; readonly pagination: { readonly has_next: boolean; readonly cursor: string | null } },
    DatabaseUnavailable | InvalidParameter | HealthcareScopeForbidden
  >
}>()("svc/OutcomeReplay") {
  static readonly layer = Layer.effect(OutcomeReplay)(
    Effect.gen(function*() {
      const piiLog = yield* PiiAccessLog
      const events = yield* Conversions
      const outbox = yield* OutboxRepo

      const list = Effect.fn("Events.replayOutcomes")(function*(
        principal: PrincipalShape,
        profile: ProfileContext,
        query: OutcomeReplayQuery
      ) {
        const limit = query.limit ?? DEFAULT_REPLAY_PAGE
        const after = Option.map(
          yield* parseCursor(
            query.cursor,
            (keyset) => !Number.isNaN(Date.parse(keyset.createdAt)),
            () => invalidQuery("cursor", "Not a cursor this replay answered; start again without it")
          ),
          (keyset) => ({ at: keyset.createdAt, id: keyset.id })
        )
        const profileFacts = (yield* events.profileFacts([profile.profileId])).get(profile.profileId)
        if (profileFacts === undefined) return yield* Effect.die("the request's profile has no row")
        const provisioningApp = principal.kind === "api_key" && principal.oauthAppId !== null &&
          principal.oauthAppId === profileFacts.provisioned_by_app_id
        if (isHealthcareFamily(profileFacts) && !provisioningApp) {
          return yield* new HealthcareScopeForbidden({
            message: "On a healthcare-family profile outcome.recorded events are replayed only to the provisioning app.",
            reason: "healthcare_replay_provisioning_app_only"
          })
        }
        // The connect-broker tier reads empty (decision 0026).
        if (!profile.attributionEnabled) return { data: [], pagination: { has_next: false, cursor: query.cursor ?? null } }
        const withContact = heldScopes(principal).includes("customers:read")
        const found = yield* outbox.recorded({
          profileId: profile.profileId,
          topic: OUTCOME_RECORDED,
          windowDays: REPLAY_WINDOW_DAYS,
          settleSeconds: SETTLE_SECONDS,
          after,
          limit
        })
        const page = found.slice(0, limit)
        const last = page[page.length - 1]
        if (withContact && page.some((row) => row.customer_live)) {
          yield* piiLog.record({
            principal,
            workspaceId: profile.workspaceId,
            profileId: profile.profileId,
            route: "GET /api/v1/outcomes/recorded",
            result: "allowed"
          })
        }
        return {
          data: page.map((row): OutcomeRecordedEvent => ({
            id: row.id,
            type: "outcome.recorded",
            created_at: row.created_at,
            data: {
              ...row.payload.data,
              ...(withContact
                ? {
                  contact: row.customer_live
                    ? {
                      customer_key: row.payload.data.customer_key,
                      first_name: row.first_name,
                      last_name: row.last_name,
                      email: row.email,
                      phone: row.phone
                    }
                    : null
                }
                : {})
            }
          })),
          pagination: {
            has_next: found.length > limit,
            // Where to continue from: after this page's last event, or where the caller was.
            cursor: last === undefined ? query.cursor ?? null : encodeCursor({ createdAt: last.created_at, id: last.id })
          }
        }
      })

      return { list }
    })
  ).pipe(Layer.provide([PiiAccessLog.layer, Conversions.layer, OutboxRepo.layer]))
}
