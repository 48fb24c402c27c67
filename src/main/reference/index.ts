/**
 * The API reference applied to the generated OpenAPI document: the Quickstart and
 * Authentication guide (`info.description`), tag descriptions, every operation's description,
 * request and response examples, and every parameter's description. Kept apart from the
 * endpoint declarations (src/<domain>/api.ts) so documentation edits never touch them; what an
 * endpoint declares itself (description, parameter description) wins.
 */
import type { OpenApi } from "effect/http-api"
import { guide, tagDescriptions } from "./guide.ts"
import { sharedParameters } from "./parameters.ts"
import { ErrorResponses } from "./errors.ts"
import { isNode, Synthesizer } from "./synthesize.ts"
import type { GroupDocs, OperationDoc } from "./types.ts"
import { accessDocs } from "./access.ts"
import { analyticsDocs } from "./analytics.ts"
import { eventsDocs } from "./events.ts"
import { peopleDocs } from "./people.ts"
import { requestDocs } from "./requests.ts"
import { trackingDocs } from "./tracking.ts"

/** Every group's documentation by operationId. */
export const operationDocs: Readonly<Record<string, OperationDoc>> = Object.fromEntries(
  [...new Set(([accessDocs, trackingDocs, eventsDocs, peopleDocs, analyticsDocs, requestDocs] satisfies ReadonlyArray<GroupDocs>)
    .flatMap((docs) => Object.keys(docs)))]
    // A group's description and response stay; the hand-written request example is added beside them.
    .map((id) => [id, Object.assign({}, accessDocs[id], trackingDocs[id], eventsDocs[id], peopleDocs[id], analyticsDocs[id], requestDocs[id])])
)

export const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const

/** The status of the operation's success answer: the first 2xx or 3xx it documents. */
export const successStatuses = (responses: object): ReadonlyArray<string> =>
  Object.keys(responses).filter((status) => /^[23]\d\d$/.test(status)).sort()

const describeParameter = (parameter: OpenApi.OpenAPISpecParameter, doc: OperationDoc | undefined): OpenApi.OpenAPISpecParameter => {
  if (parameter.description !== undefined && parameter.description !== "") return parameter
  const schema: unknown = parameter.schema
  const own = isNode(schema) && typeof schema["description"] === "string" ? schema["description"] : undefined
  const description = doc?.parameters?.[parameter.name] ?? own ?? sharedParameters[parameter.name]
  return description === undefined ? parameter : { ...parameter, description }
}

/** Each media type with an `example` (one it already has is kept). */
const withExamples = (
  content: OpenApi.OpenApiSpecContent,
  example: (schema: unknown) => unknown
): OpenApi.OpenApiSpecContent => {
  const out: OpenApi.OpenApiSpecContent = {}
  for (const [mediaType, media] of Object.entries(content)) {
    // Built apart: the generated type has no `example` field, OpenAPI 3.1's media type has.
    const documented = "example" in media || "examples" in media ? media : { ...media, example: example(media.schema) }
    out[mediaType] = documented
  }
  return out
}

const documentOperation = (
  operation: OpenApi.OpenAPISpecOperation,
  synthesizer: Synthesizer,
  errors: ErrorResponses
): OpenApi.OpenAPISpecOperation => {
  const doc = operationDocs[operation.operationId]
  const description = operation.description !== undefined && operation.description !== ""
    ? operation.description
    : doc?.description
  const responses: OpenApi.OpenAPISpecResponses = {}
  const [first] = successStatuses(operation.responses)
  for (const [status, response] of Object.entries(operation.responses)) {
    const content = response.content
    responses[Number(status)] = /^[45]\d\d$/.test(status)
      ? errors.response(status, response)
      : content === undefined || !/^[23]\d\d$/.test(status)
      ? response
      : {
        ...response,
        content: withExamples(content, (schema) =>
          status === first && doc?.response !== undefined ? doc.response : synthesizer.example(schema))
      }
  }
  const body = operation.requestBody
  const jsonSchema = body?.content["application/json"]?.schema
  // A text/plain body (the collector's, which browsers send without a pre-flight) is the JSON body as text.
  const requestExample = (schema: unknown): unknown =>
    isNode(schema) && schema["type"] === "string" && jsonSchema !== undefined
      ? JSON.stringify(doc?.request ?? synthesizer.example(jsonSchema))
      : doc?.request ?? synthesizer.example(schema)
  return {
    ...operation,
    ...(description === undefined ? {} : { description }),
    parameters: operation.parameters.map((parameter) => describeParameter(parameter, doc)),
    ...(body === undefined ? {} : {
      requestBody: { ...body, content: withExamples(body.content, (schema) => requestExample(schema)) }
    }),
    responses
  }
}

/** The document with the reference applied; the input is not changed. */
export const applyReference = (spec: OpenApi.OpenAPISpec): OpenApi.OpenAPISpec => {
  const synthesizer = new Synthesizer({ components: spec.components })
  const errors = new ErrorResponses()
  const paths: OpenApi.OpenAPISpecPaths = {}
  for (const [path, item] of Object.entries(spec.paths)) {
    const next = { ...item }
    for (const method of HTTP_METHODS) {
      const operation = next[method]
      if (operation !== undefined) next[method] = documentOperation(operation, synthesizer, errors)
    }
    paths[path] = next
  }
  // Built apart: the generated components type has no `examples` field, OpenAPI 3.1's has.
  const components = { ...spec.components, responses: errors.responses(), examples: errors.examples() }
  return {
    ...spec,
    components,
    info: { ...spec.info, description: guide },
    tags: spec.tags.map((tag) => {
      const description = tagDescriptions[tag.name] ?? tag.description
      return description === undefined ? tag : { ...tag, description }
    }),
    paths
  }
}
