/**
 * The import rules of .dependency-cruiser.mjs over src/, schema/, cluster/ and sandbox/, through
 * dependency-cruiser's JS API; the test lists every violation.
 *
 * dependency-cruiser 18 parses TypeScript only with the `typescript` package below 7, whose
 * JS API TypeScript 7 no longer has; on raw .ts source its fallback parser misses about half
 * the imports. So the files are cruised from a copy whose types Node strips first (the code is
 * erasable syntax only, see tsconfig.json), type-only imports turned into plain ones beforehand
 * so the rules see them too. Paths and file names stay the same, so `.ts` imports resolve as
 * written.
 */
import { assert, describe, it } from "@effect/vitest"
import { cruise, type IViolation } from "dependency-cruiser"
import extractDepcruiseConfig from "dependency-cruiser/config-utl/extract-depcruise-config"
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { stripTypeScriptTypes } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../..", import.meta.url))
const CRUISED = ["src", "schema", "cluster", "sandbox"]
/** Imported by the cruised code; copied so its imports resolve, not checked. */
const ALSO_COPIED = ["migrations"]

/** `import type {A}`, `import {type A}` and `export type {A} from` as plain imports and exports. */
const keepTypeImports = (source: string) =>
  source
    .replace(/\bimport\s+type\s+(?=[{*]|\w+\s+from\b)/g, "import ")
    .replace(/\bexport\s+type\s+(?=[{*])/g, "export ")
    .replace(/(\bimport\s*\{[^}]*\})/g, (clause) => clause.replace(/([{,]\s*)type\s+(?=\w)/g, "$1"))
    .replace(/(\bexport\s*\{[^}]*\}\s*from)/g, (clause) => clause.replace(/([{,]\s*)type\s+(?=\w)/g, "$1"))

const tsFiles = (folder: string) =>
  readdirSync(join(root, folder), { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .map((file) => join(folder, file))

const stripped = (copy: string, files: ReadonlyArray<string>) => {
  for (const file of files) {
    const target = join(copy, file)
    mkdirSync(dirname(target), { recursive: true })
    writeFileSync(target, stripTypeScriptTypes(keepTypeImports(readFileSync(join(root, file), "utf8"))))
  }
}

const describeViolation = (violation: IViolation) =>
  violation.cycle === undefined
    ? `${violation.rule.name}: ${violation.from} → ${violation.to}`
    : `${violation.rule.name}: ${[violation.from, ...violation.cycle.map((step) => step.name)].join(" → ")}`

describe("architecture", () => {
  it("the import rules hold", { timeout: 120_000 }, async () => {
    const config = await extractDepcruiseConfig(join(root, ".dependency-cruiser.mjs"))
    const copy = mkdtempSync(join(tmpdir(), "svc-architecture-"))
    try {
      const files = CRUISED.flatMap(tsFiles)
      stripped(copy, [...files, ...ALSO_COPIED.flatMap(tsFiles)])
      // src/platform/version.ts reads the version from it.
      writeFileSync(join(copy, "package.json"), readFileSync(join(root, "package.json")))
      const result = await cruise(files, {
        ...config.options,
        tsConfig: { fileName: join(root, "tsconfig.json") },
        baseDir: copy,
        validate: true,
        ruleSet: { forbidden: config.forbidden ?? [] }
      }, {
        // Without a TypeScript it supports, dependency-cruiser would not follow .ts files: parse them too.
        extensions: [".ts"]
      })
      assert.isObject(result.output)
      if (typeof result.output === "string") return
      const modules = result.output.modules
      // Every relative import resolved to a file: a miss would hide a dependency from the rules.
      const unresolved = modules.flatMap((module) =>
        module.dependencies.filter((dependency) => dependency.couldNotResolve && dependency.module.startsWith("."))
          .map((dependency) => `${module.source} → ${dependency.module}`)
      )
      assert.deepStrictEqual(unresolved, [])
      assert.isAbove(modules.filter((module) => module.source.startsWith("src/")).length, 100)
      const violations = [...new Set(result.output.summary.violations.map(describeViolation))].sort()
      assert.deepStrictEqual(violations, [], `${violations.length} violations:\n${violations.join("\n")}`)
    } finally {
      rmSync(copy, { recursive: true, force: true })
    }
  })
})
