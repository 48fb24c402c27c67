import { assert, describe, it } from "@effect/vitest"
import { Schema } from "effect"
import { existsSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { catalogue, NotFound, toEnvelope, unprocessable, ValidationError } from "../../schema/errors.ts"

/** The spec's error section: the shared spec when it sits beside the repo, else the vendored copy. */
const specErrorsSection = (): string => {
  const shared = fileURLToPath(new URL("../../../shared/spec/api-concepts.md", import.meta.url))
  if (existsSync(shared)) {
    const text = readFileSync(shared, "utf8")
    return text.slice(text.indexOf("## Errors"), text.indexOf("## Limits"))
  }
  return readFileSync(fileURLToPath(new URL("../fixtures/spec-errors-section.md", import.meta.url)), "utf8")
}

interface SpecRow {
  readonly codes: ReadonlyArray<string>
  readonly status: string
}

const specRows = (): ReadonlyArray<SpecRow> =>
  specErrorsSection()
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .map((line) => {
      const [codes = "", status = ""] = line.split("|").slice(1).map((cell) => cell.trim())
      return { codes: [...codes.matchAll(/`([a-z_0-9]+)`/g)].map((m) => m[1] ?? ""), status }
    })

describe("error catalogue", () => {
  const rows = specRows()
  const byCode = new Map(catalogue.map((entry) => [entry.code, entry]))

  it("the spec table was found and parsed", () => {
    assert.strictEqual(rows.length, 49)
    assert.strictEqual(rows.flatMap((row) => row.codes).length, 58)
  })

  it("has exactly the spec's codes, each once", () => {
    const specCodes = rows.flatMap((row) => row.codes)
    assert.strictEqual(new Set(specCodes).size, specCodes.length)
    assert.deepStrictEqual([...byCode.keys()].sort(), [...specCodes].sort())
    assert.strictEqual(byCode.size, catalogue.length)
  })

  it("every row's status matches the class's status", () => {
    for (const row of rows) {
      for (const code of row.codes) {
        const entry = byCode.get(code)
        assert.isDefined(entry, code)
        if (entry === undefined) continue
        if (/^\d{3}$/.test(row.status)) {
          assert.strictEqual(entry.kind, "http", code)
          assert.strictEqual(entry.status, Number(row.status), code)
        } else if (row.status === "400 or 422") {
          assert.strictEqual(entry.status, 400, code)
          assert.strictEqual(toEnvelope(unprocessable("x")).error.status, 422)
        } else if (row.status === "OAuth error") {
          assert.strictEqual(entry.kind, "oauth", code)
        } else if (row.status.startsWith("outcome")) {
          assert.strictEqual(entry.kind, "outcome", code)
          assert.isNull(entry.status)
        } else {
          // "status: not shown": designed (docs/decisions/0004-campaign-error-statuses.md)
          assert.strictEqual(row.status, "status: not shown", code)
          assert.include([404, 409], entry.status, code)
        }
      }
    }
  })

  it("a class renders the spec envelope and round-trips through its wire schema", () => {
    const error = new NotFound({ message: "No such profile." })
    const encoded = Schema.encodeSync(NotFound.wire)(error)
    assert.deepStrictEqual(encoded, { error: { code: "not_found", message: "No such profile.", status: 404, request_id: "" } })
    const decoded = Schema.decodeUnknownSync(NotFound.wire)({
      error: { code: "not_found", message: "No such profile.", status: 404, request_id: "req_1" }
    })
    assert.strictEqual(decoded._tag, "NotFound")
    assert.strictEqual(decoded.message, "No such profile.")
    const validation = Schema.encodeSync(ValidationError.wire)(unprocessable("consent malformed", { reason: "consent" }))
    assert.deepStrictEqual(validation, {
      error: { code: "validation_error", message: "consent malformed", status: 422, request_id: "", reason: "consent" }
    })
  })
})
