/**
 * The published reference is complete: every operation of /api/v1/openapi.json has a summary,
 * a description, a request example when it takes a body and a response example for each success
 * status with a body; every parameter is described; every example validates against the
 * operation's own published schema. The guide names every credential kind and connect scope.
 */
import { describe, expect, it } from "vitest"
import { ConnectScopes } from "../../schema/scopes.ts"
import { openApiDocument, openApiJson } from "../../src/http/openapi.ts"
import { isNode, type Node, SpecValidator } from "../support/fuzz.ts"

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
      if (!nonEmpty(operation["description"])) missing.push(`${label}: description (src/http/reference/)`)
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

  it("the document is built once", () => {
    expect(openApiDocument()).toBe(openApiDocument())
    expect(openApiJson()).toBe(openApiJson())
  })
})
