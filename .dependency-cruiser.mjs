/**
 * Import rules of the house (issues 16 and 31), checked by test/unit/architecture.test.ts over
 * src/, schema/, cluster/ and sandbox/. A domain is a folder under src/ other than http/,
 * platform/, kernel/ and the composition root main/. The layers are read from src/README.md, so
 * the written direction and the enforced one are the same list.
 */
import { readFileSync } from "node:fs"

const DOMAIN = "^src/(?!http/|platform/|kernel/|main/)[^/]+/"
const REPOSITORY = "(^|/)(repo|[a-z-]+-repo)\\.ts$"

/** `N. \`folder/\`, ...` lines under `## Layers` in src/README.md, bottom first. */
const layers = (() => {
  const readme = readFileSync(new URL("./src/README.md", import.meta.url), "utf8")
  const section = readme.split(/^## /m).find((part) => part.startsWith("Layers")) ?? ""
  return section.split("\n").flatMap((line) => {
    const match = /^(\d+)\. (.+)$/.exec(line.trim())
    return match === null ? [] : [[...match[2].matchAll(/`([^`]+)`/g)].map((name) => name[1])]
  })
})()

const escape = (folder) => folder.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
const anyOf = (folders) => `^(${folders.map(escape).join("|")})`

/** A folder imports only folders of lower layers: nothing above it, nothing beside it. */
const layerRules = layers.map((folders, index) => ({
  name: "layers",
  comment: `src/README.md: ${folders.join(", ")} import only folders listed above them.`,
  severity: "error",
  from: { path: anyOf(folders) },
  to: { path: anyOf(layers.slice(index).flat()), pathNot: "^$1" }
}))

/** @type {import("dependency-cruiser").IConfiguration} */
export default {
  forbidden: [
    {
      name: "domain-core-imports-http",
      comment: "Only a domain's HTTP adapter (api.ts, handlers.ts, pages.ts, policies.ts) may import src/http/: services, repositories and the rest stay transport-free.",
      severity: "error",
      from: { path: DOMAIN, pathNot: "/(api|handlers|pages|policies)\\.ts$" },
      to: { path: "^src/http/" }
    },
    {
      name: "schema-standalone",
      comment: "schema/ is the wire contract: it imports nothing from src/ or cluster/.",
      severity: "error",
      from: { path: "^schema/" },
      to: { path: "^(src|cluster)/" }
    },
    {
      name: "platform-imports-no-domain",
      comment: "src/platform/ is infrastructure: no domain, no src/http/, no cluster/, no composition root.",
      severity: "error",
      from: { path: "^src/platform/" },
      to: { path: "^(src/(?!platform/)|cluster/)" }
    },
    ...layerRules,
    {
      name: "foreign-repository",
      comment: "A context calls another context's services, never its repository (the kernel's and platform's are shared).",
      severity: "error",
      from: { path: "^src/((?!main/)[^/]+)/" },
      to: { path: REPOSITORY, pathNot: "^src/($1|kernel|platform)/" }
    },
    {
      name: "repository-leaf",
      comment: "A repository imports no other repository: what composes several tables is a service.",
      severity: "error",
      from: { path: REPOSITORY },
      to: { path: REPOSITORY }
    },
    {
      name: "no-cycles",
      comment: "No import cycles, type-only imports included.",
      severity: "error",
      from: {},
      to: { circular: true }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" }
  }
}
