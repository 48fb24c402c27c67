/**
 * The owner of `audit_events` (the audit trail: one row per security-relevant change, with who
 * did it and the request id) and of `pii_access_log` (src/kernel/audit/pii-access.ts says when it is written).
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { PrincipalShape } from "../principal.ts"
import { atDatabaseBoundary } from "../../platform/database.ts"
import { CurrentRequestId } from "../../platform/request-id.ts"

export interface AuditEntry {
  /** The event's id when the caller names it (e.g. a merge, undone later through its audit log id); default: a fresh one. */
  readonly id?: string
  readonly actor: PrincipalShape
  readonly action: string
  readonly targetKind: string
  readonly targetId: string
  readonly workspaceId?: string | null
  readonly profileId?: string | null
  readonly details?: Record<string, unknown>
  /** Leaves `actor_user_id` null whoever acted (a connection's disconnect, api-endpoints.md). */
  readonly withoutPerson?: boolean
}

const actorOf = (principal: PrincipalShape): { readonly kind: string; readonly id: string | null; readonly userId: string | null } => {
  switch (principal.kind) {
    case "api_key":
      return { kind: "api_key", id: principal.keyId, userId: null }
    case "user_token":
      return { kind: "user_token", id: principal.tokenId, userId: principal.userId }
    case "app_client":
      return { kind: "app_client", id: principal.appId, userId: null }
    case "service":
      return { kind: "service", id: principal.credentialId, userId: null }
    case "session":
      return { kind: "session", id: principal.sessionId, userId: principal.userId }
    case "operator":
      return { kind: "operator", id: null, userId: null }
    case "anonymous":
      return { kind: "anonymous", id: null, userId: null }
  }
}

export class AuditLog extends Context.Service<AuditLog, {
  /** Writes one entry; inside a transaction it commits or rolls back with the change it records. */
  readonly record: (entry: AuditEntry) => Effect.Effect<void, DatabaseUnavailable>
}>()("svc/AuditLog") {
  static readonly layer = Layer.effect(AuditLog)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const record = Effect.fn("AuditLog.record")(function*(entry: AuditEntry) {
        const actor = actorOf(entry.actor)
        const requestId = yield* CurrentRequestId
        yield* sql`
          INSERT INTO audit_events (id, workspace_id, profile_id, actor_kind, actor_id, actor_user_id, action,
                                    target_kind, target_id, details, request_id)
          VALUES (${entry.id ?? crypto.randomUUID()}, ${entry.workspaceId ?? null}, ${entry.profileId ?? null}, ${actor.kind},
                  ${actor.id}, ${entry.withoutPerson === true ? null : actor.userId}, ${entry.action}, ${entry.targetKind}, ${entry.targetId},
                  ${JSON.stringify(entry.details ?? {})}::jsonb, ${requestId === "" ? null : requestId})`
      })
      return atDatabaseBoundary({ record })
    })
  )
}

/** One row of the PII access log, as the Authentication middleware records it. */
export interface PiiAccessRow {
  readonly workspaceId: string
  readonly profileId: string | null
  readonly actorKind: string
  readonly actorId: string | null
  readonly route: string
  readonly result: string
  readonly requestId: string | null
}

export class PiiAccessRepo extends Context.Service<PiiAccessRepo, {
  readonly insert: (row: PiiAccessRow) => Effect.Effect<void, DatabaseUnavailable>
}>()("svc/PiiAccessRepo") {
  static readonly layer = Layer.effect(PiiAccessRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const insert = (row: PiiAccessRow) =>
        Effect.asVoid(sql`
          INSERT INTO pii_access_log (id, workspace_id, profile_id, actor_kind, actor_id, route, result, request_id)
          VALUES (${crypto.randomUUID()}, ${row.workspaceId}, ${row.profileId}, ${row.actorKind}, ${row.actorId},
                  ${row.route}, ${row.result}, ${row.requestId})`)
      return atDatabaseBoundary({ insert })
    })
  )
}
