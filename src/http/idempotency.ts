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
import { Context, Effect, Layer, Option } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiMiddleware } from "effect/http-api"
import { createHash } from "node:crypto"
import {
  DatabaseUnavailable,
  IdempotencyKeyConflict,
  IdempotencyKeyInFlight,
  InvalidRequest,
  ValidationError
} from "../../schema/errors.ts"
import { Principal, type PrincipalShape } from "../kernel/principal.ts"
import { IdempotencyRepo } from "./idempotency-repo.ts"
import { Policy, PUBLIC } from "./policy.ts"

const MAX_KEY_LENGTH = 255

export class Idempotency extends HttpApiMiddleware.Service<Idempotency, { requires: Principal }>()("svc/Idempotency", {
  error: [ValidationError.wire, InvalidRequest.wire, IdempotencyKeyConflict.wire, IdempotencyKeyInFlight.wire, DatabaseUnavailable.wire]
}) {}

const scopeOf = (principal: PrincipalShape): string => {
  switch (principal.kind) {
    case "api_key":
      return `key:${principal.keyId}`
    case "user_token":
      return `user_token:${principal.tokenId}`
    case "app_client":
      return `app:${principal.appId}`
    case "service":
      return `service:${principal.credentialId}`
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
    const repo = yield* IdempotencyRepo

    const complete = (scope: string, route: string, key: string, response: HttpServerResponse.HttpServerResponse) => {
      const body = response.body._tag === "Uint8Array" ? decoder.decode(response.body.body) : ""
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(response.headers)) {
        if (replayedHeaders.has(name)) headers[name] = value
      }
      if (response.body._tag === "Uint8Array") headers["content-type"] = response.body.contentType
      return repo.complete({ scope, route, key }, { status: response.status, headers, body })
    }

    return (httpEffect, { endpoint }) => {
      const policy = Context.getOrElse(endpoint.annotations, Policy, () => PUBLIC)
      if (policy.idempotency === "none") return httpEffect
      return Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const key = request.headers["idempotency-key"]
        if (key === undefined || key === "") {
          if (policy.idempotency === "optional") return yield* httpEffect
          // A missing required header is a malformed request, not an invalid body (api-endpoints.md, Ad actions rule 1).
          return yield* new InvalidRequest({ message: "header.idempotency-key: this operation requires an Idempotency-Key header" })
        }
        if (key.length > MAX_KEY_LENGTH) {
          return yield* new ValidationError({ message: `header.idempotency-key: at most ${MAX_KEY_LENGTH} characters` })
        }
        const principal = yield* Principal
        const scope = scopeOf(principal)
        const route = `${endpoint.method} ${endpoint.path}`
        const body = yield* Effect.orDie(request.text)
        const hash = createHash("sha256").update(`${request.method}\n${request.url}\n${body}`).digest("hex")

        const claimed = yield* repo.claim({ scope, route, key }, hash)
        if (!claimed) {
          const stored = yield* repo.find({ scope, route, key })
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
              : repo.release({ scope, route, key }).pipe(Effect.ignore)
          )
        )
      })
    }
  })
).pipe(Layer.provide(IdempotencyRepo.layer))
