import { OpenApi } from "effect/http-api"
import { Api } from "./api.ts"
import { applyReference, HTTP_METHODS } from "./reference/index.ts"
import { isNode, type Node } from "./reference/synthesize.ts"

let cached: OpenApi.OpenAPISpec | undefined
let cachedJson: string | undefined

/**
 * The OpenAPI 3.1 document of the assembled API with the reference (guide, descriptions,
 * examples) applied; generated once per process.
 */
export const openApiDocument = (): OpenApi.OpenAPISpec => (cached ??= applyReference(OpenApi.fromApi(Api)))

/** The document serialized once, for handlers that send it as is (about 1.1 MB). */
export const openApiJson = (): string => (cachedJson ??= JSON.stringify(openApiDocument()))

// --- One tag at a time ---------------------------------------------------------------------------

/** The tag an operation is listed under: its first. */
const tagOf = (operation: unknown): string | undefined => {
  if (!isNode(operation)) return undefined
  const tags = operation["tags"]
  return Array.isArray(tags) && typeof tags[0] === "string" ? tags[0] : undefined
}

/** The document's tags that list at least one operation, in the document's order, with their operation counts. */
export const documentTags = (): ReadonlyArray<{ readonly name: string; readonly operations: number }> => {
  const counts = new Map<string, number>()
  for (const item of Object.values(openApiDocument().paths)) {
    for (const method of HTTP_METHODS) {
      const tag = tagOf(item[method])
      if (tag !== undefined) counts.set(tag, (counts.get(tag) ?? 0) + 1)
    }
  }
  return openApiDocument().tags.flatMap((tag) => {
    const operations = counts.get(tag.name)
    return operations === undefined ? [] : [{ name: tag.name, operations }]
  })
}

/** Every `#/components/<kind>/<name>` the value references, directly. */
const refsIn = (value: unknown, out: Set<string>): void => {
  if (Array.isArray(value)) {
    for (const item of value) refsIn(item, out)
  } else if (isNode(value)) {
    for (const [key, child] of Object.entries(value)) {
      if (key === "$ref" && typeof child === "string" && child.startsWith("#/components/")) out.add(child)
      else refsIn(child, out)
    }
  }
}

const componentAt = (components: Node, ref: string): unknown => {
  const [, , kind, name] = ref.split("/")
  const group = kind === undefined ? undefined : components[kind]
  return isNode(group) && name !== undefined ? group[name] : undefined
}

/**
 * The document cut down to one tag: its operations and only the components they reach. The
 * reference page loads one of these at a time (the whole document takes a browser seconds to
 * lay out); `info.description` keeps the guide only on `guideTag`, the page's first view.
 */
const tagDocument = (tag: string, guideTag: string): Node | undefined => {
  const spec = openApiDocument()
  const paths: Record<string, Record<string, unknown>> = {}
  for (const [path, item] of Object.entries(spec.paths)) {
    const kept = Object.fromEntries(Object.entries(item).filter(([key, value]) => HTTP_METHODS.some((m) => m === key) && tagOf(value) === tag))
    if (Object.keys(kept).length > 0) paths[path] = kept
  }
  if (Object.keys(paths).length === 0) return undefined
  const components: Node = { ...spec.components }
  const reached = new Set<string>()
  const pending = new Set<string>()
  refsIn(paths, pending)
  while (pending.size > 0) {
    const [ref] = pending
    pending.delete(ref!)
    if (reached.has(ref!)) continue
    reached.add(ref!)
    const next = new Set<string>()
    refsIn(componentAt(components, ref!), next)
    for (const found of next) if (!reached.has(found)) pending.add(found)
  }
  const kept: Record<string, Record<string, unknown>> = {}
  for (const [kind, group] of Object.entries(components)) {
    if (!isNode(group)) continue
    // Security schemes are named by `security`, not by `$ref`: all are kept.
    const entries = Object.entries(group).filter(([name]) => kind === "securitySchemes" || reached.has(`#/components/${kind}/${name}`))
    if (entries.length > 0) kept[kind] = Object.fromEntries(entries)
  }
  const description = spec.tags.find((entry) => entry.name === tag)?.description
  const pointer = `The Quickstart and Authentication guide: [/docs](/docs). The whole document: [/api/v1/openapi.json](/api/v1/openapi.json) · Error codes: [/docs/errors](/docs/errors)`
  return {
    ...spec,
    info: { ...spec.info, description: tag === guideTag ? spec.info.description : `${description ?? ""}\n\n${pointer}`.trim() },
    tags: spec.tags.filter((entry) => entry.name === tag),
    paths,
    components: kept
  }
}

const tagJson = new Map<string, string>()

/** One tag's document serialized (once per tag), or undefined for a tag that lists no operation. */
export const tagDocumentJson = (tag: string, guideTag: string): string | undefined => {
  const known = tagJson.get(tag)
  if (known !== undefined) return known
  if (!documentTags().some((entry) => entry.name === tag)) return undefined
  const document = tagDocument(tag, guideTag)
  if (document === undefined) return undefined
  const json = JSON.stringify(document)
  tagJson.set(tag, json)
  return json
}
