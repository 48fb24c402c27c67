/**
 * src/README.md states the tree once: the folders under src/ and their layers, and the inner
 * shape of a context. This checks the tree against it (the import direction itself is checked
 * by test/unit/architecture.test.ts from the same list).
 */
import { assert, describe, it } from "@effect/vitest"
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { fileImports, isRepository, statedLayers } from "../support/structure.ts"

const root = fileURLToPath(new URL("../..", import.meta.url))
const readme = readFileSync(join(root, "src", "README.md"), "utf8")

const filesNamed = (dir: string, name: string): ReadonlyArray<string> =>
  readdirSync(join(root, dir), { recursive: true, encoding: "utf8" })
    .filter((file) => file === name || file.endsWith(`/${name}`))
    .map((file) => join(dir, file))

describe("the context map of src/README.md", () => {
  it("names every folder under src/ in its layers, and no other", () => {
    const layered = [...statedLayers(root).keys()].filter((unit) => unit.startsWith("src/")).sort()
    const present = readdirSync(join(root, "src"))
      .filter((name) => statSync(join(root, "src", name)).isDirectory())
      .map((name) => `src/${name}`)
      .sort()
    assert.deepStrictEqual(present, layered)
  })

  it("describes every context of the table in the layers", () => {
    const table = readme.split(/^## /m).find((part) => part.startsWith("Contexts")) ?? ""
    const contexts = [...table.matchAll(/^\| `([a-z-]+)\/` \|/gm)].map((match) => `src/${match[1]}`)
    assert.isAtLeast(contexts.length, 8)
    const layers = statedLayers(root)
    assert.deepStrictEqual(contexts.filter((context) => !layers.has(context)), [])
  })

  it("gives every HTTP contract its handlers, and every handlers file its contract", () => {
    const apis = filesNamed("src", "api.ts").filter((file) => !file.startsWith("src/main/"))
    const handlers = filesNamed("src", "handlers.ts")
    assert.isAbove(apis.length, 40)
    assert.deepStrictEqual(apis.filter((file) => !existsSync(join(root, dirname(file), "handlers.ts"))), [])
    assert.deepStrictEqual(handlers.filter((file) => !existsSync(join(root, dirname(file), "api.ts"))), [])
  })

  it("keeps repositories out of handlers: they call services", () => {
    const offending = fileImports(root)
      .filter((i) => i.from.endsWith("/handlers.ts") && isRepository(i.to))
      .map((i) => `${i.from} -> ${i.to}`)
    assert.deepStrictEqual(offending, [])
  })

  it("names layers one way: a service's static layer, else <Name>Layer, a provider's <Name>Adapter or a router's <Name>Routes", () => {
    const sources = ["src", "cluster", "sandbox"].flatMap((dir) =>
      readdirSync(join(root, dir), { recursive: true, encoding: "utf8" })
        .filter((file) => file.endsWith(".ts"))
        .map((file) => join(dir, file))
    )
    const offending = sources.flatMap((file) =>
      [...readFileSync(join(root, file), "utf8").matchAll(/^(?:export )?const (\w+) = (?:Layer\.|\w+\.toLayer\()/gm)]
        .map((match) => match[1]!)
        .filter((name) => !/(Layer|Adapter|Routes?)$/.test(name))
        .map((name) => `${file}: ${name}`)
    )
    assert.deepStrictEqual(offending, [])
  })
})
