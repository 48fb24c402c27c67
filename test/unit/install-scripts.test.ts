/**
 * What `npm install` / `npm ci` may run (issue 29): only the install scripts reviewed below, and
 * never @scarf/scarf, whose postinstall reports the install to scarf.sh (it comes with
 * swagger-ui-dist). package.json's `overrides` replace it by the empty package in
 * overrides/empty-package; `allowScripts` names the reviewed scripts (npm 11 warns about, and
 * with `strict-allow-scripts` refuses, any other). Read from package-lock.json, which `npm ci`
 * installs exactly.
 */
import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../..", import.meta.url))

interface LockEntry {
  readonly name?: string
  readonly version?: string
  readonly resolved?: string
  readonly link?: boolean
  readonly integrity?: string
  readonly hasInstallScript?: boolean
  readonly dependencies?: Record<string, string>
  readonly devDependencies?: Record<string, string>
  readonly optionalDependencies?: Record<string, string>
}

interface Manifest {
  readonly dependencies?: Record<string, string>
  readonly devDependencies?: Record<string, string>
  readonly overrides?: Record<string, unknown>
  readonly allowScripts?: Record<string, boolean>
  readonly scripts?: Record<string, string>
}

const readJson = (path: string): unknown => JSON.parse(readFileSync(`${root}${path}`, "utf8"))
const manifest = readJson("package.json") as Manifest
const lock = readJson("package-lock.json") as { readonly packages: Record<string, LockEntry> }

/**
 * The reviewed install scripts. node and deno: the pinned runtimes, installed from their own
 * registry packages. msgpackr-extract (optional, under msgpackr): loads its prebuilt binary,
 * compiles with node-gyp only where none fits. esbuild (the console's bundler, decision 0123):
 * checks that its platform package (`@esbuild/<platform>`, an optional dependency from the npm
 * registry) is there and links its binary in place of the JS launcher; only when that package is
 * missing does it fetch it, from the npm registry. The JS API the service calls finds the binary
 * without it (the image installs with --ignore-scripts). Adding one is a review: of its script, here.
 */
const REVIEWED = ["deno", "esbuild", "msgpackr-extract", "node"]

const EMPTY = "overrides/empty-package"

/** The package a lock key installs: `node_modules/a/node_modules/@b/c` is `@b/c`. */
const packageOf = (key: string) => key.slice(key.lastIndexOf("node_modules/") + "node_modules/".length)

const installed = Object.entries(lock.packages).filter(([key]) => key.includes("node_modules/"))

describe("install-time scripts", () => {
  it("the lock file is the one package.json asks for (npm ci installs exactly it)", () => {
    const top = lock.packages[""]
    assert.deepStrictEqual(top?.dependencies, manifest.dependencies)
    assert.deepStrictEqual(top?.devDependencies, manifest.devDependencies)
  })

  it("every package with an install script is a reviewed one, allowed in package.json's allowScripts", () => {
    const allowed = Object.entries(manifest.allowScripts ?? {}).filter(([, allow]) => allow).map(([name]) => name).sort()
    assert.deepStrictEqual(allowed, REVIEWED)
    const withScripts = installed.filter(([, entry]) => entry.hasInstallScript === true).map(([key]) => packageOf(key))
    const unreviewed = withScripts.filter((name) => !REVIEWED.includes(name))
    assert.deepStrictEqual(unreviewed, [], `install scripts nobody reviewed: ${unreviewed.join(", ")}`)
    // The check reads a field npm writes: the reviewed ones are there to be found.
    assert.includeMembers(withScripts, ["node", "deno"])
  })

  it("@scarf/scarf is never installed: every place it would go links the empty package instead", () => {
    assert.deepStrictEqual(manifest.overrides, { "@scarf/scarf": "$@scarf/scarf" })
    assert.strictEqual(manifest.dependencies?.["@scarf/scarf"], `file:${EMPTY}`)
    const scarf = installed.filter(([key]) => packageOf(key) === "@scarf/scarf")
    assert.isAbove(scarf.length, 0)
    for (const [key, entry] of scarf) assert.deepStrictEqual(entry, { resolved: EMPTY, link: true }, key)
    // Nothing else installs from the registry under that name (an alias, say).
    const named = installed.filter(([key, entry]) => entry.name === "@scarf/scarf" && packageOf(key) !== "@scarf/scarf")
    assert.deepStrictEqual(named.map(([key]) => key), [])
    // swagger-ui-dist still asks for it, so the override is what keeps it out.
    assert.property(lock.packages["node_modules/swagger-ui-dist"]?.dependencies ?? {}, "@scarf/scarf")
  })

  it("the empty package is empty: a package.json with no scripts and no dependencies, nothing else", () => {
    assert.deepStrictEqual(readdirSync(`${root}${EMPTY}`), ["package.json"])
    const empty = readJson(`${EMPTY}/package.json`) as Record<string, unknown>
    for (const field of ["scripts", "dependencies", "optionalDependencies", "peerDependencies", "bin", "main", "exports", "gypfile"]) {
      assert.notProperty(empty, field)
    }
    const entry = lock.packages[EMPTY]
    assert.isDefined(entry)
    assert.isUndefined(entry?.hasInstallScript)
    assert.isUndefined(entry?.dependencies)
  })
})
