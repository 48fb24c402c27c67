import { OpenApi } from "effect/http-api"
import { Api } from "./api.ts"
import { applyReference } from "./reference/index.ts"

let cached: OpenApi.OpenAPISpec | undefined
let cachedJson: string | undefined

/**
 * The OpenAPI 3.1 document of the assembled API with the reference (guide, descriptions,
 * examples) applied; generated once per process.
 */
export const openApiDocument = (): OpenApi.OpenAPISpec => (cached ??= applyReference(OpenApi.fromApi(Api)))

/** The document serialized once, for handlers that send it as is (about 1.5 MB). */
export const openApiJson = (): string => (cachedJson ??= JSON.stringify(openApiDocument()))
