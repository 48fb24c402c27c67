/**
 * Which profile a request acts on. An API key is bound to its profile; a user token or a
 * session names one with `?profile_id=` and must reach it through a membership. A profile
 * that is unknown, archived or unreachable answers the same 404.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { HttpServerRequest } from "effect/http"
import { SqlClient } from "effect/sql/SqlClient"
import { isUuid } from "../../schema/common.ts"
import { type DatabaseUnavailable, InvalidRequest, NotFound } from "../../schema/errors.ts"
import { Principal } from "../http/auth.ts"
import { decodeFirstRow, orDatabaseUnavailable } from "../platform/database.ts"

export interface ProfileRef {
  readonly profileId: string
  readonly workspaceId: string
}

const noSuchProfile = () => new NotFound({ message: "No such profile." })

const Row = Schema.Struct({ id: Schema.String, workspace_id: Schema.String })

export class ProfileAccess extends Context.Service<ProfileAccess, {
  readonly current: Effect.Effect<
    ProfileRef,
    NotFound | InvalidRequest | DatabaseUnavailable,
    Principal | HttpServerRequest.HttpServerRequest
  >
}>()("svc/ProfileAccess") {
  static readonly layer = Layer.effect(ProfileAccess)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const firstRow = decodeFirstRow(Row)

      const reachableBy = (profileId: string, userId: string) =>
        firstRow(
            sql`
              SELECT p.id, p.workspace_id FROM profiles p
              JOIN workspaces w ON w.id = p.workspace_id AND w.archived_at IS NULL
              JOIN workspace_memberships m ON m.workspace_id = p.workspace_id AND m.user_id = ${userId}
                                           AND m.removed_at IS NULL
              WHERE p.id = ${profileId} AND p.archived_at IS NULL
                AND (m.role IN ('owner', 'admin', 'analyst')
                     OR EXISTS (SELECT 1 FROM profile_memberships pm
                                WHERE pm.profile_id = p.id AND pm.user_id = ${userId} AND pm.removed_at IS NULL))`
        )

      const current = Effect.gen(function*() {
        const principal = yield* Principal
        if (principal.kind === "api_key") {
          return { profileId: principal.profileId, workspaceId: principal.workspaceId }
        }
        if (principal.kind !== "user_token" && principal.kind !== "session") return yield* noSuchProfile()
        const request = yield* HttpServerRequest.HttpServerRequest
        const profileId = new URL(request.url, "http://svc").searchParams.get("profile_id")
        if (profileId === null || profileId === "") {
          return yield* new InvalidRequest({ message: "Name the profile: add ?profile_id=<uuid>." })
        }
        if (!isUuid(profileId)) return yield* noSuchProfile()
        const row = yield* orDatabaseUnavailable(reachableBy(profileId.toLowerCase(), principal.userId))
        return yield* Option.match(row, {
          onNone: () => Effect.fail(noSuchProfile()),
          onSome: (found) => Effect.succeed({ profileId: found.id, workspaceId: found.workspace_id })
        })
      }).pipe(Effect.withSpan("ProfileAccess.current"))

      return { current }
    })
  )
}
