/**
 * Every request-body example of /api/v1/openapi.json is accepted by the service: each is sent,
 * as published, to its operation with a credential the operation takes (holding every scope),
 * and the answer must be neither a refusal of the input (`validation_error`, `invalid_parameter`,
 * `invalid_date_range`, at any status) nor a 5xx. Unknown resources in the path (random ids) may
 * answer 404: the body was decoded before the handler looked them up. The examples' validity
 * against their own schemas is checked in test/unit/api-reference.test.ts.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { call, serveApp, testSettings } from "../support/app.ts"
import { type Fixture, type Kind, makeFixture } from "../support/fuzz-fixture.ts"
import { ids } from "../../src/main/reference/synthesize.ts"
import { isNode, type Node, operationsOf } from "../support/fuzz.ts"

/** Refusals of the input itself: what an example must never get. */
const INPUT_REFUSALS = new Set(["validation_error", "invalid_parameter", "invalid_date_range"])

/** Credential kinds in the order tried: the one an integrator starts with first. */
const PREFERENCE: ReadonlyArray<Kind> = ["api_key", "app_client", "session", "operator", "user_token"]

/**
 * Operations whose example cannot be accepted on this machine, and why. Each refusal must still
 * be the documented one (the code named here), so a new problem with the example still fails.
 */
const CANNOT_ACCEPT_HERE: Readonly<Record<string, { readonly code: string; readonly why: string }>> = {
  // The service resolves the subscriber's host before saving; the test machine has no DNS.
  "POST /api/v1/webhooks/subscriptions": { code: "validation_error", why: "no DNS on the test machine" },
  // Names the caller's ad-platform connection; the fixture has none (its id cannot be known in advance).
  "POST /api/v1/exports/destinations": { code: "validation_error", why: "needs an ad-platform connection" }
}

/** Operations that can take away what the shared fixture stands on get a fixture of their own. */
const destructive = (path: string, method: string) =>
  method === "delete" || /\/(revoke|rotate[^/]*|withdraw|adopt|entitlements|members|mcp-settings)(\/|$)|\/sessions\/current|\/admin\//.test(path)

/** Path parameters: the fixture's own ids where the path names them, a random (unknown) id elsewhere. */
const pathOf = (path: string, fixture: Fixture) =>
  path.replace(/\{([^}]+)\}/g, (_match, name: string) =>
    name === "profileId" ? fixture.profileId : name === "workspaceId" ? fixture.workspaceId : crypto.randomUUID())

interface Sent {
  readonly label: string
  readonly status: number
  readonly code: string | undefined
  readonly text: string
}

layer(serveApp(testSettings()), { timeout: "180 seconds", excludeTestServices: true })("published request examples", (it) => {
  it.effect("every request-body example is accepted by its operation: no input refusal, no 5xx", () =>
    Effect.gen(function*() {
      const specAnswer = yield* call("/api/v1/openapi.json")
      assert.strictEqual(specAnswer.status, 200)
      const spec: unknown = specAnswer.json
      if (!isNode(spec)) throw new Error("openapi.json is not an object")
      const shared = yield* makeFixture
      const sent: Array<Sent> = []
      const operations = operationsOf(spec).filter((operation) => isNode(operation.node["requestBody"]))
      for (const operation of operations) {
        const body = operation.node["requestBody"]
        const content: Node = isNode(body) && isNode(body["content"]) ? body["content"] : {}
        const [mediaType, media] = Object.entries(content).find(([type]) => type !== "text/plain") ?? Object.entries(content)[0] ?? []
        if (mediaType === undefined || !isNode(media) || !("example" in media)) {
          sent.push({ label: operation.label, status: 0, code: "no example", text: "" })
          continue
        }
        const fixture = destructive(operation.path, operation.method) ? yield* makeFixture : shared
        const query = new URLSearchParams()
        for (const param of operation.params) {
          if (param.in === "query" && param.name === "profile_id") query.set("profile_id", fixture.profileId)
        }
        // The example's own profile and workspace stand for the caller's.
        const example: unknown = JSON.parse(
          JSON.stringify(media["example"]).replaceAll(ids.profile, fixture.profileId).replaceAll(ids.workspace, fixture.workspaceId)
        )
        const encoded = mediaType === "application/x-www-form-urlencoded" && isNode(example)
          ? new URLSearchParams(Object.entries(example).map(([key, value]) => [key, typeof value === "string" ? value : JSON.stringify(value)])).toString()
          : typeof example === "string" ? example : JSON.stringify(example)
        // Each credential kind the operation takes, in turn, until one gets past authentication and scopes.
        const kinds: ReadonlyArray<Kind | undefined> = PREFERENCE.filter((candidate) => operation.auth.includes(candidate))
        let kind: Kind | undefined
        let answer = undefined as undefined | { readonly status: number; readonly json: unknown; readonly text: string }
        for (const candidate of kinds.length === 0 ? [undefined] : kinds) {
          kind = candidate
          answer = yield* call(`${pathOf(operation.path, fixture)}${query.size > 0 ? `?${query}` : ""}`, {
            method: operation.method.toUpperCase(),
            headers: {
              ...(candidate === undefined ? {} : fixture.headers[candidate]),
              "content-type": mediaType,
              "idempotency-key": crypto.randomUUID()
            },
            body: encoded,
            redirect: "manual"
          })
          if (answer.status !== 401 && answer.status !== 403) break
        }
        if (answer === undefined) continue
        const error = isNode(answer.json) && isNode(answer.json["error"]) ? answer.json["error"] : undefined
        const code = typeof error?.["code"] === "string" ? error["code"] : undefined
        const known = CANNOT_ACCEPT_HERE[operation.label]
        if (known !== undefined && code === known.code) continue
        sent.push({ label: `${operation.label} (${kind ?? "no credential"})`, status: answer.status, code, text: answer.text.slice(0, 300) })
      }
      console.info(`openapi examples: ${operations.length} operations with a request body, ${sent.length} examples judged by the service ` +
        `(${sent.filter((answer) => answer.status < 300).length} answered 2xx), ${operations.length - sent.length} answered the known refusal listed for them`)
      const refused = sent.filter((answer) => answer.status === 0 || answer.status >= 500 || (answer.code !== undefined && INPUT_REFUSALS.has(answer.code)))
      assert.deepStrictEqual(refused, [])
      assert.isAbove(sent.length, 60, "the examples reached")
      // With a credential, a 401 or 403 answers before the body is read: the example would not have been judged.
      // (A public sign-in answers 401 to the example's made-up password: that is its judgment of the body.)
      const unjudged = sent.filter((answer) =>
        (answer.status === 401 || answer.status === 403) && answer.label.includes(" /api/v1/") && !answer.label.endsWith("(no credential)"))
      assert.deepStrictEqual(unjudged, [])
      assert.isAbove(sent.filter((answer) => answer.status < 300).length, 25, "examples succeed outright where the path names no other resource")
    }))
})
