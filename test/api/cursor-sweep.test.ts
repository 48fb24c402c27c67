/**
 * api-concepts.md, Conventions: pages carry `pagination: {has_next, cursor}`, and the cursor is
 * opaque: only what a list answered is a cursor of it. This walks every GET of the published
 * description that takes `cursor` and sends, on a request the list otherwise answers with a page,
 * cursors it never issued: text that is not a cursor, and a readable one whose keyset is
 * nonsense. Each must be 400 `invalid_parameter` (reason `invalid_parameter:cursor`), never a
 * page from the start again (a client following it would loop) and never a 5xx.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { call, serveApp, TestServer, testSettings } from "../support/app.ts"
import { casesOf, Generator, isNode, operationsOf, seedFor, SpecValidator, urlOf } from "../support/fuzz.ts"
import { type Kind, makeFixture } from "../support/fuzz-fixture.ts"

const FORGED: ReadonlyArray<readonly [string, string]> = [
  ["text that is not a cursor", "not-a-cursor-we-issued"],
  ["a readable keyset of nonsense", Buffer.from(JSON.stringify(["yesterday", "x"]), "utf8").toString("base64url")]
]

const KINDS: ReadonlyArray<Kind> = ["api_key", "session", "user_token", "app_client", "operator"]

const send = (url: string, headers: Record<string, string>) =>
  Effect.flatMap(TestServer, ({ url: base }) =>
    Effect.promise(async () => {
      const response = await fetch(`${base}${url}`, { headers, redirect: "manual" })
      const text = await response.text()
      return { status: response.status, text }
    }))

layer(serveApp(testSettings()), { timeout: "120 seconds" })("cursor sweep", (it) => {
  it.effect("every list refuses a cursor it did not answer with 400 invalid_parameter:cursor", () =>
    Effect.gen(function*() {
      const spec: unknown = (yield* call("/api/v1/openapi.json")).json
      if (!isNode(spec)) throw new Error("openapi.json is not an object")
      const validator = new SpecValidator(spec)
      const fixture = yield* makeFixture
      const lists = operationsOf(spec).filter((operation) =>
        operation.method === "get" && operation.params.some((param) => param.in === "query" && param.name === "cursor"))
      assert.isAbove(lists.length, 20, "the description lists its paged operations")

      const failures: Array<string> = []
      const reached: Array<string> = []
      for (const operation of lists) {
        const kind = KINDS.find((candidate) => operation.auth.includes(candidate))
        if (kind === undefined) continue
        const headers = { ...fixture.headers[kind] }
        const extra: Record<string, string> = {}
        const person = kind === "session" || kind === "user_token"
        if (person && operation.grain === "profile" && !operation.params.some((param) => param.name === "profile_id")) {
          extra["profile_id"] = fixture.profileId
        }
        const hints = (name: string | undefined) => ({
          strong: name === "profile_id" || name === "profileId"
            ? [fixture.profileId]
            : name === "workspace_id" || name === "workspaceId"
            ? [fixture.workspaceId]
            : name === "appId"
            ? [fixture.app.id]
            : name === "limit"
            ? ["2"]
            : [],
          weak: []
        })
        const { valid } = casesOf(new Generator(spec, hints), validator, operation, extra)
        // A request the list answers with a page, the cursor left out; the forged cursors go on it.
        let base: string | undefined
        for (const testCase of fc.sample(valid, { seed: seedFor(7, operation.label), numRuns: 6 })) {
          const query = testCase.query.filter(([name]) => name !== "cursor")
          const url = urlOf(operation, { ...testCase, query })
          if ((yield* send(url, headers)).status === 200) {
            base = url
            break
          }
        }
        if (base === undefined) continue
        reached.push(operation.label)
        for (const [what, cursor] of FORGED) {
          const url = `${base}${base.includes("?") ? "&" : "?"}cursor=${encodeURIComponent(cursor)}`
          const answer = yield* send(url, headers)
          const body: unknown = answer.text.startsWith("{") ? JSON.parse(answer.text) : undefined
          const error = isNode(body) && isNode(body["error"]) ? body["error"] : undefined
          if (answer.status !== 400 || error?.["code"] !== "invalid_parameter" || error["reason"] !== "invalid_parameter:cursor") {
            failures.push(`${operation.label} with ${what}: ${answer.status} ${answer.text.slice(0, 200)}`)
          }
        }
      }
      console.log(`cursor sweep: ${reached.length} of ${lists.length} paged operations answered a page and were sent forged cursors`)
      assert.isAbove(reached.length, lists.length / 2, `too few lists reached: ${reached.join(", ")}`)
      assert.deepStrictEqual(failures, [])
    }))
})
