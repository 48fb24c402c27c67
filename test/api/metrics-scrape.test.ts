/**
 * `GET /metrics` as a scraper reads it (decision 0084, issue 30 item 7): from start-up, before
 * any traffic, the exposition parses, every family has HELP and TYPE, every family the runbook
 * names is there, and the known counter series stand at zero; a 429 then counts on the series
 * that was exported at zero.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { readFileSync } from "node:fs"
import { rateLimitedRoutes } from "../../src/main/metrics.ts"
import { exportedFamilies } from "../../src/platform/metrics.ts"
import { call, OPERATOR_TOKEN, serveApp, testSettings } from "../support/app.ts"
import { type Family, parseExposition } from "../support/prometheus.ts"
import { seedApiKey, seedProfile } from "../support/tenancy.ts"

const scrape = Effect.map(call("/metrics", { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } }), (response) => {
  assert.strictEqual(response.status, 200, response.text.slice(0, 500))
  assert.match(response.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/)
  return parseExposition(response.text)
})

/** The rows of the markdown table under `heading` in the runbook, as cells. */
const tableRows = (markdown: string, heading: string): ReadonlyArray<ReadonlyArray<string>> => {
  const section = markdown.split(/^## /m).find((part) => part.startsWith(`${heading}\n`)) ?? ""
  return section.split("\n").filter((line) => line.startsWith("| ") && !/^\|[-| ]+\|$/.test(line))
    .slice(1) // the header row
    .map((line) => line.split("|").slice(1, -1).map((cell) => cell.trim()))
}

const backticked = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map((match) => match[1] ?? "")

/**
 * The families docs/runbook.md names: the first column of its metrics table and the series its
 * alerts read (`name{...}`, a histogram's `_count`); what stands in parentheses (labels, remarks)
 * and the label names the table gives aside.
 */
const runbookFamilies = (): ReadonlyArray<string> => {
  const runbook = readFileSync(new URL("../../docs/runbook.md", import.meta.url), "utf8")
  const rows = tableRows(runbook, "Metrics").map((cells) => cells[0] ?? "")
  const listed = rows.flatMap((cell) => backticked(cell.replace(/\([^)]*\)/g, "")))
  // The label names, in parentheses after the names: an alert may say "by `db_operation_name`".
  const labels = new Set(rows.flatMap((cell) => [...cell.matchAll(/\(([^)]*)\)/g)].flatMap((match) => backticked(match[1] ?? ""))))
  const alerted = tableRows(runbook, "Alerts worth having").flatMap((cells) => backticked((cells[1] ?? "").replace(/\([^)]*\)/g, "")))
    .map((series) => series.replace(/\{.*$/, ""))
    .filter((name) => /^[a-z_][a-z0-9_]*$/.test(name) && !labels.has(name))
    .map((name) => name.replace(/_(count|sum|bucket)$/, (suffix) => listed.includes(name.slice(0, -suffix.length)) ? "" : suffix))
  return [...new Set([...listed, ...alerted])]
}

const valueOf = (family: Family | undefined, name: string, labels: Record<string, string>) =>
  family?.samples.find((sample) =>
    sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value)
  )?.value

layer(serveApp(testSettings()), { timeout: "60 seconds", excludeTestServices: true })("GET /metrics for a scraper", (it) => {
  it.effect("before any traffic: every family with HELP and TYPE, every family of the runbook, counters at zero", () =>
    Effect.gen(function*() {
      const families = yield* scrape
      for (const family of families.values()) {
        assert.isDefined(family.type, `${family.name} has no TYPE`)
        assert.isTrue((family.help ?? "").trim().length > 0, `${family.name} has no HELP`)
      }
      const named = runbookFamilies()
      console.info(`metrics scrape before traffic: ${families.size} families, each with HELP and TYPE; the runbook names ${named.length}, all present`)
      assert.isAtLeast(named.length, 15, named.join(", "))
      for (const name of named) {
        const family = families.get(name)
        assert.isDefined(family, `the runbook names ${name}; the scrape has ${[...families.keys()].join(", ")}`)
      }
      for (const known of exportedFamilies) {
        assert.strictEqual(families.get(known.name)?.type, known.type, known.name)
        assert.include(named, known.name, `${known.name} is exported but the runbook does not name it`)
      }
      // Counters of bounded labels at zero: one rate-limit series per route whose contract lists 429.
      const routes = rateLimitedRoutes()
      assert.include(routes, "/api/v1/conversions")
      const rejections = families.get("svc_rate_limit_rejections")
      assert.strictEqual(rejections?.type, "counter")
      assert.deepStrictEqual(
        rejections?.samples.map((sample) => sample.labels["http_route"]).sort(),
        [...routes].sort()
      )
      assert.isTrue(rejections?.samples.every((sample) => sample.value === 0))
      const commits = families.get("svc_recorder_commit_duration")
      for (const outcome of ["committed", "failed"]) {
        assert.strictEqual(valueOf(commits, "svc_recorder_commit_duration_count", { svc_outcome: outcome }), 0, outcome)
      }
      assert.strictEqual(valueOf(families.get("svc_recorder_batch_size"), "svc_recorder_batch_size_count", {}), 0)
      assert.isDefined(valueOf(families.get("effect_cluster_singletons"), "effect_cluster_singletons", {}))
    }))

  it.effect("a 429 counts on the route's series that was exported at zero", () =>
    Effect.gen(function*() {
      const before = valueOf((yield* scrape).get("svc_rate_limit_rejections"), "svc_rate_limit_rejections", { http_route: "/api/v1/conversions" })
      const profile = yield* seedProfile()
      const { key } = yield* seedApiKey(profile, { scopes: ["conversions:read"], rateLimitPerMinute: 1 })
      const statuses: Array<number> = []
      for (let i = 0; i < 2; i++) {
        statuses.push((yield* call("/api/v1/conversions", { headers: { authorization: `Bearer ${key}` } })).status)
      }
      assert.deepStrictEqual(statuses, [200, 429])
      const after = valueOf((yield* scrape).get("svc_rate_limit_rejections"), "svc_rate_limit_rejections", { http_route: "/api/v1/conversions" })
      assert.isDefined(before)
      assert.strictEqual(after, (before ?? 0) + 1)
    }))
})
