/**
 * Import rules of the house (issue 16), checked by test/unit/architecture.test.ts over src/,
 * schema/ and cluster/. A domain is a folder under src/ other than http/, platform/ and the
 * composition root main/.
 */
const DOMAIN = "^src/(?!http/|platform/|main/)[^/]+/"

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
