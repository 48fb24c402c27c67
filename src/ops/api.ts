import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { DatabaseUnavailable, ServiceUnavailable } from "../../schema/errors.ts"
import { Health, OpenApiDocument, Readiness, ServiceStatusBody } from "../../schema/ops.ts"
import { PUBLIC, policy } from "../http/policy.ts"

/** Liveness, readiness, the published OpenAPI document and the operator's status view. */
export const OpsApi = HttpApiGroup.make("ops")
  .add(
    HttpApiEndpoint.get("healthz", "/healthz", { success: Health })
      .annotate(OpenApi.Summary, "Liveness: the process is up")
      .annotateMerge(policy(PUBLIC)),
    HttpApiEndpoint.get("readyz", "/readyz", {
      success: Readiness,
      error: [DatabaseUnavailable.wire, ServiceUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Readiness: database reachable, migrations applied and not stopping")
      .annotateMerge(policy(PUBLIC)),
    HttpApiEndpoint.get("openapi", "/api/v1/openapi.json", { success: OpenApiDocument })
      .annotate(OpenApi.Summary, "The published machine-readable description (OpenAPI 3.1)")
      .annotateMerge(policy(PUBLIC)),
    HttpApiEndpoint.get("status", "/api/v1/admin/status", {
      success: ServiceStatusBody,
      error: DatabaseUnavailable.wire
    })
      .annotate(OpenApi.Summary, "Service status for operators: version, runtime, database, migrations")
      .annotateMerge(policy({ scopes: [], auth: ["operator"], idempotency: "none", grain: "none" }))
  )
  .annotate(OpenApi.Description, "Operations")

