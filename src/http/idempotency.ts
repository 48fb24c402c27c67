/**
 * `Idempotency-Key` for operations whose policy says `required` or `optional`.
 *
 * The scope of a key is the credential + route + key value. The first request claims the key
 * with one INSERT (a unique constraint, not read-then-write); a repeat of the same request
 * replays the stored 2xx for 24 hours without running the handler; the same key with a
 * different request is 409 `idempotency_key_conflict`; a repeat while the first is still
 * running is 409 `idempotency_key_in_flight`. Only a 2xx is stored: any other outcome
 * releases the key so the client can retry.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiMiddleware } from "effect/http-api"
import { SqlClient } from "effect/sql/SqlClient"
import * as SqlSchema from "effect/sql/SqlSchema"
import { createHash } from "node:crypto"
import {
  DatabaseUnavailable,
  IdempotencyKeyConflict,
  IdempotencyKeyInFlight,
  ValidationError
} from "../../schema/errors.ts"
import { orDatabaseUnavailable } from "../platform/database.ts"
import { Principal, type PrincipalShape } from "../auth/principal.ts"
import { Policy, PUBLIC } from "./policy.ts"

export const REPLAY_WINDOW_HOURS = 24
/** A claim older than this is from a request that died mid-flight; it may be taken over. */
const STALE_CLAIM_SECONDS = 120
const MAX_KEY_LENGTH = 255

export class Idempotency extends HttpApiMiddleware.Service<Idempotency, { requires: Principal }>()("svc/Idempotency", {
  error: [ValidationError.wire, IdempotencyKeyConflict.wire, IdempotencyKeyInFlight.wire, DatabaseUnavailable.wire]
}) {}

const StoredRow = Schema.Struct({
  request_hash: Schema.String,
  state: Schema.Literals(["in_flight", "completed"]),
  response_status: Schema.NullOr(Schema.Int),
  response_headers: Schema.NullOr(Schema.Record(Schema.String, Schema.String)),
  response_body: Schema.NullOr(Schema.String),
  age_seconds: Schema.Finite
})

const scopeOf = (principal: PrincipalShape): string => {
  switch (principal.kind) {
    case "api_key":
      return `key:${principal.keyId}`
    case "user_token":
      return `user_token:${principal.tokenId}`
    case "app_client":
      return `app:${principal.appId}`
    case "session":
      return `session:${principal.userId}`
    case "operator":
      return "operator"
    case "anonymous":
      return "anonymous"
  }
}

const replayedHeaders = new Set(["content-type", "location", "deprecation", "sunset", "link"])
const decoder = new TextDecoder()

export const IdempotencyLayer = Layer.effect(Idempotency)(
  Effect.gen(function*() {
    const sql = yield* SqlClient

    const claim = SqlSchema.findOneOption({
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

    const existing = SqlSchema.findOneOption({
      Request: Schema.Struct({ scope: Schema.String, route: Schema.String, key: Schema.String }),
      Result: StoredRow,
      execute: ({ scope, route, key }) =>
        sql`SELECT request_hash, state, response_status, response_headers, response_body,
                   extract(epoch FROM now() - created_at)::float8 AS age_seconds
            FROM idempotency_keys WHERE scope = ${scope} AND route = ${route} AND key = ${key}`
    })

    const complete = (scope: string, route: string, key: string, response: HttpServerResponse.HttpServerResponse) => {
      const body = response.body._tag === "Uint8Array" ? decoder.decode(response.body.body) : ""
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(response.headers)) {
        if (replayedHeaders.has(name)) headers[name] = value
      }
      if (response.body._tag === "Uint8Array") headers["content-type"] = response.body.contentType
      return sql`UPDATE idempotency_keys
                 SET state = 'completed', response_status = ${response.status},
                     response_headers = ${JSON.stringify(headers)}::jsonb, response_body = ${body}
                 WHERE scope = ${scope} AND route = ${route} AND key = ${key}`
    }

    const release = (scope: string, route: string, key: string) =>
      sql`DELETE FROM idempotency_keys WHERE scope = ${scope} AND route = ${route} AND key = ${key} AND state = 'in_flight'`

    return (httpEffect, { endpoint }) => {
      const policy = Context.getOrElse(endpoint.annotations, Policy, () => PUBLIC)
      if (policy.idempotency === "none") return httpEffect
      return Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const key = request.headers["idempotency-key"]
        if (key === undefined || key === "") {
          if (policy.idempotency === "optional") return yield* httpEffect
          return yield* new ValidationError({ message: "header.idempotency-key: this operation requires an Idempotency-Key header" })
        }
        if (key.length > MAX_KEY_LENGTH) {
          return yield* new ValidationError({ message: `header.idempotency-key: at most ${MAX_KEY_LENGTH} characters` })
        }
        const principal = yield* Principal
        const scope = scopeOf(principal)
        const route = `${endpoint.method} ${endpoint.path}`
        const body = yield* Effect.orDie(request.text)
        const hash = createHash("sha256").update(`${request.method}\n${request.url}\n${body}`).digest("hex")

        const claimed = yield* orDatabaseUnavailable(claim({ scope, route, key, hash }))
        if (Option.isNone(claimed)) {
          const stored = yield* orDatabaseUnavailable(existing({ scope, route, key }))
          if (Option.isNone(stored)) {
            return yield* new IdempotencyKeyInFlight({ message: "A request with this Idempotency-Key just finished; retry." })
          }
          const row = stored.value
          if (row.request_hash !== hash) {
            return yield* new IdempotencyKeyConflict({
              message: "This Idempotency-Key was already used with a different request on this route."
            })
          }
          if (row.state === "in_flight") {
            return yield* new IdempotencyKeyInFlight({
              message: "The first request with this Idempotency-Key is still running; retry with backoff."
            })
          }
          return HttpServerResponse.text(row.response_body ?? "", {
            status: row.response_status ?? 200,
            headers: { ...row.response_headers, "idempotent-replayed": "true" },
            contentType: row.response_headers?.["content-type"] ?? "application/json"
          })
        }
        return yield* httpEffect.pipe(
          Effect.onExit((exit) =>
            exit._tag === "Success" && exit.value.status >= 200 && exit.value.status < 300
              ? complete(scope, route, key, exit.value).pipe(Effect.orDie)
              : release(scope, route, key).pipe(Effect.ignore)
          )
        )
      })
    }
  })
)
