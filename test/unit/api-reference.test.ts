/**
 * The published reference is complete: every operation of /api/v1/openapi.json has a summary,
 * a description, a request example when it takes a body and a response example for each success
 * status with a body; every parameter is described; every example validates against the
 * operation's own published schema. The guide names every credential kind and connect scope.
 * Every error answer is the one shared `ErrorEnvelope` with, per code it stands for, the envelope
 * the service sends; no `anyOf` repeats a member; each tag's document (what /docs loads) stands
 * on its own.
 */
import { OpenApi } from "effect/http-api"
import { describe, expect, it } from "vitest"
import { catalogue } from "../../schema/errors.ts"
import { ConnectScopes } from "../../schema/scopes.ts"
import { Api } from "../../src/main/api.ts"
import { documentTags, openApiDocument, openApiJson, tagDocumentJson } from "../../src/main/openapi.ts"
import { applyReference } from "../../src/main/reference/index.ts"
import { isNode, type Node, resolvedResponses, SpecValidator } from "../support/fuzz.ts"

const spec: Node = JSON.parse(openApiJson())
const validator = new SpecValidator(spec)
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

interface Found {
  readonly label: string
  readonly operation: Node
}

const operations: ReadonlyArray<Found> = Object.entries(isNode(spec["paths"]) ? spec["paths"] : {}).flatMap(([path, item]) =>
  isNode(item)
    ? METHODS.flatMap((method) => {
      const operation = item[method]
      return isNode(operation) ? [{ label: `${method.toUpperCase()} ${path}`, operation }] : []
    })
    : []
)

const nonEmpty = (value: unknown) => typeof value === "string" && value.trim() !== ""

/** Each media type of a content object with its schema and example. */
const mediaOf = (content: unknown): ReadonlyArray<{ readonly type: string; readonly media: Node }> =>
  isNode(content) ? Object.entries(content).flatMap(([type, media]) => (isNode(media) ? [{ type, media }] : [])) : []

describe("API reference", () => {
  it("covers every operation", () => {
    expect(operations.length).toBeGreaterThan(140)
  })

  it("every operation has a summary and a description, and every parameter a description", () => {
    const missing: Array<string> = []
    for (const { label, operation } of operations) {
      if (!nonEmpty(operation["summary"])) missing.push(`${label}: summary`)
      if (!nonEmpty(operation["description"])) missing.push(`${label}: description (src/main/reference/)`)
      const parameters = operation["parameters"]
      for (const parameter of Array.isArray(parameters) ? parameters.filter(isNode) : []) {
        if (!nonEmpty(parameter["description"])) missing.push(`${label}: parameter ${String(parameter["name"])}`)
      }
    }
    expect(missing).toEqual([])
  })

  it("every body has an example that validates against its schema", () => {
    const problems: Array<string> = []
    const check = (where: string, content: unknown) => {
      for (const { type, media } of mediaOf(content)) {
        if (!("example" in media)) {
          problems.push(`${where} ${type}: no example`)
          continue
        }
        const schema = media["schema"]
        if (!isNode(schema)) continue
        const error = validator.check(schema, media["example"])
        if (error !== undefined) problems.push(`${where} ${type}: ${error.where} ${error.message}`)
      }
    }
    for (const { label, operation } of operations) {
      const body = operation["requestBody"]
      if (isNode(body)) {
        if (mediaOf(body["content"]).length === 0) problems.push(`${label}: request body without content`)
        check(`${label} request`, body["content"])
      }
      const responses = isNode(operation["responses"]) ? operation["responses"] : {}
      const successes = Object.keys(responses).filter((status) => /^[23]\d\d$/.test(status))
      if (successes.length === 0) problems.push(`${label}: no success status`)
      for (const status of successes) {
        const response = responses[status]
        // 204, redirects and bodiless 200s have nothing to exemplify.
        if (isNode(response)) check(`${label} ${status}`, response["content"])
      }
    }
    expect(problems).toEqual([])
  })

  it("the guide covers Quickstart, every credential kind and every connect scope", () => {
    const guide = openApiDocument().info.description ?? ""
    for (const text of ["## Quickstart", "## Authentication", "npm run cli -- quickstart", "API key", "OAuth app client credential",
      "MCP user token", "Console session", "Operator token", "SVC_ADMIN_TOKEN", "/oauth/token", "client_credentials",
      "How an OAuth app reaches a key"])
    {
      expect(guide).toContain(text)
    }
    for (const scope of ConnectScopes) expect(guide).toContain(`| \`${scope}\` |`)
    expect(guide).toContain("`connections:read`, `connections:write`")
  })

  it("POST /api/v1/events documents its example", () => {
    const events = operations.find((found) => found.label === "POST /api/v1/events")
    expect(events).toBeDefined()
    expect(JSON.stringify(events?.operation["requestBody"])).toContain("order-2026-000187")
  })

  it("every error answer is one ErrorEnvelope with, per documented code, the envelope the service sends", () => {
    const problems: Array<string> = []
    const examples = isNode(spec["components"]) && isNode(spec["components"]["examples"]) ? spec["components"]["examples"] : {}
    const statusOf = new Map(catalogue.map((entry) => [entry.code, entry.status]))
    let documented = 0
    for (const { label, operation } of operations) {
      const responses = resolvedResponses(spec, isNode(operation["responses"]) ? operation["responses"] : {})
      for (const [status, response] of Object.entries(responses)) {
        if (!/^[45]\d\d$/.test(status) || !isNode(response)) continue
        const media = isNode(response["content"]) ? response["content"]["application/json"] : undefined
        if (!isNode(media)) continue
        const schema = media["schema"]
        if (JSON.stringify(schema).includes("ErrorEnvelope")) {
          // The envelope alone, or beside another form of error once (the JSON-RPC transport errors of /mcp).
          const members = isNode(schema) && Array.isArray(schema["anyOf"]) ? schema["anyOf"] : [schema]
          if (members.filter((member) => JSON.stringify(member) === JSON.stringify({ $ref: "#/components/schemas/ErrorEnvelope" })).length !== 1) {
            problems.push(`${label} ${status}: schema ${JSON.stringify(schema)}`)
          }
          const byCode = isNode(media["examples"]) ? media["examples"] : {}
          if (Object.keys(byCode).length === 0) problems.push(`${label} ${status}: no examples`)
          for (const [code, reference] of Object.entries(byCode)) {
            documented++
            const ref = isNode(reference) ? reference["$ref"] : undefined
            const example = typeof ref === "string" ? examples[ref.replace("#/components/examples/", "")] : undefined
            const value = isNode(example) ? example["value"] : undefined
            const error = isNode(value) && isNode(value["error"]) ? value["error"] : undefined
            if (error === undefined) {
              problems.push(`${label} ${status} ${code}: example ${String(ref)} missing`)
              continue
            }
            const expectedStatus = code === "validation_error" && status === "422" ? 422 : statusOf.get(code)
            if (expectedStatus !== Number(status)) problems.push(`${label} ${status} ${code}: the code answers ${expectedStatus}`)
            if (error["code"] !== code || error["status"] !== Number(status)) problems.push(`${label} ${status} ${code}: ${JSON.stringify(error)}`)
            if (!String(response["description"]).includes(`\`${code}\``)) problems.push(`${label} ${status}: description does not name ${code}`)
            if (typeof error["message"] !== "string" || error["message"].length < 12) problems.push(`${label} ${status} ${code}: message`)
            if (!/^req_[0-9a-f]{32}$/.test(String(error["request_id"]))) problems.push(`${label} ${status} ${code}: request_id`)
            if (!String(error["docs_url"]).endsWith(`/docs/errors#${code}`)) problems.push(`${label} ${status} ${code}: docs_url`)
            if (/additionalProp|"string"|-9007199254740991/.test(JSON.stringify(value))) problems.push(`${label} ${status} ${code}: placeholder`)
            const invalid = validator.check({ $ref: "#/components/schemas/ErrorEnvelope" }, value)
            if (invalid !== undefined) problems.push(`${label} ${status} ${code}: ${invalid.where} ${invalid.message}`)
          }
        }
      }
    }
    expect(problems).toEqual([])
    expect(documented).toBeGreaterThan(1000)
  })

  it("no anyOf or oneOf lists the same member twice", () => {
    const canonical = (value: unknown): string =>
      JSON.stringify(value, (_key, item: unknown) =>
        isNode(item) ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : item)
    const duplicates: Array<string> = []
    const walk = (value: unknown, where: string): void => {
      if (Array.isArray(value)) value.forEach((item, index) => walk(item, `${where}/${index}`))
      else if (isNode(value)) {
        for (const [key, item] of Object.entries(value)) {
          if ((key === "anyOf" || key === "oneOf") && Array.isArray(item)) {
            const members = item.map(canonical)
            members.forEach((member, index) => {
              if (members.indexOf(member) !== index) duplicates.push(`${where}/${key}/${index}`)
            })
          }
          walk(item, `${where}/${key}`)
        }
      }
    }
    walk(spec, "#")
    expect(duplicates).toEqual([])
  })

  it("the document is the same on every build", () => {
    expect(JSON.stringify(applyReference(OpenApi.fromApi(Api)))).toBe(openApiJson())
  })

  it("each tag's document (what /docs loads) holds that tag's operations and every component they reach", () => {
    const seen: Array<string> = []
    for (const tag of documentTags()) {
      const json = tagDocumentJson(tag.name, "events")
      expect(json, tag.name).toBeDefined()
      const document: Node = JSON.parse(json ?? "{}")
      expect(json!.length, `${tag.name}: a document /docs loads at once`).toBeLessThan(150_000)
      const paths = isNode(document["paths"]) ? document["paths"] : {}
      let count = 0
      for (const [path, item] of Object.entries(paths)) {
        for (const [method, operation] of Object.entries(isNode(item) ? item : {})) {
          expect(isNode(operation) && Array.isArray(operation["tags"]) ? operation["tags"][0] : undefined).toBe(tag.name)
          seen.push(`${method.toUpperCase()} ${path}`)
          count++
        }
      }
      expect(count, tag.name).toBe(tag.operations)
      const refs = [...json!.matchAll(/"\$ref":"#\/components\/([^/"]+)\/([^"]+)"/g)]
      const components = isNode(document["components"]) ? document["components"] : {}
      for (const [, kind, name] of refs) {
        const group = components[kind!]
        expect(isNode(group) && name! in group, `${tag.name}: #/components/${kind}/${name}`).toBe(true)
      }
    }
    expect(seen.sort()).toEqual(operations.map((found) => found.label).sort())
    expect(tagDocumentJson("events", "events")).toContain("## Quickstart")
    expect(tagDocumentJson("analytics", "events")).not.toContain("## Quickstart")
    expect(tagDocumentJson("no-such-tag", "events")).toBeUndefined()
  })

  it("the guide names MCP user tokens by their real prefix", () => {
    const guide = openApiDocument().info.description ?? ""
    expect(guide).toContain("| MCP user token | `svc_user_...` |")
    expect(openApiJson()).not.toContain("svc_ut_")
  })

  it("the lookalike's country is published as ISO 3166-1 alpha-2 in upper case", () => {
    const lookalike = operations.find((found) => found.label === "POST /api/v1/partner/audiences/customer-list/lookalike")
    const responses = isNode(lookalike?.operation["responses"]) ? lookalike.operation["responses"] : {}
    const success = Object.entries(responses).filter(([status]) => /^2/.test(status))
    expect(success.length).toBeGreaterThan(0)
    for (const [status, response] of success) {
      const media = isNode(response) && isNode(response["content"]) ? response["content"]["application/json"] : undefined
      const schema = isNode(media) && isNode(media["schema"]) ? media["schema"] : {}
      const example = isNode(media) ? media["example"] : undefined
      expect(validator.check(schema, example), status).toBeUndefined()
      for (const country of ["es", "ESP", "Spain"]) {
        const changed = JSON.parse(JSON.stringify(example).replace(/"country":"[A-Z]{2}"/, `"country":${JSON.stringify(country)}`))
        expect(validator.check(schema, changed), `${status} ${country}`).toBeDefined()
      }
    }
  })

  it("the Platform-Safe repoint body documents both spellings of its ad set list", () => {
    const repoint = operations.find((found) => found.label === "POST /api/v1/conversion-sync/platform-safe/repoint")
    const body = JSON.stringify(repoint?.operation["requestBody"])
    expect(body).toContain("\"ad_set_ids\"")
    expect(body).toContain("\"ad_sets_ids\"")
  })

  it("the document is built once", () => {
    expect(openApiDocument()).toBe(openApiDocument())
    expect(openApiJson()).toBe(openApiJson())
  })
})
