/**
 * Reports (issue 33): the profile's saved reports (GET /api/v1/reports), a new one saved
 * (POST /api/v1/reports), one generated now (POST /api/v1/reports/{id}/generate) and its CSV and
 * PDF downloaded from the run's own download operations. A download is fetched with the session
 * and saved through a Blob URL, so a refusal shows its message instead of landing as the file.
 * Each report lists its past runs, newest first (GET /api/v1/reports/{id}/runs, ten at a time,
 * "Show older runs" for the rest), a run generated here joining the top (decision 0134).
 */
import { useEffect, useState } from "preact/hooks"
import { CREDIT_MODELS, downloadFile, type MyProfile, request, SignedOut } from "./client.ts"
import { modelLabel } from "./format.ts"
import { ErrorPanel, useFocusHeading } from "./ui.tsx"
import "./screens.css"

interface Report {
  readonly id: string
  readonly name: string
  readonly reads: ReadonlyArray<string>
  readonly range: string | { readonly start: string; readonly end: string }
  readonly filters: { readonly model: string }
  readonly schedule: { readonly frequency: string; readonly hour: number } | null
  readonly next_run_at: string | null
  readonly created_at: string
}

interface Artifact {
  readonly content_type: string
  readonly bytes: number
  readonly url: string
}

interface ReportRun {
  readonly id: string
  readonly report_id: string
  readonly trigger: "manual" | "scheduled"
  readonly status: string
  readonly range: { readonly start: string; readonly end: string } | null
  readonly csv: Artifact | null
  readonly pdf: Artifact | null
  readonly error: string | null
  readonly created_at: string
  readonly generated_at: string | null
}

interface RunPage {
  readonly data: ReadonlyArray<ReportRun>
  readonly pagination: { readonly has_next: boolean; readonly cursor: string | null }
}

/** A run without files yet, or that failed before them. */
const RUN_STATUS: Record<string, string> = { pending: "Queued", running: "Generating since", failed: "Failed" }

/** Past runs shown at once; older ones on request. */
const RUNS_PAGE = 10

const when = (iso: string) => new Intl.DateTimeFormat("en", { dateStyle: "medium", timeStyle: "short" }).format(new Date(iso))

const RANGES: ReadonlyArray<readonly [string, string]> = [
  ["last_7_days", "Last 7 days"],
  ["last_30_days", "Last 30 days"],
  ["month_to_date", "Month to date"],
  ["last_month", "Last month"],
  ["yesterday", "Yesterday"],
  ["today", "Today"]
]

const READS: ReadonlyArray<readonly [string, string]> = [
  ["overview", "Overview"],
  ["timeseries", "By day"],
  ["breakdown:channel", "By channel"],
  ["breakdown:utm_campaign", "By UTM campaign"]
]

const rangeLabel = (range: Report["range"]) =>
  typeof range === "string" ? RANGES.find(([value]) => value === range)?.[1] ?? range : `${range.start} to ${range.end}`

const readLabel = (read: string) =>
  READS.find(([value]) => value === read)?.[1] ?? (read.startsWith("breakdown:") ? `By ${read.slice("breakdown:".length).replace(/_/g, " ")}` : read)

const bytes = (count: number) => (count < 1024 ? `${count} B` : `${(count / 1024).toFixed(1)} KB`)

/** The download operation's path under /api/v1 (the run answers the full path). */
const apiPath = (url: string) => (url.startsWith("/api/v1/") ? url.slice("/api/v1".length) : url)

const safeName = (name: string) => name.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "") || "report"

const NewReport = ({ profile, onCreated }: { readonly profile: MyProfile; readonly onCreated: (report: Report) => void }) => {
  const [name, setName] = useState("")
  const [range, setRange] = useState("last_30_days")
  const [model, setModel] = useState("last_touch")
  const [reads, setReads] = useState<ReadonlyArray<string>>(["overview", "breakdown:channel"])
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(null)

  const submit = async (event: Event) => {
    event.preventDefault()
    setBusy(true)
    setError(null)
    try {
      const answer = await request<{ readonly data: Report }>("/reports", {
        method: "POST",
        query: { profile_id: profile.profile_id },
        body: { name: name.trim(), reads, range, filters: { model } }
      })
      setName("")
      onCreated(answer.data)
    } catch (failure) {
      if (!(failure instanceof SignedOut)) setError(failure)
    } finally {
      setBusy(false)
    }
  }

  return (
    <form class="new-report" aria-labelledby="new-report-heading" onSubmit={submit}>
      <h2 id="new-report-heading">New report</h2>
      {error !== null && <ErrorPanel error={error} title="The report could not be saved" />}
      <div class="controls">
        <label>
          Name
          <input id="report-name" type="text" required maxLength={200} value={name} onInput={(event) => setName(event.currentTarget.value)} />
        </label>
        <label>
          Range
          <select id="report-range" value={range} onChange={(event) => setRange(event.currentTarget.value)}>
            {RANGES.map(([value, label]) => <option key={value} value={value}>{label}</option>)}
          </select>
        </label>
        <label>
          Credit model
          <select id="report-model" value={model} onChange={(event) => setModel(event.currentTarget.value)}>
            {CREDIT_MODELS.map((known) => <option key={known} value={known}>{modelLabel(known)}</option>)}
          </select>
        </label>
      </div>
      <fieldset class="reads">
        <legend>Contents</legend>
        {READS.map(([value, label]) => (
          <label key={value} class="check">
            <input type="checkbox" name="reads" value={value} checked={reads.includes(value)}
              onChange={(event) => {
                const checked = event.currentTarget.checked
                setReads((current) => (checked ? [...current.filter((read) => read !== value), value] : current.filter((read) => read !== value)))
              }} />
            {label}
          </label>
        ))}
      </fieldset>
      <button type="submit" class="primary" id="report-save" disabled={busy || reads.length === 0}>{busy ? "Saving…" : "Save report"}</button>
    </form>
  )
}

const RunFiles = ({ profile, report, run }: { readonly profile: MyProfile; readonly report: Report; readonly run: ReportRun }) => {
  const [error, setError] = useState<unknown>(null)
  const [saving, setSaving] = useState<string | null>(null)
  const save = async (event: MouseEvent, artifact: Artifact, kind: "csv" | "pdf") => {
    // A plain click is fetched here (a refusal shows); a modified one opens the link as the browser would.
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
    event.preventDefault()
    setSaving(kind)
    setError(null)
    try {
      await downloadFile(apiPath(artifact.url), { profile_id: profile.profile_id }, `${safeName(report.name)}-${run.range?.end ?? run.id}.${kind}`)
    } catch (failure) {
      if (!(failure instanceof SignedOut)) setError(failure)
    } finally {
      setSaving(null)
    }
  }
  const link = (artifact: Artifact | null, kind: "csv" | "pdf") =>
    artifact === null
      ? <span class="muted">No {kind.toUpperCase()}</span>
      : (
        <a class="download" id={`download-${kind}-${run.id}`} data-kind={kind}
          href={`${artifact.url}?profile_id=${encodeURIComponent(profile.profile_id)}`}
          onClick={(event) => void save(event, artifact, kind)} aria-busy={saving === kind}>
          Download {kind.toUpperCase()} <span class="muted small">({bytes(artifact.bytes)})</span>
        </a>
      )
  return (
    <div class="run" data-run-id={run.id} data-run-status={run.status}>
      <p>
        {run.generated_at === null
          ? `${RUN_STATUS[run.status] ?? run.status} ${when(run.created_at)}`
          : `Generated ${when(run.generated_at)}`}
        <span class="muted small"> · {run.trigger === "scheduled" ? "scheduled" : "on demand"}{run.status === "sent" ? ", sent by email" : ""}</span>
        {run.range !== null && <span class="muted small"> · {run.range.start} to {run.range.end}</span>}
        {run.error !== null && <span class="muted small"> · {run.error}</span>}
      </p>
      <p class="downloads">{link(run.csv, "csv")} {link(run.pdf, "pdf")}</p>
      {error !== null && <ErrorPanel error={error} title="The download failed" />}
    </div>
  )
}

const ReportItem = ({ profile, report }: { readonly profile: MyProfile; readonly report: Report }) => {
  const [runs, setRuns] = useState<ReadonlyArray<ReportRun>>([])
  /** Where the next older page starts; null once the oldest run is shown, undefined while the first page loads. */
  const [older, setOlder] = useState<string | null | undefined>(undefined)
  const [loadingOlder, setLoadingOlder] = useState(false)
  const [runsError, setRunsError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(null)

  const readRuns = (cursor: string | null) =>
    request<RunPage>(`/reports/${encodeURIComponent(report.id)}/runs`, {
      query: { profile_id: profile.profile_id, limit: RUNS_PAGE, ...(cursor === null ? {} : { cursor }) }
    })
  const nextOf = (page: RunPage) => (page.pagination.has_next ? page.pagination.cursor : null)

  useEffect(() => {
    let current = true
    readRuns(null).then(
      (page) => {
        if (!current) return
        // A run generated while the page loaded is already at the top.
        setRuns((shown) => [...shown, ...page.data.filter((run) => !shown.some((known) => known.id === run.id))])
        setOlder(nextOf(page))
      },
      (failure: unknown) => {
        if (current && !(failure instanceof SignedOut)) setRunsError(failure)
      }
    )
    return () => {
      current = false
    }
  }, [profile.profile_id, report.id])

  const showOlder = async () => {
    if (typeof older !== "string") return
    setLoadingOlder(true)
    setRunsError(null)
    try {
      const page = await readRuns(older)
      setRuns((shown) => [...shown, ...page.data.filter((run) => !shown.some((known) => known.id === run.id))])
      setOlder(nextOf(page))
    } catch (failure) {
      if (!(failure instanceof SignedOut)) setRunsError(failure)
    } finally {
      setLoadingOlder(false)
    }
  }
  const generate = async () => {
    setBusy(true)
    setError(null)
    try {
      const answer = await request<{ readonly data: ReportRun }>(`/reports/${encodeURIComponent(report.id)}/generate`, {
        method: "POST",
        query: { profile_id: profile.profile_id }
      })
      setRuns((current) => [answer.data, ...current])
    } catch (failure) {
      if (!(failure instanceof SignedOut)) setError(failure)
    } finally {
      setBusy(false)
    }
  }
  return (
    <li class="report" data-report-id={report.id}>
      <h3>{report.name}</h3>
      <p class="muted small">
        {rangeLabel(report.range)} · {modelLabel(report.filters.model)} · {report.reads.map(readLabel).join(", ")}
        {report.schedule !== null && <> · {report.schedule.frequency} at {report.schedule.hour}:00</>}
      </p>
      <button type="button" class="generate" onClick={() => void generate()} disabled={busy}>
        {busy ? "Generating…" : "Generate now"}
        <span class="visually-hidden"> ({report.name})</span>
      </button>
      {error !== null && <ErrorPanel error={error} title="The report could not be generated" />}
      <div aria-live="polite" class="runs">
        {older === undefined && runsError === null && <p class="loading small">Loading the past runs…</p>}
        {older !== undefined && runs.length === 0 && <p class="muted small no-runs">Not generated yet.</p>}
        {runs.map((run) => <RunFiles key={run.id} profile={profile} report={report} run={run} />)}
      </div>
      {runsError !== null && <ErrorPanel error={runsError} title="The past runs could not load" />}
      {typeof older === "string" && (
        <button type="button" class="older-runs" onClick={() => void showOlder()} disabled={loadingOlder}>
          {loadingOlder ? "Loading…" : "Show older runs"}
          <span class="visually-hidden"> ({report.name})</span>
        </button>
      )}
    </li>
  )
}

export const ReportsScreen = ({ profile }: { readonly profile: MyProfile }) => {
  const canUse = profile.scopes.includes("reports:write")
  const [reports, setReports] = useState<ReadonlyArray<Report> | null>(null)
  const [error, setError] = useState<unknown>(null)
  const heading = useFocusHeading(profile.profile_id)

  useEffect(() => {
    // Without reports:write the API refuses every report operation: nothing to ask.
    if (!canUse) return
    let current = true
    setError(null)
    setReports(null)
    // Every saved report: pages of 100 until the last.
    const all: Array<Report> = []
    const page = (cursor: string | null): Promise<void> =>
      request<{ readonly data: ReadonlyArray<Report>; readonly pagination: { readonly has_next: boolean; readonly cursor: string | null } }>(
        "/reports",
        { query: { profile_id: profile.profile_id, limit: 100, ...(cursor === null ? {} : { cursor }) } }
      ).then((answer) => {
        all.push(...answer.data)
        return answer.pagination.has_next && answer.pagination.cursor !== null ? page(answer.pagination.cursor) : undefined
      })
    page(null).then(
      () => {
        if (current) setReports(all)
      },
      (failure: unknown) => {
        if (current && !(failure instanceof SignedOut)) setError(failure)
      }
    )
    return () => {
      current = false
    }
  }, [profile.profile_id, canUse])

  return (
    <section class="reports" aria-busy={canUse && reports === null && error === null}>
      <h1 ref={heading} tabIndex={-1}>Reports <span class="muted">· {profile.name || "Unnamed profile"}</span></h1>
      {!canUse && <p class="muted">Reports need the reports:write permission on this profile.</p>}
      {error !== null && <ErrorPanel error={error} title="The reports could not load" />}
      {canUse && error === null && reports === null && <p class="loading">Loading the reports…</p>}
      {reports !== null && (
        <>
          <h2 id="saved-heading">Saved reports</h2>
          {reports.length === 0
            ? <p class="muted">No saved report yet.</p>
            : <ul class="report-list" aria-labelledby="saved-heading">{reports.map((report) => <ReportItem key={report.id} profile={profile} report={report} />)}</ul>}
          {canUse && <NewReport profile={profile} onCreated={(report) => setReports((current) => [...(current ?? []), report])} />}
        </>
      )}
    </section>
  )
}
