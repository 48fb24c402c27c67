import { OpenApi } from "effect/http-api"
import { Api } from "./api.ts"

let cached: OpenApi.OpenAPISpec | undefined

/** The OpenAPI 3.1 document of the assembled API, generated once. */
export const openApiDocument = (): OpenApi.OpenAPISpec => (cached ??= OpenApi.fromApi(Api))
