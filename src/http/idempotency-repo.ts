/**
 * The owner of `idempotency_keys`: the claims and stored answers of the `Idempotency-Key`
 * middleware (src/http/idempotency.ts). A key is scoped by credential + route + key value.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import type { DatabaseUnavailable } from "../../schema/errors.ts"
import { atDatabaseBoundary } from "../platform/database.ts"

export const REPLAY_WINDOW_HOURS = 24
/** A claim older than this is from a request that died mid-flight; it may be taken over. */
const STALE_CLAIM_SECONDS = 120

export const StoredRow = Schema.Struct({
  request_hash: Schema.String,
  state: Schema.Literals(["in_flight", "completed"]),
  response_status: Schema.NullOr(Schema.Int),
  response_headers: Schema.NullOr(Schema.Record(Schema.String, Schema.String)),
  response_body: Schema.NullOr(Schema.String),
  age_seconds: Schema.Finite
})
export type StoredRow = typeof StoredRow.Type

export interface KeyScope {
  readonly scope: string
  readonly route: string
  readonly key: string
}

/** The 2xx answer stored for replays. */
export interface StoredAnswer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export class IdempotencyRepo extends Context.Service<IdempotencyRepo, {
  /**
   * Claims the key for a request with this hash, in one INSERT (a unique constraint, not
   * read-then-write): a new key, an expired one or a stale in-flight claim. False when held.
   */
  readonly claim: (key: KeyScope, hash: string) => Repo<boolean>
  /** The key's row as stored, with its age. */
  readonly find: (key: KeyScope) => Repo<Option.Option<StoredRow>>
  /** Stores the answer of the claiming request. */
  readonly complete: (key: KeyScope, answer: StoredAnswer) => Repo<void>
  /** Drops a claim still in flight (its request did not answer 2xx), so the client can retry. */
  readonly release: (key: KeyScope) => Repo<void>
}>()("svc/IdempotencyRepo") {
  static readonly layer = Layer.effect(IdempotencyRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient

      const claimed = SqlSchema.findOneOption({
        Request: Schema.Struct({ scope: Schema.String, route: Schema.String, key: Schema.String, hash: Schema.String }),
        Result: Schema.Struct({ claimed: Schema.Boolean }),
        execute: ({ scope, route, key, hash }) =>
          sql`INSERT INTO idempotency_keys (scope, route, key, request_hash, state, expires_at)
              VALUES (${scope}, ${route}, ${key}, ${hash}, 'in_flight', now() + make_interval(hours => ${REPLAY_WINDOW_HOURS}))
              ON CONFLICT (scope, route, key) DO UPDATE
                SET request_hash = EXCLUDED.request_hash, state = 'in_flight', created_at = now(),
                    expires_at = EXCLUDED.expires_at, response_status = NULL, response_headers = NULL, response_body = NULL
                WHERE idempotency_keys.expires_at < now()
                   OR (idempotency_keys.state = 'in_flight'
                       AND idempotency_keys.created_at < now() - make_interval(secs => ${STALE_CLAIM_SECONDS}))
              RETURNING true AS claimed`
      })
      const claim = (key: KeyScope, hash: string) => Effect.map(claimed({ ...key, hash }), Option.isSome)

      const find = SqlSchema.findOneOption({
        Request: Schema.Struct({ scope: Schema.String, route: Schema.String, key: Schema.String }),
        Result: StoredRow,
        execute: ({ scope, route, key }) =>
          sql`SELECT request_hash, state, response_status, response_headers, response_body,
                     extract(epoch FROM now() - created_at)::float8 AS age_seconds
              FROM idempotency_keys WHERE scope = ${scope} AND route = ${route} AND key = ${key}`
      })

      const complete = ({ scope, route, key }: KeyScope, answer: StoredAnswer) =>
        Effect.asVoid(sql`UPDATE idempotency_keys
                          SET state = 'completed', response_status = ${answer.status},
                              response_headers = ${JSON.stringify(answer.headers)}::jsonb, response_body = ${answer.body}
                          WHERE scope = ${scope} AND route = ${route} AND key = ${key}`)

      const release = ({ scope, route, key }: KeyScope) =>
        Effect.asVoid(
          sql`DELETE FROM idempotency_keys WHERE scope = ${scope} AND route = ${route} AND key = ${key} AND state = 'in_flight'`
        )

      return atDatabaseBoundary({ claim, find: (key: KeyScope) => find(key), complete, release })
    })
  )
}
