/**
 * `GET /api/v1/reports/{id}/runs` (decision 0134) driven by `openapi-fetch`, a client nobody here
 * wrote, the way an outside integrator would use it: the path template and query names read from
 * the published description, not from our code. Each answer is checked against the schema the
 * description documents for its status: runs newest first, keyset pages of `limit` with
 * `pagination.cursor`, the error envelope for an unknown report and a cursor nobody issued.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import createClient from "openapi-fetch"
import { defaultReportWorkerSettings, ReportWorkerSettings } from "../../src/analytics/reports/worker.ts"
import { call, TestServer } from "../support/app.ts"
import { isNode, type Node, resolvedResponses, SpecValidator } from "../support/fuzz.ts"
import { serveAppOnOwnPort } from "../support/providers.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const RUNS = "/api/v1/reports/{id}/runs"

interface Artifact {
  readonly content_type: string
  readonly bytes: number
  readonly url: string
}
interface Run {
  readonly id: string
  readonly status: string
  readonly csv: Artifact | null
  readonly pdf: Artifact | null
}
interface RunPage {
  data: Array<Run>
  readonly pagination: { readonly has_next: boolean; readonly cursor: string | null }
}
interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string }
}

/** The one operation, in the shape openapi-typescript generates from the description. */
interface Paths {
  "/api/v1/reports/{id}/runs": {
    parameters: { query?: never; header?: never; path?: never; cookie?: never }
    get: {
      parameters: {
        query?: { limit?: number; cursor?: string }
        header?: never
        path: { id: string }
        cookie?: never
      }
      requestBody?: never
      responses: {
        200: { headers: { [name: string]: unknown }; content: { "application/json": RunPage } }
        400: { headers: { [name: string]: unknown }; content: { "application/json": ErrorBody } }
        404: { headers: { [name: string]: unknown }; content: { "application/json": ErrorBody } }
      }
    }
  }
}

const workerOff = Layer.succeed(ReportWorkerSettings)({ ...defaultReportWorkerSettings, enabled: false })

const child = (node: unknown, key: string): Node => {
  const value = isNode(node) ? node[key] : undefined
  if (!isNode(value)) throw new Error(`no "${key}" in the description here`)
  return value
}

layer(serveAppOnOwnPort().pipe(Layer.provide(workerOff)), { timeout: "120 seconds", excludeTestServices: true })("report runs through openapi-fetch", (it) => {
  describe(`GET ${RUNS}`, () => {
    it.effect("pages a report's runs newest first; an unknown report and a forged cursor answer the documented errors", () =>
      Effect.gen(function*() {
        const { url } = yield* TestServer
        const spec: Node = (yield* call("/api/v1/openapi.json")).json
        const operation = child(child(child(spec, "paths"), RUNS), "get")
        const listed: unknown = operation["parameters"]
        const params = (Array.isArray(listed) ? listed : []).filter(isNode).map((p) => `${String(p["in"])}:${String(p["name"])}`)
        for (const name of ["path:id", "query:limit", "query:cursor"]) assert.include(params, name)
        const validator = new SpecValidator(spec)
        const responses = resolvedResponses(spec, child(operation, "responses"))
        const schemaFor = (status: number) =>
          child(child(child(child(responses, String(status)), "content"), "application/json"), "schema")
        const conforms = (status: number, body: unknown) => {
          const problem = validator.check(schemaFor(status), body)
          assert.isUndefined(problem, `${status} answer does not match the description: ${JSON.stringify(problem)}`)
        }

        const profile = yield* seedProfile()
        const { key } = yield* seedApiKey(profile, { scopes: ["reports:write", "analytics:read"], rateLimitPerMinute: 10_000 })
        const auth = { authorization: `Bearer ${key}` }
        const created = yield* call("/api/v1/reports", {
          method: "POST",
          headers: { ...auth, "content-type": "application/json" },
          body: JSON.stringify({ name: "Runs", reads: ["overview"], range: "last_7_days" })
        })
        assert.strictEqual(created.status, 201, created.text)
        const reportId: string = created.json.data.id
        const generated: Array<string> = []
        for (let i = 0; i < 3; i++) {
          const run = yield* call(`/api/v1/reports/${reportId}/generate`, { method: "POST", headers: auth })
          assert.strictEqual(run.status, 201, run.text)
          generated.push(run.json.data.id)
        }

        const client = createClient<Paths>({ baseUrl: url, headers: auth })
        const first = yield* Effect.promise(() => client.GET(RUNS, { params: { path: { id: reportId }, query: { limit: 2 } } }))
        assert.strictEqual(first.response.status, 200)
        assert.isDefined(first.data)
        conforms(200, first.data)
        const page1 = first.data!
        assert.deepStrictEqual(page1.data.map((run) => run.id), [generated[2], generated[1]])
        assert.isTrue(page1.pagination.has_next)
        for (const run of page1.data) {
          assert.strictEqual(run.status, "generated")
          assert.strictEqual(run.csv?.url, `/api/v1/reports/${reportId}/runs/${run.id}/csv`)
        }
        const cursor = page1.pagination.cursor
        assert.isString(cursor)

        const second = yield* Effect.promise(() =>
          client.GET(RUNS, { params: { path: { id: reportId }, query: { limit: 2, cursor: cursor ?? "" } } }))
        assert.strictEqual(second.response.status, 200)
        conforms(200, second.data)
        assert.deepStrictEqual(second.data?.data.map((run) => run.id), [generated[0]])
        assert.isFalse(second.data?.pagination.has_next)

        // A download path the page names is one the same credential can follow.
        const csv = yield* Effect.promise(() => fetch(`${url}${page1.data[0]?.csv?.url ?? ""}`, { headers: auth }))
        assert.strictEqual(csv.status, 200)
        assert.match(csv.headers.get("content-type") ?? "", /^text\/csv/)

        const unknown = yield* Effect.promise(() => client.GET(RUNS, { params: { path: { id: crypto.randomUUID() } } }))
        assert.strictEqual(unknown.response.status, 404)
        assert.isUndefined(unknown.data)
        conforms(404, unknown.error)
        assert.strictEqual(unknown.error?.error.code, "not_found")

        const forged = yield* Effect.promise(() =>
          client.GET(RUNS, { params: { path: { id: reportId }, query: { cursor: "not-a-cursor-we-issued" } } }))
        assert.strictEqual(forged.response.status, 400)
        conforms(400, forged.error)
        assert.strictEqual(forged.error?.error.code, "invalid_parameter")
      }))
  })
})
