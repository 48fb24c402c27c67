/**
 * The API a context's handlers are built against: its own group inside an `HttpApi` of the
 * service's id, with the middleware and parse options the assembled API (src/main/api.ts) gives
 * it. A context's handlers then need no import of the composition root, which imports every
 * context's contract (decision 0117). `HttpApi.middleware` adds a middleware to each endpoint of
 * the groups present, so one group here carries exactly the middleware it carries there.
 */
import type { HttpApiGroup } from "effect/http-api"
import { HttpApi } from "effect/http-api"
import { Csrf } from "./csrf.ts"
import { Authentication } from "./auth.ts"
import { Idempotency } from "./idempotency.ts"
import { SchemaErrors } from "./schema-errors.ts"
import { Deprecation } from "./versioning/middleware.ts"

/** A body key no schema names is refused (400 naming it), here and in src/main/api.ts. */
export const PAYLOAD_PARSE_OPTIONS = { onExcessProperty: "error" } as const

/**
 * The middleware of every authenticated group, listed innermost first: decoding errors are
 * mapped, idempotency (which needs the principal) wraps the handler, then the CSRF check on
 * session writes (decision 0021), then credentials, then the deprecation table. The assembled
 * API (src/main/api.ts) and each group's own API apply this one list.
 */
export const withApiMiddleware = <Id extends string, Groups extends HttpApiGroup.Constraint>(api: HttpApi.HttpApi<Id, Groups>) =>
  api
    .middleware(SchemaErrors)
    .middleware(Idempotency)
    .middleware(Csrf)
    .middleware(Authentication)
    .middleware(Deprecation)

/** A group of the authenticated API, with the middleware above. */
export const groupApi = <const Group extends HttpApiGroup.Constraint>(group: Group) =>
  withApiMiddleware(HttpApi.make("svc").add(group)).annotate(HttpApi.PayloadParseOptions, PAYLOAD_PARSE_OPTIONS)

/** A group added after the middleware (OAuth, HTML pages, the collector, provider hooks, MCP): none of it. */
export const publicGroupApi = <const Group extends HttpApiGroup.Constraint>(group: Group) =>
  HttpApi.make("svc").add(group).annotate(HttpApi.PayloadParseOptions, PAYLOAD_PARSE_OPTIONS)
