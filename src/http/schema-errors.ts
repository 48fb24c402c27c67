import { Effect, SchemaIssue } from "effect"
import { HttpApiMiddleware } from "effect/http-api"
import type { HttpApiSchemaError } from "effect/http-api/HttpApiError"
import { InvalidDateRange, InvalidParameter, ValidationError, PayloadTooLarge } from "../../schema/errors.ts"
import { formatContractIssues } from "../../schema/issue-format.ts"
import { ErrorCodeAnnotation } from "../../schema/query.ts"

const formatIssues = formatContractIssues

const slotNames: Record<HttpApiSchemaError["kind"], string> = {
  Params: "path",
  Headers: "header",
  Query: "query",
  Payload: "body",
  Body: "response",
  ResponseHeaders: "response_header"
}

const pathOf = (issue: { readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined }) =>
  (issue.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment))

/**
 * A request-decoding failure as one line that names the offending field, e.g.
 * `body.event_name: Missing key` or `query.limit: Expected an integer from 1 to 100`.
 */
export const formatSchemaError = (error: HttpApiSchemaError): string => {
  const slot = slotNames[error.kind]
  const issues = formatIssues(error.cause.issue).issues
  if (issues.length === 0) return `${slot}: invalid`
  return issues
    .slice(0, 5)
    .map((issue) => `${[slot, ...pathOf(issue)].join(".")}: ${issue.message}`)
    .join("; ")
}

/** The error code a failed check of the contract names (`ErrorCodeAnnotation`), if any. */
const namedCode = (issue: SchemaIssue.Issue): unknown => {
  switch (issue._tag) {
    case "Filter":
      return issue.filter.annotations?.[ErrorCodeAnnotation] ?? namedCode(issue.issue)
    case "Encoding":
    case "Pointer":
      return namedCode(issue.issue)
    case "Composite":
    case "AnyOf":
      for (const inner of issue.issues) {
        const code = namedCode(inner)
        if (code !== undefined) return code
      }
      return undefined
    default:
      return undefined
  }
}

/**
 * What a request-decoding failure answers: a query or path parameter the contract refuses is
 * 400 `invalid_parameter` naming it (`reason: invalid_parameter:<name>`), or `invalid_date_range`
 * where the contract's check says so (the spec's code for bad dates); anything else (body,
 * headers) is 400 `validation_error`. Undefined for response failures, which are defects.
 */
export const requestSchemaError = (error: HttpApiSchemaError): InvalidParameter | InvalidDateRange | ValidationError | undefined => {
  if (error.kind === "Body" || error.kind === "ResponseHeaders") return undefined
  const message = formatSchemaError(error)
  if (error.kind !== "Query" && error.kind !== "Params") return new ValidationError({ message })
  if (namedCode(error.cause.issue) === InvalidDateRange.code) return new InvalidDateRange({ message, reason: "invalid_date_range" })
  const name = formatIssues(error.cause.issue).issues.map(pathOf).find((path) => path.length > 0)?.[0]
  return new InvalidParameter({ message, ...(name === undefined ? {} : { reason: `invalid_parameter:${name}` }) })
}

/** Turns every request-decoding failure of the API into its 400 (`requestSchemaError`). */
export class SchemaErrors extends HttpApiMiddleware.Service<SchemaErrors>()("svc/SchemaErrors", {
  // 413 too: the body cap is checked for every operation before its handler runs.
  error: [ValidationError.wire, InvalidParameter.wire, InvalidDateRange.wire, PayloadTooLarge.wire]
}) {}

export const SchemaErrorsLayer = HttpApiMiddleware.layerSchemaErrorTransform(SchemaErrors, (error) => {
  const mapped = requestSchemaError(error)
  return mapped === undefined ? Effect.fail(error) : Effect.fail(mapped)
})
