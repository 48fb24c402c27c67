/**
 * `GET /api/v1/outcomes/recorded` (decision 0044): the profile's `outcome.recorded` events in
 * order, from the transactional outbox, within a 90-day window, from an opaque cursor. The same
 * events webhooks deliver; `contact` only for callers holding `customers:read`. On a
 * healthcare-family profile only the provisioning app's keys may replay (403
 * `healthcare_scope_forbidden` for anyone else).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { type DatabaseUnavailable, HealthcareScopeForbidden, InvalidParameter } from "../../../schema/errors.ts"
import { DEFAULT_REPLAY_PAGE, type OutcomeRecordedEvent, type OutcomeReplayQuery } from "../../../schema/events.ts"
import { isHealthcareFamily } from "../../../schema/scopes.ts"
import { PiiAccessLog } from "../../audit/pii-access.ts"
import { heldScopes, type PrincipalShape, type ProfileContext } from "../../auth/principal.ts"
import { decodeCursor, encodeCursor } from "../../platform/pagination.ts"
import { decodeRows, orDatabaseUnavailable } from "../../platform/database.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"
import { OUTCOME_RECORDED } from "../outcomes/recorder.ts"
import { EventsRepo } from "../outcomes/repo.ts"
import { invalidQuery } from "../../../schema/query-errors.ts"

export const REPLAY_WINDOW_DAYS = 90
export { DEFAULT_REPLAY_PAGE, MAX_REPLAY_PAGE } from "../../../schema/events.ts"
/**
 * Rows newer than this are not answered yet: a transaction that began earlier may still commit
 * rows stamped before them, and a cursor must never pass over a row that appears later.
 */
export const SETTLE_SECONDS = 10

const Row = Schema.Struct({
  id: Schema.String,
  created_at: Schema.String,
  payload: Schema.Struct({
    data: Schema.Struct({
      provider: Schema.String,
      outcome_type: Schema.String,
      occurred_at: Schema.String,
      customer_key: Schema.NullOr(Schema.String),
      value: Schema.NullOr(Schema.String),
      currency: Schema.NullOr(Schema.String),
      outcome_event_id: Schema.String,
      conversion_id: Schema.NullOr(Schema.String)
    }),
    delivery: Schema.Struct({ customer_id: Schema.NullOr(Schema.String) })
  }),
  first_name: Schema.NullOr(Schema.String),
  last_name: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String),
  customer_live: Schema.Boolean
})


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
      const sql = yield* SqlClient
      const piiLog = yield* PiiAccessLog
      const rows = decodeRows(Row)
      const events = yield* EventsRepo

      const list = Effect.fn("Events.replayOutcomes")(function*(
        principal: PrincipalShape,
        profile: ProfileContext,
        query: OutcomeReplayQuery
      ) {
        const limit = query.limit ?? DEFAULT_REPLAY_PAGE
        let after = Option.none<{ readonly at: string; readonly id: string }>()
        if (query.cursor !== undefined && query.cursor !== "") {
          const keyset = decodeCursor(query.cursor)
          if (Option.isNone(keyset) || Number.isNaN(Date.parse(keyset.value.createdAt))) {
            return yield* invalidQuery("cursor", "Not a cursor this replay answered; start again without it")
          }
          after = Option.some({ at: keyset.value.createdAt, id: keyset.value.id })
        }
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
        const start = Option.match(after, {
          onNone: () => sql`o.created_at >= now() - make_interval(days => ${REPLAY_WINDOW_DAYS})`,
          onSome: (keyset) =>
            sql`o.created_at >= now() - make_interval(days => ${REPLAY_WINDOW_DAYS})
                AND (o.created_at, o.id) > (${keyset.at}::timestamptz, ${keyset.id}::uuid)`
        })
        const found = yield* orDatabaseUnavailable(rows(sql`
          SELECT o.id, ${isoTimestamp(sql, "o.created_at")} AS created_at, o.payload,
                 c.first_name, c.last_name,
                 (SELECT value FROM customer_identifiers i WHERE i.customer_id = c.id AND i.kind = 'email' AND i.removed_at IS NULL
                  ORDER BY i.is_primary DESC, i.created_at LIMIT 1) AS email,
                 (SELECT value FROM customer_identifiers i WHERE i.customer_id = c.id AND i.kind = 'phone' AND i.removed_at IS NULL
                  ORDER BY i.is_primary DESC, i.created_at LIMIT 1) AS phone,
                 (c.id IS NOT NULL AND c.erased_at IS NULL) AS customer_live
          FROM outbox o
          LEFT JOIN customers c ON c.id = (o.payload->'delivery'->>'customer_id')::uuid
          WHERE o.profile_id = ${profile.profileId} AND o.topic = ${OUTCOME_RECORDED}
            AND o.created_at < now() - make_interval(secs => ${SETTLE_SECONDS})
            AND ${start}
          ORDER BY o.created_at, o.id
          LIMIT ${limit + 1}`))
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
  ).pipe(Layer.provide([PiiAccessLog.layer, EventsRepo.layer]))
}
