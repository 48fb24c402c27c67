/**
 * The PII access log: who read customer or visitor personal data, when, through which route,
 * and with what result. Written by the Authentication middleware for every operation whose
 * policy says it answers person data; kept 365 days (never answered older; the table is
 * partitioned by month and the partition maintenance drops a month past the retention, decision 0133).
 */
import { Context, Effect, Layer } from "effect"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { PrincipalShape } from "../principal.ts"
import { CurrentRequestId } from "../../platform/request-id.ts"
import { PiiAccessRepo } from "./repo.ts"

export interface PiiAccess {
  readonly principal: PrincipalShape
  readonly workspaceId: string
  readonly profileId: string | null
  /** `METHOD /path/template`, never the concrete URL (which may carry an email or phone). */
  readonly route: string
  /** `allowed` (2xx), `denied` (401/403/404) or `failed:<status>`. */
  readonly result: string
}

const actorOf = (principal: PrincipalShape): { readonly kind: string; readonly id: string | null } => {
  switch (principal.kind) {
    case "api_key":
      return { kind: "api_key", id: principal.keyId }
    case "user_token":
      return { kind: "user_token", id: principal.userId }
    case "session":
      return { kind: "session", id: principal.userId }
    case "app_client":
      return { kind: "app_client", id: principal.appId }
    case "service":
      return { kind: "service", id: principal.credentialId }
    case "operator":
    case "anonymous":
      return { kind: principal.kind, id: null }
  }
}

/** The log's `result` for an answer's status. */
export const piiResultOf = (status: number): string =>
  status >= 200 && status < 300 ? "allowed" : status === 401 || status === 403 || status === 404 ? "denied" : `failed:${status}`

export class PiiAccessLog extends Context.Service<PiiAccessLog, {
  readonly record: (access: PiiAccess) => Effect.Effect<void, DatabaseUnavailable>
}>()("svc/PiiAccessLog") {
  static readonly layer = Layer.effect(PiiAccessLog)(
    Effect.gen(function*() {
      const repo = yield* PiiAccessRepo

      const record = Effect.fn("PiiAccessLog.record")(function*(access: PiiAccess) {
        const actor = actorOf(access.principal)
        const requestId = yield* CurrentRequestId
        yield* repo.insert({
          workspaceId: access.workspaceId,
          profileId: access.profileId,
          actorKind: actor.kind,
          actorId: actor.id,
          route: access.route,
          result: access.result,
          requestId: requestId === "" ? null : requestId
        })
      })

      return { record }
    })
  ).pipe(Layer.provide(PiiAccessRepo.layer))
}
