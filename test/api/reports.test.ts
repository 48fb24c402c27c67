/**
 * Reports (issue 21 part 8, decisions 0085, 0086) over real HTTP, the email sandbox served by the
 * app itself and connected through the real hand-off: create, list and the 422s; generate (the
 * CSV equals the analytics reads over the same range, the PDF's xref is exact and it holds the
 * figures); send (the sandbox mailbox holds the message with both attachments; 409 without an
 * email connection; Idempotency-Key replays); a due slot run once by two racing workers; 403
 * without the scope; the hub's capabilities agree with what the routes allow. Leases (decision
 * 0119): a run held by its holder's heartbeat is never taken, abandoned it is taken over within
 * 10 s (a send: failed `send_outcome_unknown`), and the old holder's fenced writes change nothing.
 */
import { assert, describe, layer } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { Duration, Effect, Fiber, Layer, Option } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { ReportsRepo } from "../../src/analytics/reports/repo.ts"
import { ReportRunLease } from "../../src/analytics/reports/service.ts"
import { defaultReportWorkerSettings, ReportWorker, ReportWorkerSettings } from "../../src/analytics/reports/worker.ts"
import { leaseSecondsOf, whileLeased } from "../../src/platform/lease.ts"
import { credit, drain, insertConversion, insertTouch } from "../support/analytics.ts"
import { call, TestServer } from "../support/app.ts"
import { driveConsent, serveAppOnOwnPort } from "../support/providers.ts"
import { holdFor, neverTaken, TAKEOVER_BOUND, takenWithin } from "../support/takeover.ts"
import { seedApiKey, seedMemberSession, seedProfile } from "../support/tenancy.ts"

const SCOPES = ["reports:write", "analytics:read", "connections:read", "connections:write"]

const bearer = (key: string, method = "GET", body?: unknown, headers: Record<string, string> = {}) => ({
  method,
  headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
  ...(body === undefined ? {} : { body: JSON.stringify(body) })
})

const raw = (path: string, key: string) =>
  Effect.flatMap(TestServer, ({ url }) =>
    Effect.promise(async () => {
      const response = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${key}` } })
      return { status: response.status, type: response.headers.get("content-type"), bytes: new Uint8Array(await response.arrayBuffer()) }
    }))

const newProfile = Effect.fn("test.newProfile")(function*(scopes: ReadonlyArray<string> = SCOPES) {
  const sql = yield* SqlClient
  const profile = yield* seedProfile()
  yield* sql`UPDATE profiles SET time_zone = 'UTC', currency = 'EUR' WHERE id = ${profile.profileId}`
  const { key } = yield* seedApiKey(profile, { scopes, rateLimitPerMinute: 10_000 })
  return { profile, key }
})

const connectEmail = Effect.fn("test.connectEmail")(function*(key: string) {
  const { url } = yield* TestServer
  const minted = yield* call("/api/v1/connections/email/handoff", bearer(key, "POST", { return_url: `${url}/done` }))
  assert.strictEqual(minted.status, 201, minted.text)
  const consent = yield* driveConsent(minted.json.data.start_url)
  assert.strictEqual(consent.status, 303)
  yield* Effect.promise(() => fetch(consent.location ?? "", { redirect: "manual" }).then((r) => r.text()))
  const list = yield* call("/api/v1/connections", bearer(key))
  const connection = list.json.data.find((c: { provider: string }) => c.provider === "email")
  assert.isDefined(connection, list.text)
  return connection as { id: string }
})

/** Two days of figures: touches, cash conversions credited last-touch. */
const seedFigures = Effect.fn("test.seedFigures")(function*(profileId: string) {
  const t1 = yield* insertTouch(profileId, { at: "2026-03-02T10:00:00Z", channel: "paid_social" })
  const t2 = yield* insertTouch(profileId, { at: "2026-03-03T10:00:00Z", channel: "=HYPERLINK(\"x\")" })
  const c1 = yield* insertConversion(profileId, { at: "2026-03-02T12:00:00Z", key: "sale", value: "120.5", currency: "EUR", cash: true, first: true })
  const c2 = yield* insertConversion(profileId, { at: "2026-03-03T12:00:00Z", key: "sale", value: "80", currency: "EUR", cash: true })
  yield* credit(c1.id, "last_touch", t1, "1")
  yield* credit(c2.id, "last_touch", t2, "1")
  yield* drain
})

const RANGE = { start: "2026-03-01", end: "2026-03-04" }

/** The CSV's records, parsed per RFC 4180. */
const parseCsv = (text: string): Array<Array<string>> => {
  const rows: Array<Array<string>> = []
  let row: Array<string> = []
  let field = ""
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]
    if (quoted) {
      if (ch === "\"" && text[i + 1] === "\"") {
        field += "\""
        i++
      } else if (ch === "\"") quoted = false
      else field += ch
    } else if (ch === "\"") quoted = true
    else if (ch === ",") {
      row.push(field)
      field = ""
    } else if (ch === "\r" && text[i + 1] === "\n") {
      row.push(field)
      rows.push(row)
      row = []
      field = ""
      i++
    } else field += ch
  }
  return rows
}

/** Every xref entry points at `N 0 obj`, startxref at `xref`; answers the text shown by the content streams. */
const checkPdf = (bytes: Uint8Array): string => {
  const text = Buffer.from(bytes).toString("latin1")
  assert.isTrue(text.startsWith("%PDF-1.4"))
  assert.isTrue(text.trimEnd().endsWith("%%EOF"))
  const startxref = Number(/startxref\n(\d+)\n%%EOF/.exec(text)?.[1])
  assert.strictEqual(text.slice(startxref, startxref + 4), "xref")
  const [, first, count] = /xref\n(\d+) (\d+)\n/.exec(text.slice(startxref)) ?? []
  assert.strictEqual(first, "0")
  const entries = text.slice(startxref).split("\n").slice(2, 2 + Number(count))
  entries.slice(1).forEach((entry, i) => {
    assert.match(entry, /^\d{10} 00000 n $/)
    const offset = Number(entry.slice(0, 10))
    assert.strictEqual(text.slice(offset, offset + `${i + 1} 0 obj`.length), `${i + 1} 0 obj`)
  })
  for (const match of text.matchAll(/<< \/Length (\d+) >>\nstream\n/g)) {
    const start = (match.index ?? 0) + match[0].length
    assert.strictEqual(text.slice(start + Number(match[1]), start + Number(match[1]) + 10), "\nendstream")
  }
  return [...text.matchAll(/\(((?:\\.|[^\\)])*)\) Tj/g)].map((m) => (m[1] ?? "").replace(/\\(.)/g, "$1")).join(" ")
}

/** The text poppler's pdftotext reads from the PDF, when the machine has it (it checks the file independently of our parser). */
const popplerText = (bytes: Uint8Array): string | undefined => {
  const probe = spawnSync("pdftotext", ["-v"])
  if (probe.error !== undefined) return undefined
  const result = spawnSync("pdftotext", ["-layout", "-", "-"], { input: bytes })
  assert.strictEqual(result.status, 0, String(result.stderr))
  assert.strictEqual(String(result.stderr), "", "pdftotext reported a problem")
  return String(result.stdout)
}

/** The messages of the key's profile's mail sandbox world (decision 0109). */
const sandboxMessages = (key: string) =>
  Effect.map(call("/sandbox/email/_state", { headers: { authorization: `Bearer ${key}` } }), (r) => {
    assert.strictEqual(r.status, 200, r.text)
    return r.json.messages as Array<Record<string, any>>
  })

const workerOff = Layer.succeed(ReportWorkerSettings)({ ...defaultReportWorkerSettings, enabled: false })

layer(serveAppOnOwnPort().pipe(Layer.provide(workerOff)), { timeout: "120 seconds", excludeTestServices: true })("reports", (it) => {
  describe("create and list", () => {
    it.effect("creates with defaults resolved, lists it; each bad field is 422 naming it and writes nothing", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfile()
        const created = yield* call("/api/v1/reports", bearer(key, "POST", {
          name: "Weekly", reads: ["overview", "breakdown:channel"], range: "last_7_days",
          schedule: { frequency: "weekly", weekday: "monday", hour: 9 }, recipients: ["boss@example.com"]
        }))
        assert.strictEqual(created.status, 201, created.text)
        const report = created.json.data
        assert.deepStrictEqual(report.filters, { model: "last_touch", channel: null, campaign: null, ad_set: null, ad: null, conversion_key: null })
        assert.deepStrictEqual(report.schedule, { frequency: "weekly", hour: 9, weekday: "monday", day_of_month: null })
        const next = new Date(report.next_run_at)
        assert.deepStrictEqual([next.getUTCDay(), next.getUTCHours(), next.getUTCMinutes()], [1, 9, 0])
        assert.isTrue(next.getTime() > Date.now() && next.getTime() <= Date.now() + 7 * 86_400_000)

        const bad: ReadonlyArray<readonly [unknown, string]> = [
          [{ name: "", reads: ["overview"], range: "last_7_days" }, "name"],
          [{ name: "x", reads: ["nope"], range: "last_7_days" }, "reads[0]"],
          [{ name: "x", reads: ["overview"], range: "last_year" }, "range"],
          [{ name: "x", reads: ["overview"], range: { start: "2026-02-30", end: "2026-03-01" } }, "range.start"],
          [{ name: "x", reads: ["overview"], range: "today", filters: { channel: "a", campaign: "b" } }, "filters.campaign"],
          [{ name: "x", reads: ["overview"], range: "today", filters: { model: "magic" } }, "filters.model"],
          [{ name: "x", reads: ["overview"], range: "today", schedule: { frequency: "weekly", hour: 9 }, recipients: ["a@b.example"] }, "schedule.weekday"],
          [{ name: "x", reads: ["overview"], range: "today", schedule: { frequency: "daily", hour: 24 }, recipients: ["a@b.example"] }, "schedule.hour"],
          [{ name: "x", reads: ["overview"], range: "today", schedule: { frequency: "daily", hour: 8 } }, "recipients"],
          [{ name: "x", reads: ["overview"], range: "today", recipients: ["not-an-address"] }, "recipients[0]"]
        ]
        for (const [body, field] of bad) {
          const refused = yield* call("/api/v1/reports", bearer(key, "POST", body))
          assert.strictEqual(refused.status, 422, `${field}: ${refused.text}`)
          assert.strictEqual(refused.json.error.code, "validation_error")
          assert.strictEqual(refused.json.error.reason, `invalid_field:${field}`)
        }
        const sql = yield* SqlClient
        const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM reports WHERE profile_id = ${profile.profileId}`
        assert.strictEqual(count?.n, 1)
        const listed = yield* call("/api/v1/reports", bearer(key))
        assert.strictEqual(listed.status, 200, listed.text)
        assert.deepStrictEqual(listed.json.data.map((r: { id: string }) => r.id), [report.id])
      }))

    it.effect("403 insufficient_scope without reports:write; the hub's capabilities agree with the routes", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfile(["analytics:read"])
        const refused = yield* call("/api/v1/reports", bearer(key, "POST", { name: "x", reads: ["overview"], range: "today" }))
        assert.strictEqual(refused.status, 403, refused.text)
        assert.strictEqual(refused.json.error.code, "insufficient_scope")
        assert.strictEqual((yield* call("/api/v1/reports", bearer(key))).status, 403)

        const body = JSON.stringify({ name: "x", reads: ["overview"], range: "today" })
        const hub = `/api/v1/workspaces/${profile.workspaceId}/reports/hub`
        for (const [role, allowed] of [["owner", true], ["analyst", false]] as const) {
          const person = yield* seedMemberSession(profile, role)
          const capabilities = (yield* call(hub, { headers: person.headers })).json.data.capabilities
          assert.deepStrictEqual(capabilities, { can_edit: allowed, can_apply: allowed })
          const made = yield* call(`/api/v1/reports?profile_id=${profile.profileId}`, {
            method: "POST",
            headers: { ...person.headers, "content-type": "application/json" },
            body
          })
          assert.strictEqual(made.status, allowed ? 201 : 403, `${role}: ${made.text}`)
        }
      }))
  })

  describe("generate and send", () => {
    it.effect("generate: the CSV equals the timeseries and overview reads over the range; the PDF is valid and shows the figures", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfile()
        yield* seedFigures(profile.profileId)
        const created = yield* call("/api/v1/reports", bearer(key, "POST", {
          name: "March (=risky)", reads: ["overview", "timeseries", "breakdown:channel"], range: RANGE
        }))
        assert.strictEqual(created.status, 201, created.text)
        const generated = yield* call(`/api/v1/reports/${created.json.data.id}/generate`, bearer(key, "POST"))
        assert.strictEqual(generated.status, 201, generated.text)
        const run = generated.json.data
        assert.strictEqual(run.status, "generated")
        assert.deepStrictEqual(run.range, RANGE)

        const csvFile = yield* raw(run.csv.url, key)
        assert.strictEqual(csvFile.status, 200)
        assert.match(csvFile.type ?? "", /^text\/csv/)
        assert.strictEqual(csvFile.bytes.length, run.csv.bytes)
        const rows = parseCsv(Buffer.from(csvFile.bytes).toString("utf8"))
        assert.deepStrictEqual(rows[0], ["section", "key", "metric", "value"])
        const series = yield* call(`/api/v1/timeseries?start=${RANGE.start}&end=${RANGE.end}`, bearer(key))
        assert.strictEqual(series.status, 200, series.text)
        const expected = series.json.data.flatMap((d: Record<string, any>) =>
          ["outcomes", "cash_payments", "first_payments", "credited_conversions", "revenue", "spend"].map((m) =>
            ["timeseries", d.date, m, d[m] === null ? "" : String(d[m])]))
        assert.deepStrictEqual(rows.filter((r) => r[0] === "timeseries"), expected)
        const overview = (yield* call(`/api/v1/overview?start=${RANGE.start}&end=${RANGE.end}`, bearer(key))).json.data.current
        assert.strictEqual(overview.revenue, "200.5")
        assert.deepStrictEqual(rows.find((r) => r[0] === "overview" && r[2] === "current" && r[1] === "revenue"), ["overview", "revenue", "current", "200.5"])
        // A caller-controlled value that looks like a formula is defused.
        assert.isTrue(rows.some((r) => r[0] === "breakdown:channel" && r[1] === "paid_social"))
        assert.isTrue(rows.some((r) => r[0] === "breakdown:channel" && r[1] === "'=HYPERLINK(\"x\")"), JSON.stringify(rows))

        const pdfFile = yield* raw(run.pdf.url, key)
        assert.strictEqual(pdfFile.status, 200)
        assert.strictEqual(pdfFile.type, "application/pdf")
        const shown = checkPdf(pdfFile.bytes)
        for (const figure of ["March (=risky)", "2026-03-02", "120.5", "80", "200.5", "paid_social"]) assert.include(shown, figure)
        const poppler = popplerText(pdfFile.bytes)
        if (poppler !== undefined) {
          for (const figure of ["March (=risky)", "2026-03-02", "120.5", "200.5", "paid_social"]) assert.include(poppler, figure)
        }

        // Another profile's key sees nothing of it.
        const other = yield* newProfile()
        assert.strictEqual((yield* raw(run.csv.url, other.key)).status, 404)
        assert.strictEqual((yield* call(`/api/v1/reports/${created.json.data.id}/generate`, bearer(other.key, "POST"))).status, 404)
      }))

    it.effect("send: 409 without an email connection; then the mailbox gets CSV and PDF attached, once per Idempotency-Key", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfile()
        yield* seedFigures(profile.profileId)
        const created = yield* call("/api/v1/reports", bearer(key, "POST", {
          name: "Sent", reads: ["overview"], range: RANGE, recipients: ["cfo@example.com"]
        }))
        const path = `/api/v1/reports/${created.json.data.id}/send`
        const unconnected = yield* call(path, bearer(key, "POST", {}))
        assert.strictEqual(unconnected.status, 409, unconnected.text)
        assert.deepStrictEqual([unconnected.json.error.code, unconnected.json.error.reason], ["invalid_state", "email_connection_required"])

        yield* connectEmail(key)
        const before = (yield* sandboxMessages(key)).length
        const idem = { "idempotency-key": crypto.randomUUID() }
        const sent = yield* call(path, bearer(key, "POST", {}, idem))
        assert.strictEqual(sent.status, 201, sent.text)
        assert.strictEqual(sent.json.data.status, "sent")
        assert.deepStrictEqual(sent.json.data.recipients, ["cfo@example.com"])
        const again = yield* call(path, bearer(key, "POST", {}, idem))
        assert.strictEqual(again.status, 201)
        assert.strictEqual(again.json.data.id, sent.json.data.id)
        const messages = (yield* sandboxMessages(key)).slice(before)
        assert.strictEqual(messages.length, 1)
        const message = messages[0] ?? {}
        assert.strictEqual(message.id, sent.json.data.message_id)
        assert.deepStrictEqual(message.to, ["cfo@example.com"])
        assert.strictEqual(message.content_type, "multipart/mixed")
        const attachments = message.attachments as Array<{ filename: string; content_type: string; content_base64: string }>
        assert.deepStrictEqual(attachments.map((a) => a.content_type), ["text/csv; charset=utf-8", "application/pdf"])
        assert.include(Buffer.from(attachments[0]?.content_base64 ?? "", "base64").toString("utf8"), "overview,revenue,current,200.5")
        assert.include(checkPdf(new Uint8Array(Buffer.from(attachments[1]?.content_base64 ?? "", "base64"))), "200.5")
        // A run already sent is not sent again.
        const resend = yield* call(path, bearer(key, "POST", { run_id: sent.json.data.id }))
        assert.strictEqual(resend.status, 409, resend.text)
        assert.strictEqual(resend.json.error.reason, "run_not_sendable")
      }))
  })

  describe("refusals and takeovers", () => {
    it.effect("a mailbox refusal answers its code and leaves the run generated; it is sent by run_id once the mailbox is back", () =>
      Effect.gen(function*() {
        const { key } = yield* newProfile()
        yield* connectEmail(key)
        const created = yield* call("/api/v1/reports", bearer(key, "POST", { name: "Refused", reads: ["overview"], range: "today", recipients: ["a@example.com"] }))
        const path = `/api/v1/reports/${created.json.data.id}/send`
        const patch = (state: string) =>
          call("/sandbox/email/_state", {
            method: "PATCH",
            headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
            body: JSON.stringify({ objects: [{ id: "em_mbx_0001", state }] })
          })
        const suspended = yield* patch("suspended")
        assert.strictEqual(suspended.status, 200, suspended.text)
        const refused = yield* call(path, bearer(key, "POST", {})).pipe(Effect.ensuring(patch("active")))
        assert.strictEqual(refused.status, 403, refused.text)
        assert.deepStrictEqual([refused.json.error.code, refused.json.error.provider], ["account_suspended", "email"])
        const sql = yield* SqlClient
        const [run] = yield* sql<{ id: string; status: string }>`SELECT id, status FROM report_runs WHERE report_id = ${created.json.data.id}`
        assert.strictEqual(run?.status, "generated")
        const health = Effect.map(call("/api/v1/connections", bearer(key)), (r) =>
          r.json.data.filter((c: { provider: string }) => c.provider === "email").map((c: Record<string, unknown>) => [c.status, c.status_reason]))
        assert.deepStrictEqual(yield* health, [["needs_action", "account_suspended"]])
        const sent = yield* call(path, bearer(key, "POST", { run_id: run?.id, recipients: ["b@example.com"] }))
        assert.strictEqual(sent.status, 201, sent.text)
        assert.deepStrictEqual(yield* health, [["active", null]])
        assert.deepStrictEqual([sent.json.data.id, sent.json.data.status, sent.json.data.recipients], [run?.id, "sent", ["b@example.com"]])
        const unknownRun = yield* call(path, bearer(key, "POST", { run_id: "not-a-run" }))
        assert.deepStrictEqual([unknownRun.status, unknownRun.json.error.code], [404, "not_found"])
        const bad = yield* call(path, bearer(key, "POST", { recipients: ["nope"] }))
        assert.deepStrictEqual([bad.status, bad.json.error.reason], [422, "invalid_field:recipients[0]"])
      }))

    it.effect("a dead worker's run is taken over; one that died while sending is failed, never sent again", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfile()
        yield* connectEmail(key)
        const created = yield* call("/api/v1/reports", bearer(key, "POST", {
          name: "Takeover", reads: ["overview"], range: "today", schedule: { frequency: "daily", hour: 3 }, recipients: ["c@example.com"]
        }))
        const id: string = created.json.data.id
        const sql = yield* SqlClient
        const stalled = crypto.randomUUID()
        const cut = crypto.randomUUID()
        yield* sql`
          INSERT INTO report_runs (id, report_id, profile_id, trigger, slot, status, attempts, lease_until) VALUES
            (${stalled}, ${id}, ${profile.profileId}, 'scheduled', now() - interval '2 days', 'running', 1, now() - interval '1 second'),
            (${cut}, ${id}, ${profile.profileId}, 'scheduled', now() - interval '1 day', 'sending', 1, now() - interval '1 second')`
        const before = (yield* sandboxMessages(key)).length
        yield* (yield* ReportWorker).runOnce
        const runs = yield* sql<{ id: string; status: string; error: string | null; attempts: number }>`
          SELECT id, status, error, attempts FROM report_runs WHERE report_id = ${id}`
        const byId = new Map(runs.map((r) => [r.id, r]))
        assert.deepStrictEqual(byId.get(stalled), { id: stalled, status: "sent", error: null, attempts: 2 })
        assert.deepStrictEqual(byId.get(cut), { id: cut, status: "failed", error: "send_outcome_unknown", attempts: 1 })
        const messages = (yield* sandboxMessages(key)).slice(before).filter((m) => String(m.subject).startsWith("Takeover"))
        assert.strictEqual(messages.length, 1)
      }))

    it.effect("a run held by its heartbeat stays its holder's; abandoned, the next claim takes it within 10 s; the old holder writes nothing", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfile()
        const created = yield* call("/api/v1/reports", bearer(key, "POST", { name: "Lease", reads: ["overview"], range: "today" }))
        assert.strictEqual(created.status, 201, created.text)
        const sql = yield* SqlClient
        const repo = yield* ReportsRepo
        const runId = crypto.randomUUID()
        // Queued before anything else: the claims below get this run first.
        yield* sql`
          INSERT INTO report_runs (id, report_id, profile_id, trigger, status, created_at)
          VALUES (${runId}, ${created.json.data.id}, ${profile.profileId}, 'manual', 'pending', '1999-01-01T00:00:00Z')`
        const lease = yield* ReportRunLease
        const leaseSeconds = leaseSecondsOf(lease)
        const claimOurs = Effect.map(repo.claim(leaseSeconds, defaultReportWorkerSettings.maxAttempts), Option.filter((run) => run.id === runId))
        const first = Option.getOrThrow(yield* claimOurs)
        assert.strictEqual(first.attempts, 1)

        // The service's own wrapping of a run being generated; the work here only waits.
        const holder = yield* Effect.forkChild(whileLeased(runId, lease, repo.renew(profile.profileId, runId, first.attempts, "running", leaseSeconds))(Effect.never))
        yield* neverTaken(Effect.map(claimOurs, Option.isSome), holdFor(lease), "the report run")
        // The holder dies: no more renewals.
        yield* Fiber.interrupt(holder)
        const took = yield* takenWithin(Effect.map(claimOurs, Option.isSome), "the report run taken over")
        console.log(`report run taken over ${took} ms after the last heartbeat stopped (lease ${Duration.format(lease)})`)
        assert.isBelow(took, Duration.toMillis(TAKEOVER_BOUND))

        // The first holder learns the run is another attempt's; each of its writes changes nothing.
        assert.isFalse(yield* repo.renew(profile.profileId, runId, first.attempts, "running", leaseSeconds))
        assert.isFalse(yield* repo.markGenerated(runId, first.attempts, { rangeStart: "2026-03-01", rangeEnd: "2026-03-01", csv: "stale", pdf: new Uint8Array([1]) }))
        yield* repo.markFailed(runId, first.attempts, "running", "stale_holder")
        yield* repo.failOpen(runId, first.attempts, "stale_holder")
        const [row] = yield* sql<{ status: string; attempts: number; error: string | null; csv: string | null; leased: boolean }>`
          SELECT status, attempts, error, csv, lease_until > now() AS leased FROM report_runs WHERE id = ${runId}`
        assert.deepStrictEqual(row, { status: "running", attempts: 2, error: null, csv: null, leased: true })
        // The taker's own writes do land.
        assert.isTrue(yield* repo.markGenerated(runId, 2, { rangeStart: "2026-03-01", rangeEnd: "2026-03-01", csv: "fresh", pdf: new Uint8Array([1]) }))
      }).pipe(Effect.provide(ReportsRepo.layer)))

    it.effect("a send held by its heartbeat stays its sender's; abandoned, it is failed send_outcome_unknown within 10 s; the late result writes nothing", () =>
      Effect.gen(function*() {
        const { key, profile } = yield* newProfile()
        const created = yield* call("/api/v1/reports", bearer(key, "POST", { name: "Lease send", reads: ["overview"], range: "today" }))
        assert.strictEqual(created.status, 201, created.text)
        const sql = yield* SqlClient
        const repo = yield* ReportsRepo
        const runId = crypto.randomUUID()
        yield* sql`
          INSERT INTO report_runs (id, report_id, profile_id, trigger, status, attempts, range_start, range_end, csv, pdf_base64, generated_at)
          VALUES (${runId}, ${created.json.data.id}, ${profile.profileId}, 'manual', 'generated', 1, '2026-03-01', '2026-03-01', 'x', 'AQ==', now())`
        const lease = yield* ReportRunLease
        const leaseSeconds = leaseSecondsOf(lease)
        assert.isTrue(yield* repo.markSending(runId, 1, ["lease@example.com"], leaseSeconds))
        // Every claim first fails the sends whose lease ran out: while renewed, this one is not.
        const failedByClaim = Effect.gen(function*() {
          yield* repo.claim(leaseSeconds, defaultReportWorkerSettings.maxAttempts)
          const [row] = yield* sql<{ status: string }>`SELECT status FROM report_runs WHERE id = ${runId}`
          return row?.status === "failed"
        })
        const sender = yield* Effect.forkChild(whileLeased(runId, lease, repo.renew(profile.profileId, runId, 1, "sending", leaseSeconds))(Effect.never))
        yield* neverTaken(failedByClaim, holdFor(lease), "the send")
        yield* Fiber.interrupt(sender)
        const took = yield* takenWithin(failedByClaim, "the cut-short send failed")
        console.log(`report send failed as unknown ${took} ms after the last heartbeat stopped (lease ${Duration.format(lease)})`)
        assert.isBelow(took, Duration.toMillis(TAKEOVER_BOUND))

        // The sender's late answer records nothing: the run stays failed, never sendable again.
        assert.isFalse(yield* repo.renew(profile.profileId, runId, 1, "sending", leaseSeconds))
        assert.isFalse(yield* repo.markSent(runId, 1, "late-message"))
        yield* repo.markFailed(runId, 1, "sending", "provider_throttled", "generated")
        assert.isFalse(yield* repo.markSending(runId, 1, ["lease@example.com"], leaseSeconds))
        const [row] = yield* sql<{ status: string; error: string | null; message_id: string | null; sent_at: Date | null }>`
          SELECT status, error, message_id, sent_at FROM report_runs WHERE id = ${runId}`
        assert.deepStrictEqual(row, { status: "failed", error: "send_outcome_unknown", message_id: null, sent_at: null })
      }).pipe(Effect.provide(ReportsRepo.layer)))
  })

  describe("schedule", () => {
    it.effect("a due slot runs once, sent to the recipients, even with two workers racing; the next slot is set", () =>
      Effect.gen(function*() {
        const { key } = yield* newProfile()
        yield* connectEmail(key)
        const created = yield* call("/api/v1/reports", bearer(key, "POST", {
          name: "Daily", reads: ["overview"], range: "yesterday", schedule: { frequency: "daily", hour: 6 }, recipients: ["team@example.com"]
        }))
        assert.strictEqual(created.status, 201, created.text)
        const id: string = created.json.data.id
        const sql = yield* SqlClient
        const slot = new Date(Date.now() - 60_000)
        yield* sql`UPDATE reports SET next_run_at = ${slot.toISOString()}::timestamptz WHERE id = ${id}`
        const before = (yield* sandboxMessages(key)).length
        const worker = yield* ReportWorker
        yield* Effect.all([worker.runOnce, worker.runOnce], { concurrency: 2 })
        yield* worker.runOnce
        const runs = yield* sql<{ status: string; trigger: string; slot: Date }>`SELECT status, trigger, slot FROM report_runs WHERE report_id = ${id}`
        assert.deepStrictEqual(runs.map((r) => [r.status, r.trigger]), [["sent", "scheduled"]])
        const messages = (yield* sandboxMessages(key)).slice(before).filter((m) => String(m.subject).startsWith("Daily"))
        assert.strictEqual(messages.length, 1)
        assert.deepStrictEqual(messages[0]?.to, ["team@example.com"])
        const [report] = yield* sql<{ next: Date }>`SELECT next_run_at AS next FROM reports WHERE id = ${id}`
        const next = new Date(report?.next ?? 0)
        assert.isTrue(next.getTime() > Date.now())
        assert.strictEqual(next.getUTCHours(), 6)
      }))
  })
})
