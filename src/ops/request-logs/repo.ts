/**
 * The owner of `request_logs` (decision 0130): a profile's recent `/api/v1` requests, written in
 * batches (one statement per batch), listed newest first within the retention. The table is
 * partitioned by month (decision 0133): the partition maintenance drops a month once it is past the
 * retention, so rows a little older than the retention may still be stored; the list never answers them.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import { REQUEST_LOG_RETENTION_DAYS } from "../../../schema/request-logs.ts"
import type { RequestLogEntry } from "../../kernel/request-log.ts"
import { atDatabaseBoundary, decodeRows } from "../../platform/database.ts"

export const RequestLogRow = Schema.Struct({
  id: Schema.String,
  request_id: Schema.String,
  method: Schema.String,
  path: Schema.String,
  route: Schema.NullOr(Schema.String),
  status: Schema.Int,
  duration_ms: Schema.Int,
  principal_kind: Schema.Literals(["api_key", "user_token", "session"]),
  key_id: Schema.NullOr(Schema.String),
  created_at: Schema.String
})
export type RequestLogRow = typeof RequestLogRow.Type

export interface RequestLogFilter {
  readonly profileId: string
  /** An exact status, or a class as its range `[from, to]`. */
  readonly status: { readonly from: number; readonly to: number } | undefined
  readonly method: string | undefined
  readonly pathPrefix: string | undefined
  readonly requestId: string | undefined
  readonly before: Option.Option<{ readonly at: string; readonly id: string }>
  readonly limit: number
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class RequestLogsRepo extends Context.Service<RequestLogsRepo, {
  /** Writes a batch in one statement. */
  readonly insert: (entries: ReadonlyArray<RequestLogEntry>) => Repo<void>
  /** The profile's entries matching the filter, newest first, before the keyset; `limit` + 1 rows. */
  readonly list: (filter: RequestLogFilter) => Repo<ReadonlyArray<RequestLogRow>>
}>()("svc/RequestLogsRepo") {
  static readonly layer = Layer.effect(RequestLogsRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const many = decodeRows(RequestLogRow)

      // The start times go as text: whole and fractional milliseconds would be typed apart (int and
      // float8), and the driver refuses an array whose elements infer different types.
      const insert = (entries: ReadonlyArray<RequestLogEntry>) =>
        entries.length === 0 ? Effect.void : Effect.asVoid(sql`
          INSERT INTO request_logs (profile_id, created_at, id, request_id, method, path, route, status, duration_ms, principal_kind, key_id)
          SELECT t.profile_id, to_timestamp(t.started_at / 1000.0), gen_random_uuid(), t.request_id, t.method, t.path,
                 NULLIF(t.route, ''), t.status, t.duration_ms, t.principal_kind, NULLIF(t.key_id, '')::uuid
          FROM unnest(${entries.map((e) => e.profileId)}::uuid[], ${entries.map((e) => String(e.startedAt))}::float8[],
                      ${entries.map((e) => e.requestId)}::text[], ${entries.map((e) => e.method)}::text[],
                      ${entries.map((e) => e.path)}::text[], ${entries.map((e) => e.route ?? "")}::text[],
                      ${entries.map((e) => e.status)}::int[], ${entries.map((e) => e.durationMs)}::int[],
                      ${entries.map((e) => e.principalKind)}::text[], ${entries.map((e) => e.keyId ?? "")}::text[])
            AS t(profile_id, started_at, request_id, method, path, route, status, duration_ms, principal_kind, key_id)`)

      const list = ({ before, limit, method, pathPrefix, profileId, requestId, status }: RequestLogFilter) =>
        many(sql`
          SELECT id, request_id, method, path, route, status, duration_ms, principal_kind, key_id,
                 to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at
          FROM request_logs
          WHERE profile_id = ${profileId}
            AND ${status === undefined ? sql`true` : sql`status BETWEEN ${status.from} AND ${status.to}`}
            AND ${method === undefined ? sql`true` : sql`method = ${method}`}
            AND ${pathPrefix === undefined ? sql`true` : sql`starts_with(path, ${pathPrefix})`}
            AND created_at >= now() - make_interval(days => ${REQUEST_LOG_RETENTION_DAYS})
            AND ${requestId === undefined ? sql`true` : sql`request_id = ${requestId}`}
            AND ${Option.match(before, {
          onNone: () => sql`true`,
          onSome: (keyset) => sql`(created_at, id) < (${keyset.at}::timestamptz, ${keyset.id}::uuid)`
        })}
          ORDER BY created_at DESC, id DESC
          LIMIT ${limit + 1}`)

      return atDatabaseBoundary({ insert, list })
    })
  )
}
