import { Effect, SchemaIssue } from "effect"
import { HttpApiMiddleware } from "effect/http-api"
import type { HttpApiSchemaError } from "effect/http-api/HttpApiError"
import { ValidationError, wire } from "../../schema/errors.ts"

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

const slotNames: Record<HttpApiSchemaError["kind"], string> = {
  Params: "path",
  Headers: "header",
  Query: "query",
  Payload: "body",
  Body: "response",
  ResponseHeaders: "response_header"
}

/**
 * A request-decoding failure as one line that names the offending field, e.g.
 * `body.event_name: Missing key` or `query.limit: Expected an integer, got "x"`.
 */
export const formatSchemaError = (error: HttpApiSchemaError): string => {
  const slot = slotNames[error.kind]
  const issues = formatIssues(error.cause.issue).issues
  if (issues.length === 0) return `${slot}: invalid`
  return issues
    .slice(0, 5)
    .map((issue) => {
      const path = (issue.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment))
      return `${[slot, ...path].join(".")}: ${issue.message}`
    })
    .join("; ")
}

/** Turns every request-decoding failure of the API into `400 validation_error`. */
export class SchemaErrors extends HttpApiMiddleware.Service<SchemaErrors>()("svc/SchemaErrors", {
  error: wire(ValidationError)
}) {}

export const SchemaErrorsLayer = HttpApiMiddleware.layerSchemaErrorTransform(SchemaErrors, (error) =>
  error.kind === "Body" || error.kind === "ResponseHeaders"
    ? Effect.fail(error)
    : Effect.fail(new ValidationError({ message: formatSchemaError(error) })))
