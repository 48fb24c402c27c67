import { HttpApiMiddleware } from "effect/http-api"
import { DatabaseUnavailable, InsufficientScope, Unauthorized } from "../../schema/errors.ts"
import { Principal } from "../kernel/principal.ts"

/**
 * Unsafe methods (POST, PUT, PATCH, DELETE) authenticated by the session cookie must carry
 * `X-CSRF-Token` matching the session's token, else 403 `insufficient_scope` with reason
 * `csrf`. Bearer and Basic credentials carry no ambient authority and are not checked.
 * Decision 0021.
 */
export class Csrf extends HttpApiMiddleware.Service<Csrf, { requires: Principal }>()("svc/Csrf", {
  error: [InsufficientScope.wire, Unauthorized.wire, DatabaseUnavailable.wire]
}) {}
