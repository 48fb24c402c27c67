/**
 * A profile's recent API requests (issue 33, decision 0130): the list behind
 * `GET /api/v1/request-logs`, which answers the last 7 days (older months are dropped by the
 * partition maintenance, decision 0133).
 */
import { Context, Effect, Layer, Option } from "effect"
import type { DatabaseUnavailable, InvalidParameter } from "../../../schema/errors.ts"
import { isUuid } from "../../../schema/common.ts"
import { type RequestLog, type RequestLogsQuery } from "../../../schema/request-logs.ts"
import type { ProfileContext } from "../../kernel/principal.ts"
import { DEFAULT_PAGE_SIZE, parseCursor, toPage } from "../../platform/pagination.ts"
import { type RequestLogRow, RequestLogsRepo } from "./repo.ts"

/** `4xx` as the range 400-499, `404` as itself. */
const statusRange = (status: string | undefined) => {
  if (status === undefined) return undefined
  if (status.endsWith("xx")) {
    const from = Number(status[0]) * 100
    return { from, to: from + 99 }
  }
  return { from: Number(status), to: Number(status) }
}

const render = (row: RequestLogRow): RequestLog => ({
  id: row.id,
  request_id: row.request_id,
  method: row.method,
  path: row.path,
  route: row.route,
  status: row.status,
  duration_ms: row.duration_ms,
  principal_kind: row.principal_kind,
  key_id: row.key_id,
  created_at: row.created_at
})

export class RequestLogs extends Context.Service<RequestLogs, {
  readonly list: (profile: ProfileContext, query: RequestLogsQuery) => Effect.Effect<
    { readonly data: ReadonlyArray<RequestLog>; readonly pagination: { readonly has_next: boolean; readonly cursor: string | null } },
    DatabaseUnavailable | InvalidParameter
  >
}>()("svc/RequestLogs") {
  static readonly layer = Layer.effect(RequestLogs)(
    Effect.gen(function*() {
      const repo = yield* RequestLogsRepo

      const list = Effect.fn("RequestLogs.list")(function*(profile: ProfileContext, query: RequestLogsQuery) {
        const limit = query.limit ?? DEFAULT_PAGE_SIZE
        const before = Option.map(
          yield* parseCursor(query.cursor, (keyset) => !Number.isNaN(Date.parse(keyset.createdAt)) && isUuid(keyset.id)),
          (keyset) => ({ at: keyset.createdAt, id: keyset.id })
        )
        const rows = yield* repo.list({
          profileId: profile.profileId,
          status: statusRange(query.status),
          method: query.method,
          pathPrefix: query.path_prefix,
          requestId: query.request_id,
          before,
          limit
        })
        return toPage(rows, limit, render)
      })

      return { list }
    })
  ).pipe(Layer.provide(RequestLogsRepo.layer))
}
