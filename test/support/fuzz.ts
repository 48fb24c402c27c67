/**
 * Schema-driven fuzzing of the published description (`/api/v1/openapi.json`): a small
 * JSON Schema (OpenAPI 3.1) → fast-check generator of valid and invalid inputs, the request
 * cases built from each operation's parameters and body, and the response checks.
 */
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js"
import * as fc from "fast-check"

export type Node = { readonly [key: string]: unknown }

export const isNode = (value: unknown): value is Node =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const nodeAt = (node: Node, key: string): Node | undefined => {
  const value = node[key]
  return isNode(value) ? value : undefined
}
const stringAt = (node: Node, key: string): string | undefined => {
  const value = node[key]
  return typeof value === "string" ? value : undefined
}
const numberAt = (node: Node, key: string): number | undefined => {
  const value = node[key]
  return typeof value === "number" ? value : undefined
}
const nodesAt = (node: Node, key: string): ReadonlyArray<Node> => {
  const value = node[key]
  return Array.isArray(value) ? value.filter(isNode) : []
}
const stringsAt = (node: Node, key: string): ReadonlyArray<string> => {
  const value = node[key]
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : []
}

// ---------------------------------------------------------------------------------------------
// Operations of the description

export interface Param {
  readonly name: string
  readonly in: "path" | "query"
  readonly required: boolean
  readonly schema: Node
}

export interface Operation {
  readonly method: string
  readonly path: string
  /** `METHOD /path`, how failures name the operation. */
  readonly label: string
  readonly node: Node
  readonly params: ReadonlyArray<Param>
  readonly body: { readonly schema: Node; readonly mediaType: string; readonly required: boolean } | undefined
  /** `x-auth`: the credential kinds the operation accepts; empty = public. */
  readonly auth: ReadonlyArray<string>
  readonly grain: string
  readonly idempotency: string
  /** `security` lists `{}`: the operation also answers without any credential (client_secret_post...). */
  readonly anonymousAlternative: boolean
  readonly responses: Node
}

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

/** The responses with each `$ref` to `components.responses` replaced by the shared response it names. */
export const resolvedResponses = (spec: Node, responses: Node): Node =>
  Object.fromEntries(Object.entries(responses).map(([status, response]) => {
    const ref = isNode(response) ? stringAt(response, "$ref") : undefined
    const shared = ref?.startsWith("#/components/responses/")
      ? nodeAt(nodeAt(nodeAt(spec, "components") ?? {}, "responses") ?? {}, ref.slice("#/components/responses/".length))
      : undefined
    return [status, shared ?? response]
  }))

export const operationsOf = (spec: Node): ReadonlyArray<Operation> => {
  const operations: Array<Operation> = []
  for (const [path, item] of Object.entries(nodeAt(spec, "paths") ?? {})) {
    if (!isNode(item)) continue
    for (const [method, node] of Object.entries(item)) {
      if (!METHODS.includes(method) || !isNode(node)) continue
      const params: Array<Param> = []
      for (const param of nodesAt(node, "parameters")) {
        const where = stringAt(param, "in")
        const name = stringAt(param, "name")
        if ((where !== "path" && where !== "query") || name === undefined) continue
        params.push({ name, in: where, required: param["required"] === true || where === "path", schema: nodeAt(param, "schema") ?? {} })
      }
      const requestBody = nodeAt(node, "requestBody")
      const content = requestBody === undefined ? undefined : nodeAt(requestBody, "content")
      let body: Operation["body"] = undefined
      if (content !== undefined && requestBody !== undefined) {
        // JSON where offered; the OAuth routes that only take forms get the same objects form-encoded.
        const mediaType = ["application/json", "application/x-www-form-urlencoded"].find((type) => nodeAt(content, type) !== undefined)
        const schema = mediaType === undefined ? undefined : nodeAt(nodeAt(content, mediaType) ?? {}, "schema")
        if (mediaType !== undefined && schema !== undefined) body = { schema, mediaType, required: requestBody["required"] === true }
      }
      const security = nodesAt(node, "security")
      operations.push({
        method,
        path,
        label: `${method.toUpperCase()} ${path}`,
        node,
        params,
        body,
        auth: stringsAt(node, "x-auth"),
        grain: stringAt(node, "x-scope-grain") ?? "none",
        idempotency: stringAt(node, "x-idempotency") ?? "none",
        anonymousAlternative: security.some((requirement) => Object.keys(requirement).length === 0),
        responses: resolvedResponses(spec, nodeAt(node, "responses") ?? {})
      })
    }
  }
  return operations
}

// ---------------------------------------------------------------------------------------------
// Validation against the published schemas (ajv, JSON Schema 2020-12 = OpenAPI 3.1)

const SPEC_ID = "https://svc.test/openapi.json"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export interface SchemaError {
  readonly where: string
  readonly message: string
}

/** Validates values against schemas of the description; `$ref`s resolve into its components. */
export class SpecValidator {
  readonly #ajv: Ajv2020
  readonly #compiled = new Map<string, ValidateFunction>()

  constructor(spec: Node) {
    this.#ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true })
    this.#ajv.addFormat("uuid", UUID)
    this.#ajv.addFormat("date", /^\d{4}-\d{2}-\d{2}$/)
    this.#ajv.addFormat("date-time", (value: string) => !Number.isNaN(Date.parse(value)) && /^\d{4}-\d{2}-\d{2}T/.test(value))
    this.#ajv.addFormat("email", /^[^@\s]+@[^@\s]+$/)
    this.#ajv.addFormat("uri", (value: string) => URL.canParse(value))
    this.#ajv.addSchema({ $id: SPEC_ID, components: spec["components"] })
  }

  /** `undefined` when `value` conforms, else the first error. */
  check(schema: Node, value: unknown): SchemaError | undefined {
    const absolute = absoluteNode(schema)
    const key = JSON.stringify(absolute)
    let validate = this.#compiled.get(key)
    if (validate === undefined) {
      validate = this.#ajv.compile(absolute)
      this.#compiled.set(key, validate)
    }
    if (validate(value)) return undefined
    // The deepest error names the field; anyOf's own "must match a schema" says little.
    const errors = validate.errors ?? []
    const first = errors.find((error) => error.keyword !== "anyOf" && error.keyword !== "oneOf") ?? errors[0]
    return {
      where: `${first?.instancePath === "" ? "/" : first?.instancePath ?? "/"} (${first?.schemaPath ?? "?"})`,
      message: `${first?.message ?? "does not match"}${first?.params === undefined ? "" : ` ${JSON.stringify(first.params)}`}`
    }
  }
}

/** A schema whose `#/components/...` refs point into the registered description; descriptions dropped. */
const absoluteNode = (node: Node): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const [key, item] of Object.entries(node)) {
    if (key === "description" && typeof item === "string") continue
    out[key] = key === "$ref" && typeof item === "string" && item.startsWith("#") ? `${SPEC_ID}${item}` : absoluteRefs(item)
  }
  return out
}
const absoluteRefs = (value: unknown): unknown =>
  Array.isArray(value) ? value.map(absoluteRefs) : isNode(value) ? absoluteNode(value) : value

// ---------------------------------------------------------------------------------------------
// JSON Schema → fast-check

/**
 * Values worth trying for a property or parameter of this name: `strong` ones (real ids, values
 * of the right shape for the name) get past the handlers' own checks, `weak` ones (words of the
 * description) sometimes do.
 */
export type Hints = (
  name: string | undefined,
  description: string | undefined
) => { readonly strong: ReadonlyArray<string>; readonly weak: ReadonlyArray<string> }

/** A value that breaks (or is meant to break) its schema, and what was done to it. */
export interface Mutated {
  readonly value: unknown
  /** What was done, without where: groups failures of the same kind. */
  readonly what: string
  /** Where, e.g. `body.selectors[0].value`. */
  readonly where: string
}

const MAX_DEPTH = 6

/** One of each JSON type, for "wrong type" mutations. */
const typeSamples: ReadonlyArray<unknown> = [0, 1.5, -1, true, "text", "", null, [], [1], {}, { a: 1 }]

const typeOf = (value: unknown): string =>
  value === null
    ? "null"
    : Array.isArray(value)
    ? "array"
    : typeof value === "number"
    ? (Number.isInteger(value) ? "integer" : "number")
    : typeof value

/** `\ud800` and friends are fine in JS strings and JSON text, and break UTF-8 encoders. */
const LONE_SURROGATE = "\ud800"

export class Generator {
  readonly #components: Node
  readonly #hints: Hints

  constructor(spec: Node, hints: Hints) {
    this.#components = nodeAt(nodeAt(spec, "components") ?? {}, "schemas") ?? {}
    this.#hints = hints
  }

  /** Follows `$ref`s into components and folds `allOf` into one schema (enough for this description). */
  resolve(schema: Node): Node {
    let current = schema
    for (let hops = 0; hops < 20; hops++) {
      const ref = stringAt(current, "$ref")
      if (ref === undefined) break
      const name = ref.replace(/^#\/components\/schemas\//, "")
      const target = nodeAt(this.#components, decodeURIComponent(name).replace(/~1/g, "/").replace(/~0/g, "~"))
      if (target === undefined) throw new Error(`unresolved $ref ${ref}`)
      const { $ref: _ref, ...rest } = current
      current = { ...target, ...rest }
    }
    const allOf = nodesAt(current, "allOf")
    if (allOf.length > 0) {
      const { allOf: _allOf, ...rest } = current
      current = allOf.reduce<Node>((merged, part) => ({ ...merged, ...this.resolve(part) }), rest)
    }
    return current
  }

  /** The JSON types a schema allows; `undefined` when it allows anything. */
  typesOf(schema: Node): ReadonlySet<string> | undefined {
    const s = this.resolve(schema)
    const branches = [...nodesAt(s, "anyOf"), ...nodesAt(s, "oneOf")]
    if (branches.length > 0) {
      const all = new Set<string>()
      for (const branch of branches) {
        const types = this.typesOf(branch)
        if (types === undefined) return undefined
        for (const type of types) all.add(type)
      }
      return all
    }
    if ("const" in s) return new Set([typeOf(s["const"])])
    const enumValues = s["enum"]
    if (Array.isArray(enumValues)) return new Set(enumValues.map(typeOf))
    const type = s["type"]
    if (typeof type === "string") return new Set(type === "number" ? ["number", "integer"] : [type])
    if (Array.isArray(type)) {
      const types = new Set(type.filter((item): item is string => typeof item === "string"))
      if (types.has("number")) types.add("integer")
      return types
    }
    if (isNode(s["properties"])) return new Set(["object"])
    return undefined
  }

  /** Values the schema accepts (bounded in size). */
  valid(schema: Node, name?: string, depth = 0): fc.Arbitrary<unknown> {
    // A schema that refers to itself through required fields would never bottom out.
    if (depth > 3 * MAX_DEPTH) return fc.constant(null)
    const s = this.resolve(schema)
    if ("const" in s) return fc.constant(s["const"])
    const enumValues = s["enum"]
    if (Array.isArray(enumValues) && enumValues.length > 0) return fc.constantFrom(...enumValues)
    const branches = [...nodesAt(s, "anyOf"), ...nodesAt(s, "oneOf")]
    if (branches.length > 0) {
      const { anyOf: _anyOf, oneOf: _oneOf, ...outer } = s
      return fc.oneof(...branches.map((branch) => this.valid({ ...outer, ...branch }, name, depth)))
    }
    const type = s["type"]
    if (Array.isArray(type)) {
      const types = type.filter((item): item is string => typeof item === "string")
      return fc.oneof(...types.map((item) => this.valid({ ...s, type: item }, name, depth)))
    }
    switch (type) {
      case "string":
        return this.#validString(s, name)
      case "integer":
      case "number":
        return this.#validNumber(s, type === "integer")
      case "boolean":
        return fc.boolean()
      case "null":
        return fc.constant(null)
      case "array":
        return this.#validArray(s, name, depth)
      case "object":
        return this.#validObject(s, depth)
      default:
        return isNode(s["properties"]) ? this.#validObject(s, depth) : fc.jsonValue({ maxDepth: 2 })
    }
  }

  #validString(s: Node, name: string | undefined): fc.Arbitrary<string> {
    const minLength = numberAt(s, "minLength") ?? 0
    const maxLength = numberAt(s, "maxLength")
    const fits = (value: string) => value.length >= minLength && (maxLength === undefined || value.length <= maxLength)
    const format = stringAt(s, "format")
    const pattern = stringAt(s, "pattern")
    let base: fc.Arbitrary<string>
    if (format === "uuid") base = fc.uuid({ version: [1, 4, 5, 7] })
    else if (format === "date") base = dates.map((date) => date.toISOString().slice(0, 10))
    else if (format === "date-time") base = dates.map((date) => date.toISOString())
    else if (format === "email") base = fc.emailAddress()
    else if (format === "uri") base = fc.webUrl()
    else if (pattern !== undefined) base = matching(pattern) ?? plainString(minLength, maxLength)
    else base = plainString(minLength, maxLength)
    if (pattern !== undefined) {
      // The pattern binds even where a format made the value; keep only what it accepts.
      const regex = new RegExp(pattern, "u")
      base = base.filter((value) => regex.test(value))
    }
    const usable = (values: ReadonlyArray<string>) =>
      values.filter((value) => fits(value) && (pattern === undefined || new RegExp(pattern, "u").test(value)))
    const hints = this.#hints(name, stringAt(s, "description"))
    const strong = usable(hints.strong)
    const weak = usable(hints.weak)
    return fc.oneof(
      { weight: 1, arbitrary: base.filter(fits) },
      ...(strong.length === 0 ? [] : [{ weight: 4, arbitrary: fc.constantFrom(...strong) }]),
      ...(weak.length === 0 ? [] : [{ weight: 1, arbitrary: fc.constantFrom(...weak) }])
    )
  }

  #validNumber(s: Node, integer: boolean): fc.Arbitrary<number> {
    const exclusiveMin = numberAt(s, "exclusiveMinimum")
    const exclusiveMax = numberAt(s, "exclusiveMaximum")
    const min = numberAt(s, "minimum") ?? (exclusiveMin === undefined ? undefined : exclusiveMin + (integer ? 1 : Number.EPSILON))
    const max = numberAt(s, "maximum") ?? (exclusiveMax === undefined ? undefined : exclusiveMax - (integer ? 1 : Number.EPSILON))
    if (integer) {
      // fc.integer is 32-bit; the description's bounds are often ±MAX_SAFE_INTEGER: clamp and add the ends.
      const lo = Math.max(min ?? -1_000_000, -2_147_483_648)
      const hi = Math.min(max ?? 1_000_000, 2_147_483_647)
      const small = fc.integer({ min: Math.max(lo, Math.min(-100, hi)), max: Math.min(hi, Math.max(100, lo)) })
      const ends = [min, max].filter((end): end is number => end !== undefined && Number.isSafeInteger(end))
      return fc.oneof(
        { weight: 4, arbitrary: small },
        { weight: 1, arbitrary: fc.integer({ min: lo, max: hi }) },
        ...(ends.length === 0 ? [] : [{ weight: 1, arbitrary: fc.constantFrom(...ends) }])
      )
    }
    return fc.double({ noNaN: true, noDefaultInfinity: true, ...(min === undefined ? {} : { min }), ...(max === undefined ? {} : { max }) })
  }

  #validArray(s: Node, name: string | undefined, depth: number): fc.Arbitrary<Array<unknown>> {
    const prefix = nodesAt(s, "prefixItems")
    if (prefix.length > 0) return fc.tuple(...prefix.map((item) => this.valid(item, name, depth + 1)))
    const items = nodeAt(s, "items") ?? {}
    const minLength = numberAt(s, "minItems") ?? 0
    const maxLength = Math.max(minLength, Math.min(numberAt(s, "maxItems") ?? 3, depth >= MAX_DEPTH ? minLength : 3))
    return fc.array(this.valid(items, name, depth + 1), { minLength, maxLength })
  }

  #validObject(s: Node, depth: number): fc.Arbitrary<Record<string, unknown>> {
    const properties = nodeAt(s, "properties") ?? {}
    const required = stringsAt(s, "required")
    const keys = Object.keys(properties).filter((key) => depth < MAX_DEPTH || required.includes(key))
    const model: Record<string, fc.Arbitrary<unknown>> = {}
    for (const key of keys) model[key] = this.valid(nodeAt(properties, key) ?? {}, key, depth + 1)
    const record = fc.record(model, { requiredKeys: keys.filter((key) => required.includes(key)) })
    const additional = nodeAt(s, "additionalProperties")
    if (additional === undefined || depth >= MAX_DEPTH) return record
    const extra = fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }).filter((key) => !(key in properties)), this.valid(additional, undefined, depth + 1), { maxKeys: 3 })
    return fc.tuple(record, extra).map(([known, more]) => ({ ...more, ...known }))
  }

  /**
   * Values meant to break the schema: wrong types, out-of-range numbers, over-long strings,
   * missing required and unknown keys, NUL and lone surrogates, recursively into properties and
   * items. Whether a value really breaks the published schema is decided by the validator, not here.
   */
  invalid(schema: Node, where: string, name?: string, depth = 0): fc.Arbitrary<Mutated> {
    const options = this.#invalidOptions(schema, where, name, depth)
    return options.length === 0 ? fc.constant({ value: { unexpected: true }, what: "object instead", where }) : fc.oneof(...options)
  }

  #invalidOptions(schema: Node, where: string, name: string | undefined, depth: number): Array<fc.Arbitrary<Mutated>> {
    const s = this.resolve(schema)
    const out: Array<fc.Arbitrary<Mutated>> = []
    const at = (what: string) => (value: unknown): Mutated => ({ value, what, where })
    const types = this.typesOf(s)
    if (types !== undefined) {
      const wrong = typeSamples.filter((value) => {
        const type = typeOf(value)
        return !types.has(type) && !(type === "integer" && types.has("number"))
      })
      if (wrong.length > 0) out.push(fc.constantFrom(...wrong).map((value) => ({ value, what: `wrong type (${typeOf(value)})`, where })))
    }
    const branches = [...nodesAt(s, "anyOf"), ...nodesAt(s, "oneOf")]
    if (branches.length > 0 && depth < MAX_DEPTH) {
      for (const branch of branches) out.push(...this.#invalidOptions(branch, where, name, depth + 1))
      return out
    }
    const enumValues = s["enum"]
    if (Array.isArray(enumValues) && enumValues.every((value) => typeof value === "string")) {
      out.push(fc.constantFrom("__not_a_member__", "", String(enumValues[0] ?? "").toUpperCase()).map(at("not in enum")))
    }
    const allows = (type: string) => types === undefined || types.has(type)
    if (allows("string")) {
      const maxLength = numberAt(s, "maxLength")
      const minLength = numberAt(s, "minLength") ?? 0
      if (maxLength !== undefined) {
        out.push(fc.integer({ min: maxLength + 1, max: maxLength + 64 }).map((length) => "x".repeat(length)).map(at("over-long string")))
      }
      if (minLength > 0) out.push(fc.constant("x".repeat(minLength - 1)).map(at("too-short string")))
      if (stringAt(s, "pattern") !== undefined || stringAt(s, "format") !== undefined) {
        out.push(fc.constantFrom("not-a-match", "0", " ", "12345678-1234-1234-1234-1234567890ab ").map(at("pattern or format mismatch")))
      }
      out.push(fc.string({ maxLength: 8 }).map((text) => `${text}\u0000${text}`).map(at("NUL in string")))
      out.push(fc.string({ maxLength: 8 }).map((text) => `${text}${LONE_SURROGATE}${text}`).map(at("lone surrogate in string")))
      out.push(fc.constantFrom("\udfff", "a\udc00b", "\ud83d").map(at("lone surrogate in string")))
      out.push(fc.constant("x".repeat(10_000)).map(at("10000-char string")))
    }
    if (allows("integer") || allows("number")) {
      const minimum = numberAt(s, "minimum")
      const maximum = numberAt(s, "maximum")
      if (minimum !== undefined) out.push(fc.constantFrom(minimum - 1, minimum - 1_000_000, -1e300).map(at("below minimum")))
      if (maximum !== undefined) out.push(fc.constantFrom(maximum + 1, maximum + 1_000_000, 1e300).map(at("above maximum")))
      if (types !== undefined && types.has("integer") && !types.has("number")) out.push(fc.constantFrom(1.5, 1e-7, 2 ** 53 + 2).map(at("not an integer")))
      out.push(fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 2 ** 63, 1e21).map(at("large number")))
    }
    if (allows("array") && types !== undefined) {
      const items = nodeAt(s, "items")
      const maxItems = numberAt(s, "maxItems")
      const minItems = numberAt(s, "minItems") ?? 0
      if (items !== undefined) {
        if (maxItems !== undefined && maxItems < 2000) {
          out.push(fc.array(this.valid(items, name, MAX_DEPTH), { minLength: maxItems + 1, maxLength: maxItems + 2 }).map(at("too many items")))
        }
        if (minItems > 0) out.push(fc.constant([]).map(at("too few items")))
        if (depth < MAX_DEPTH) {
          out.push(
            fc.tuple(fc.array(this.valid(items, name, depth + 1), { maxLength: 1 }), this.invalid(items, `${where}[]`, name, depth + 1))
              .map(([array, item]) => ({ ...item, value: [...array, item.value] }))
          )
        }
      }
    }
    const properties = nodeAt(s, "properties")
    if (allows("object") && properties !== undefined && depth < MAX_DEPTH) {
      const base = this.valid(s, name, depth)
      const required = stringsAt(s, "required")
      for (const key of required) {
        out.push(base.map((object) => ({ value: without(object, key), what: "missing required field", where: `${where}.${key}` })))
      }
      out.push(base.map((object) => ({ value: { ...asRecord(object), __fuzz_unknown: "x" }, what: "unknown key", where })))
      for (const [key, property] of Object.entries(properties)) {
        if (!isNode(property)) continue
        out.push(
          fc.tuple(base, this.invalid(property, `${where}.${key}`, key, depth + 1)).map(([object, mutated]) => ({
            ...mutated,
            value: { ...asRecord(object), [key]: mutated.value }
          }))
        )
      }
    }
    return out
  }
}

const asRecord = (value: unknown): Record<string, unknown> => (isNode(value) ? { ...value } : {})

const without = (value: unknown, key: string): Record<string, unknown> => {
  const copy = asRecord(value)
  delete copy[key]
  return copy
}

const dates = fc.date({ min: new Date("2019-01-01T00:00:00Z"), max: new Date("2031-12-31T00:00:00Z"), noInvalidDate: true })

/** Short strings, mostly ASCII, some of any Unicode (well-formed). */
const plainString = (minLength: number, maxLength: number | undefined) => {
  const max = Math.min(maxLength ?? minLength + 24, minLength + 24)
  return fc.oneof(
    { weight: 3, arbitrary: fc.string({ minLength, maxLength: max }) },
    { weight: 1, arbitrary: fc.string({ minLength, maxLength: max, unit: "grapheme" }) }
  )
}

/** `fc.stringMatching` where it understands the pattern; `undefined` where it does not. */
const matching = (pattern: string): fc.Arbitrary<string> | undefined => {
  try {
    const arbitrary = fc.stringMatching(new RegExp(pattern))
    fc.sample(arbitrary, { numRuns: 1, seed: 1 })
    return arbitrary
  } catch {
    return undefined
  }
}

// ---------------------------------------------------------------------------------------------
// Percent-encoding that can also write what `encodeURIComponent` refuses

/** Like `encodeURIComponent`, but a lone surrogate becomes its (invalid) UTF-8 bytes `%ED%xx%xx`. */
export const encodeComponent = (text: string): string => {
  let out = ""
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    const next = text.charCodeAt(i + 1)
    if (unit >= 0xd800 && unit <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out += encodeURIComponent(text.slice(i, i + 2))
      i++
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      out += `%${(0xe0 | (unit >> 12)).toString(16).toUpperCase()}%${(0x80 | ((unit >> 6) & 0x3f)).toString(16).toUpperCase()}%${
        (0x80 | (unit & 0x3f)).toString(16).toUpperCase()
      }`
    } else {
      out += encodeURIComponent(text[i] ?? "")
    }
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Request cases

/** A parameter value as it goes on the wire: already percent-encoded. */
export interface Raw {
  readonly raw: string
}

export interface Case {
  readonly kind: "valid" | "invalid"
  /** The mutation of an invalid case (undefined for valid ones). */
  readonly mutation: { readonly what: string; readonly where: string } | undefined
  /**
   * The input breaks the published schemas (a missing required parameter, a body the schema
   * refuses, unparsable JSON): the operation must not succeed with it.
   */
  readonly breaks: boolean
  readonly path: Readonly<Record<string, Raw>>
  /** Query pairs, both parts already encoded. */
  readonly query: ReadonlyArray<readonly [string, string]>
  /** The body as sent; `undefined`: no body. */
  readonly body: { readonly text: string; readonly contentType: string } | undefined
  /** Which of the accepted credential kinds to use (an index, taken modulo). */
  readonly credential: number
  readonly idempotencyKey: boolean
}

/** Raw malformed or hostile query/path values: bad escapes, NUL, an encoded lone surrogate. */
const hostileRaw: ReadonlyArray<readonly [string, string]> = [
  ["%", "malformed percent escape"],
  ["%zz", "malformed percent escape"],
  ["%E0%A4%A", "malformed percent escape"],
  ["abc%", "malformed percent escape"],
  ["%C0%80", "invalid UTF-8"],
  ["%FF%FE", "invalid UTF-8"],
  ["a%00b", "NUL"],
  ["%00", "NUL"],
  ["%ED%A0%80", "lone surrogate"],
  ["x%ED%B0%80y", "lone surrogate"],
  ["%2E%2E%2F%2E%2E", "encoded dot segments"],
  [encodeComponent("x".repeat(3000)), "3000-char value"],
  ["-1", "negative number"],
  ["1e400", "overflowing number"],
  ["99999999999999999999", "overflowing number"],
  ["0x10", "hex number"],
  ["%20", "space"],
  ["null", "literal null"],
  ["%7B%7D", "JSON object text"]
]

/** Whole bodies that are not what any schema describes, or not JSON at all. */
const hostileBodies: ReadonlyArray<readonly [string, string]> = [
  ["{", "truncated JSON"],
  ["", "empty body"],
  ["null", "JSON null"],
  ["[]", "JSON array"],
  ["\"\\ud800\"", "JSON string with lone surrogate"],
  ["{\"a\":\"\\u0000\"}", "JSON object with NUL"],
  ["{\"__proto__\":{\"polluted\":1}}", "__proto__ key"],
  ["{\"a\":1,\"a\":2}", "duplicate keys"],
  ["\u0000", "NUL byte body"],
  ["{\"x\":1e999}", "overflowing number"],
  ["[".repeat(5000), "deeply nested, unclosed"],
  ["[".repeat(20_000) + "]".repeat(20_000), "deeply nested arrays"],
  ["{\"a\":".repeat(6000) + "1" + "}".repeat(6000), "deeply nested objects"],
  ["\ufeff{}", "byte order mark"],
  ["{} {}", "trailing data"]
]

const formText = (value: unknown): string => {
  const pairs: Array<string> = []
  for (const [key, item] of Object.entries(formFields(value))) pairs.push(`${encodeComponent(key)}=${encodeComponent(item)}`)
  return pairs.join("&")
}

/** An object as a form carries it: every field a string. */
const formFields = (value: unknown): Record<string, string> => {
  const fields: Record<string, string> = {}
  for (const [key, item] of Object.entries(asRecord(value))) fields[key] = typeof item === "string" ? item : JSON.stringify(item) ?? ""
  return fields
}

const parseJson = (text: string): { readonly value: unknown } | undefined => {
  try {
    return { value: JSON.parse(text) }
  } catch {
    return undefined
  }
}

type Mutation =
  | { readonly _tag: "path"; readonly name: string; readonly raw: string; readonly what: string; readonly where: string }
  | {
    readonly _tag: "query"
    readonly name: string
    /** `undefined`: the parameter is left out. */
    readonly raw: string | undefined
    /** The decoded value, when it is a plain string the schema can judge. */
    readonly value: string | undefined
    readonly what: string
    readonly where: string
  }
  | { readonly _tag: "queryExtra"; readonly pairs: ReadonlyArray<readonly [string, string]>; readonly what: string; readonly where: string }
  | { readonly _tag: "body"; readonly value: unknown; readonly what: string; readonly where: string }
  | { readonly _tag: "bodyText"; readonly text: string; readonly what: string; readonly where: string }
  | { readonly _tag: "contentType"; readonly contentType: string; readonly what: string; readonly where: string }

interface Parts {
  readonly path: Record<string, string>
  readonly query: Record<string, string>
  readonly body: { readonly value: unknown } | undefined
}

interface Extras {
  readonly credential: number
  readonly idempotencyKey: boolean
}

const paramText = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value) ?? "")

/** A path segment that stays one segment of the same route: not empty, not `.` or `..`. */
const isSegment = (value: string) => value !== "" && value !== "." && value !== ".."

/**
 * Cases for one operation: valid inputs from its schemas, and inputs with exactly one thing
 * broken (a path or query parameter, the body, or the query string itself). `extraQuery` are
 * parameters the credential needs that the operation does not list (`profile_id` for a person
 * on a profile route), with the values to send.
 */
export const casesOf = (
  generator: Generator,
  validator: SpecValidator,
  operation: Operation,
  extraQuery: Readonly<Record<string, string>>
) => {
  const pathParams = operation.params.filter((param) => param.in === "path")
  const queryParams = operation.params.filter((param) => param.in === "query")
  const bodySpec = operation.body

  // An empty or dot-only segment would be another route (or be folded away by the URL parser).
  const pathModel: Record<string, fc.Arbitrary<string>> = {}
  for (const param of pathParams) {
    pathModel[param.name] = generator.valid({ minLength: 1, ...param.schema }, param.name).map(paramText).filter(isSegment)
  }
  // Optional query parameters are mostly left out: several together often exclude each other.
  const queryModel: Record<string, fc.Arbitrary<string | undefined>> = {}
  for (const param of queryParams) {
    const value = generator.valid(param.schema, param.name).map(paramText)
    queryModel[param.name] = param.required ? value : fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: value })
  }

  const bodyArb: fc.Arbitrary<{ readonly value: unknown } | undefined> = bodySpec === undefined
    ? fc.constant(undefined)
    : generator.valid(bodySpec.schema).map((value) => ({ value }))
  const parts: fc.Arbitrary<Parts> = fc.record({
    path: fc.record(pathModel),
    query: fc.record(queryModel).map((values) => {
      const present: Record<string, string> = {}
      for (const [name, value] of Object.entries(values)) if (value !== undefined) present[name] = value
      return present
    }),
    body: bodySpec !== undefined && !bodySpec.required ? fc.option(bodyArb, { nil: undefined, freq: 4 }).map((body) => body ?? undefined) : bodyArb
  })
  const extras: fc.Arbitrary<Extras> = fc.record({ credential: fc.nat({ max: 59 }), idempotencyKey: fc.boolean() })

  /** Whether a body (as the server will decode it) breaks the operation's schema. */
  const bodyBreaks = (value: unknown): boolean => {
    if (bodySpec === undefined) return false
    try {
      return validator.check(bodySpec.schema, bodySpec.mediaType === "application/json" ? value : formFields(value)) !== undefined
    } catch (error) {
      // A value nested deeper than the validator's stack is not what any published body describes.
      if (error instanceof RangeError) return true
      throw error
    }
  }
  const bodyText = (value: unknown) =>
    bodySpec === undefined
      ? undefined
      : bodySpec.mediaType === "application/json"
      ? { text: JSON.stringify(value) ?? "null", contentType: "application/json" }
      : { text: formText(value), contentType: bodySpec.mediaType }

  const toCase = (kind: Case["kind"], p: Parts, e: Extras, mutation?: Mutation): Case => {
    const path: Record<string, Raw> = {}
    for (const [name, value] of Object.entries(p.path)) path[name] = { raw: encodeComponent(value) }
    const queryValues: Record<string, string> = { ...p.query, ...extraQuery }
    let query: Array<readonly [string, string]> = Object.entries(queryValues).map(([name, value]) => [encodeComponent(name), encodeComponent(value)] as const)
    let body = p.body === undefined ? undefined : bodyText(p.body.value)
    let breaks = p.body !== undefined && bodyBreaks(p.body.value)
    if (mutation !== undefined) {
      switch (mutation._tag) {
        case "path":
          path[mutation.name] = { raw: mutation.raw }
          break
        case "query": {
          const name = encodeComponent(mutation.name)
          query = query.filter(([key]) => key !== name)
          if (mutation.raw !== undefined) query.push([name, mutation.raw])
          const param = queryParams.find((item) => item.name === mutation.name)
          if (param !== undefined) {
            breaks ||= mutation.raw === undefined
              ? param.required
              : mutation.value !== undefined && validator.check(param.schema, mutation.value) !== undefined
          }
          break
        }
        case "queryExtra":
          query.push(...mutation.pairs)
          break
        case "body":
          body = bodyText(mutation.value)
          breaks = bodyBreaks(mutation.value)
          break
        case "bodyText": {
          body = { text: mutation.text, contentType: bodySpec?.mediaType ?? "application/json" }
          // RFC 8259 §8.1 lets a parser ignore a byte order mark: a body starting with one is not broken by it.
          const parsed = bodySpec?.mediaType === "application/json" ? parseJson(mutation.text.replace(/^\ufeff/, "")) : undefined
          // Unparsable JSON breaks any schema; an empty body only a required one.
          breaks = bodySpec?.mediaType === "application/json" &&
            (mutation.text === "" ? bodySpec.required : parsed === undefined || bodyBreaks(parsed.value))
          break
        }
        case "contentType":
          body = { text: body?.text ?? "{}", contentType: mutation.contentType }
          break
      }
    }
    return {
      kind,
      mutation: mutation === undefined ? undefined : { what: mutation.what, where: mutation.where },
      breaks,
      path,
      query,
      body,
      credential: e.credential,
      idempotencyKey: e.idempotencyKey
    }
  }

  const mutations: Array<fc.Arbitrary<Mutation>> = []
  const hostile = fc.constantFrom(...hostileRaw)
  for (const param of pathParams) {
    const where = `path.${param.name}`
    mutations.push(hostile.map(([raw, what]): Mutation => ({ _tag: "path", name: param.name, raw, what, where })))
    mutations.push(
      generator.invalid(param.schema, where, param.name).filter((m) => isSegment(paramText(m.value))).map((m): Mutation => ({
        _tag: "path",
        name: param.name,
        raw: encodeComponent(paramText(m.value)),
        what: m.what,
        where: m.where
      }))
    )
  }
  const extraParams = Object.keys(extraQuery).map((name): Param => ({ name, in: "query", required: true, schema: { type: "string" } }))
  for (const param of [...queryParams, ...extraParams]) {
    const where = `query.${param.name}`
    mutations.push(hostile.map(([raw, what]): Mutation => ({ _tag: "query", name: param.name, raw, value: undefined, what, where })))
    mutations.push(
      generator.invalid(param.schema, where, param.name).map((m): Mutation => ({
        _tag: "query",
        name: param.name,
        raw: encodeComponent(paramText(m.value)),
        value: paramText(m.value),
        what: m.what,
        where: m.where
      }))
    )
    if (param.required) {
      mutations.push(fc.constant<Mutation>({ _tag: "query", name: param.name, raw: undefined, value: undefined, what: "missing required parameter", where }))
    }
    mutations.push(fc.constant<Mutation>({ _tag: "query", name: param.name, raw: "", value: "", what: "empty value", where }))
  }
  mutations.push(
    fc.constantFrom<ReadonlyArray<readonly [string, string]>>(
      [["__fuzz", "%zz"]],
      [["%zz", "1"]],
      [["a%00b", "1"]],
      [["%ED%A0%80", "1"]],
      [["__fuzz", "1"], ["__fuzz", "2"]],
      [["limit", "1"], ["limit", "2"]],
      [["profile_id", "1"], ["profile_id", "2"]],
      [["", ""]]
    ).map((pairs): Mutation => ({ _tag: "queryExtra", pairs, what: "odd query string", where: "query" }))
  )
  if (bodySpec !== undefined) {
    const bodyMutation = generator.invalid(bodySpec.schema, "body").map((m): Mutation => ({ _tag: "body", value: m.value, what: m.what, where: m.where }))
    // The body holds most of what can go wrong: weigh it like the rest together.
    mutations.push(bodyMutation, bodyMutation, bodyMutation)
    mutations.push(fc.constantFrom(...hostileBodies).map(([text, what]): Mutation => ({ _tag: "bodyText", text, what, where: "body" })))
    mutations.push(
      fc.constantFrom(
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=utf-16",
        "application/xml",
        ""
      ).map((contentType): Mutation => ({ _tag: "contentType", contentType, what: `Content-Type ${JSON.stringify(contentType)}`, where: "body" }))
    )
  }

  const valid = fc.tuple(parts, extras).map(([p, e]) => toCase("valid", p, e))
  const invalid = fc.tuple(parts, extras, fc.oneof(...mutations)).map(([p, e, m]) => toCase("invalid", p, e, m))
  return { valid, invalid }
}

/** The URL of a case: path parameters substituted, query appended. */
export const urlOf = (operation: Operation, testCase: Case): string => {
  const path = operation.path.replace(/\{([^}]+)\}/g, (_match, name: string) => testCase.path[name]?.raw ?? "x")
  const query = testCase.query.map(([name, value]) => `${name}=${value}`).join("&")
  return query === "" ? path : `${path}?${query}`
}

/** A stable 32-bit seed per operation from the run's seed, so adding operations moves no other. */
export const seedFor = (base: number, label: string): number => {
  let hash = base | 0
  for (let i = 0; i < label.length; i++) hash = Math.imul(hash ^ label.charCodeAt(i), 0x01000193)
  return hash | 0
}
