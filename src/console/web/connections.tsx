/**
 * Connections (issue 33): every provider kind a profile can connect, each with its connections'
 * status and the reason for it (GET /api/v1/connections) or "Not connected"; "Connect" mints a hand-off
 * (POST /api/v1/connections/{provider}/handoff, returning here) and sends the browser to the
 * provider's consent; back here, the hand-off's result is read (GET .../handoffs/{id}). A sync
 * (POST /api/v1/connections/sync) shows its progress from GET /api/v1/connections/sync/{job_id},
 * read every second while it is queued or running and no longer once it ends. A hand-off that
 * ended in `pending_selection` (the provider gave several accounts) offers its candidates
 * (GET /api/v1/connections/pending/{provider}) and connects the one chosen
 * (POST /api/v1/connections/pending/{provider}/finalize), decision 0134.
 */
import type { ComponentChildren } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"
import { type MyProfile, request, SignedOut } from "./client.ts"
import { PROVIDERS } from "./providers.ts"
import { navigate } from "./router.ts"
import { ErrorPanel, useFocusHeading } from "./ui.tsx"
import "./screens.css"

interface Connection {
  readonly id: string
  readonly provider: string
  readonly status: string
  readonly status_reason: string | null
  readonly delivers_spend: boolean
  readonly display_name: string
  readonly provider_account_id: string | null
  readonly last_synced_at: string | null
  readonly created_at: string
}

interface Handoff {
  readonly handoff_id: string
  readonly provider: string
  readonly status: string
  readonly start_url: string
  readonly result: { readonly status: string; readonly reason: string | null; readonly connection_id: string | null } | null
}

interface SyncJob {
  readonly job_id: string
  readonly connection_id: string
  readonly kind: string
  readonly status: "queued" | "running" | "done" | "failed" | "cancelled"
  readonly error: string | null
  readonly attempts: number
  readonly progress: {
    readonly phase: string | null
    readonly campaigns: number
    readonly ad_sets: number
    readonly ads: number
    readonly insight_rows: number
    readonly products: number
    readonly orders: number
    readonly milestones: number
    readonly deals: number
    readonly payments: number
    readonly insights_skipped: string | null
  }
  readonly finished_at: string | null
}

const providerLabel = (kind: string) => PROVIDERS.find((provider) => provider.kind === kind)?.label ?? kind

const STATUS_LABELS: Record<string, string> = {
  active: "Connected",
  needs_action: "Needs action",
  reconnect_required: "Reconnect required"
}

const RUNNING = new Set(["queued", "running"])

/** The counts a job has written so far, the ones that are not zero. */
const COUNTS: ReadonlyArray<readonly [keyof SyncJob["progress"], string]> = [
  ["campaigns", "campaigns"],
  ["ad_sets", "ad sets"],
  ["ads", "ads"],
  ["insight_rows", "insight rows"],
  ["products", "products"],
  ["orders", "orders"],
  ["milestones", "milestones"],
  ["deals", "deals"],
  ["payments", "payments"]
]

const progressText = (job: SyncJob): string => {
  const counts = COUNTS.map(([field, label]) => [job.progress[field], label] as const)
    .filter(([count]) => typeof count === "number" && count > 0)
    .map(([count, label]) => `${count} ${label}`)
  const written = counts.length === 0 ? "nothing written yet" : counts.join(", ")
  const phase = job.progress.phase === null ? "" : ` (${job.progress.phase})`
  switch (job.status) {
    case "queued":
      return `Queued${job.attempts > 0 ? `, attempt ${job.attempts + 1}` : ""}: ${written}`
    case "running":
      return `Syncing${phase}: ${written}`
    case "done":
      return `Sync done: ${written}${job.progress.insights_skipped === null ? "" : ` (insights skipped: ${job.progress.insights_skipped})`}`
    case "failed":
      return `Sync failed${job.error === null ? "" : ` (${job.error})`}: ${written}`
    case "cancelled":
      return `Sync cancelled${job.error === null ? "" : ` (${job.error})`}`
  }
}

const when = (iso: string | null) =>
  iso === null ? "never" : new Intl.DateTimeFormat("en", { dateStyle: "medium", timeStyle: "short" }).format(new Date(iso))

const HANDOFF_MESSAGES: Record<string, string> = {
  success: "Connected",
  pending_selection: "Almost there: choose the account to connect",
  failed: "The connection failed",
  cancelled: "The consent was cancelled"
}

/** One connection's row: its latest sync, followed while it runs. */
const ConnectionRow = ({ profile, connection, canWrite, onSynced, action }: {
  readonly profile: MyProfile
  readonly connection: Connection
  readonly canWrite: boolean
  readonly onSynced: () => void
  /** The provider's Connect cell (on the first row of its kind). */
  readonly action: ComponentChildren
}) => {
  const [job, setJob] = useState<SyncJob | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [starting, setStarting] = useState(false)
  const running = job !== null && RUNNING.has(job.status)
  const wasRunning = useRef(false)

  useEffect(() => {
    let current = true
    request<{ readonly data: ReadonlyArray<SyncJob> }>("/connections/sync", {
      query: { profile_id: profile.profile_id, connection_id: connection.id, limit: 1 }
    }).then(
      (answer) => {
        if (current) setJob(answer.data[0] ?? null)
      },
      (failure: unknown) => {
        if (current && !(failure instanceof SignedOut)) setError(failure)
      }
    )
    return () => {
      current = false
    }
  }, [profile.profile_id, connection.id])

  // While the job is queued or running: its progress every second; stop once it ended.
  useEffect(() => {
    if (job === null || !RUNNING.has(job.status)) {
      if (wasRunning.current) onSynced()
      wasRunning.current = false
      return
    }
    wasRunning.current = true
    let current = true
    const timer = window.setTimeout(() => {
      request<{ readonly data: SyncJob }>(`/connections/sync/${encodeURIComponent(job.job_id)}`, { query: { profile_id: profile.profile_id } }).then(
        (answer) => {
          if (current) setJob(answer.data)
        },
        (failure: unknown) => {
          if (current && !(failure instanceof SignedOut)) setError(failure)
        }
      )
    }, 1000)
    return () => {
      current = false
      window.clearTimeout(timer)
    }
  }, [job])

  const sync = async () => {
    setStarting(true)
    setError(null)
    try {
      const answer = await request<{ readonly data: ReadonlyArray<SyncJob> }>("/connections/sync", {
        method: "POST",
        query: { profile_id: profile.profile_id },
        body: { connection_id: connection.id }
      })
      setJob(answer.data.find((queued) => queued.connection_id === connection.id) ?? answer.data[0] ?? null)
    } catch (failure) {
      if (!(failure instanceof SignedOut)) setError(failure)
    } finally {
      setStarting(false)
    }
  }

  const status = STATUS_LABELS[connection.status] ?? connection.status
  return (
    <tr data-connection-id={connection.id} data-provider={connection.provider} data-status={connection.status}>
      <th scope="row">
        {providerLabel(connection.provider)}
        <span class="muted small"> · {connection.display_name}{connection.provider_account_id === null ? "" : ` (${connection.provider_account_id})`}</span>
      </th>
      <td>
        <span class={`status status-${connection.status}`}>{status}</span>
        {connection.status_reason !== null && <span class="muted small status-reason"> · {connection.status_reason}</span>}
      </td>
      <td>{when(connection.last_synced_at)}</td>
      <td class="sync-cell">
        {job !== null && (
          <p class="sync-progress" role="status" data-job-status={job.status} data-job-id={job.job_id}>
            {running && <progress aria-label={`Sync of ${providerLabel(connection.provider)} in progress`} />}
            {" "}{progressText(job)}
          </p>
        )}
        {error !== null && <ErrorPanel error={error} title="The sync could not start or be read" />}
        {canWrite && connection.status === "active" && (
          <button type="button" class="sync-now" onClick={() => void sync()} disabled={starting || running}>
            {running ? "Syncing…" : starting ? "Starting…" : "Sync now"}
            <span class="visually-hidden"> ({providerLabel(connection.provider)})</span>
          </button>
        )}
      </td>
      <td>{action}</td>
    </tr>
  )
}

interface PendingAccount {
  readonly id: string
  readonly name: string
  readonly currency: string | null
  readonly timezone: string | null
  readonly connected_elsewhere: boolean
  readonly connected_here: boolean
}

interface PendingSelection {
  readonly id: string
  readonly handoff_id: string
  readonly provider: string
  readonly accounts: ReadonlyArray<PendingAccount>
  readonly expires_at: string
}

/**
 * The accounts a hand-off parked (its provider gave several): one is chosen and connected. An
 * account live on another profile of the workspace cannot be chosen (the API would answer 409
 * `account_connected_elsewhere`); a refusal keeps the choice open, as the API keeps the token.
 */
const PendingPicker = ({ profile, provider, handoffId, onConnected }: {
  readonly profile: MyProfile
  readonly provider: string
  readonly handoffId: string
  readonly onConnected: (connection: Connection) => void
}) => {
  const [selection, setSelection] = useState<PendingSelection | null | undefined>(undefined)
  const [chosen, setChosen] = useState<string | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [sending, setSending] = useState(false)

  useEffect(() => {
    let current = true
    request<{ readonly data: ReadonlyArray<PendingSelection> }>(`/connections/pending/${encodeURIComponent(provider)}`, {
      query: { profile_id: profile.profile_id }
    }).then(
      (answer) => {
        if (!current) return
        const found = answer.data.find((candidate) => candidate.handoff_id === handoffId) ?? null
        setSelection(found)
        setChosen(found?.accounts.find((account) => !account.connected_elsewhere)?.id ?? null)
      },
      (failure: unknown) => {
        if (current && !(failure instanceof SignedOut)) setError(failure)
      }
    )
    return () => {
      current = false
    }
  }, [profile.profile_id, provider, handoffId])

  const finalize = async (event: Event) => {
    event.preventDefault()
    if (chosen === null) return
    setSending(true)
    setError(null)
    try {
      const answer = await request<{ readonly data: Connection }>(`/connections/pending/${encodeURIComponent(provider)}/finalize`, {
        method: "POST",
        query: { profile_id: profile.profile_id },
        body: { account_id: chosen, handoff_id: handoffId }
      })
      onConnected(answer.data)
    } catch (failure) {
      if (!(failure instanceof SignedOut)) setError(failure)
    } finally {
      setSending(false)
    }
  }

  if (selection === undefined) {
    return error === null
      ? <p class="loading">Loading the accounts to choose from…</p>
      : <ErrorPanel error={error} title="The accounts to choose from could not load" />
  }
  if (selection === null) {
    return <p class="notice warn" id="pending-gone">Nothing is left to choose for this connection (it was finished or has expired): connect again.</p>
  }
  return (
    <form class="pending-picker" id="pending-picker" onSubmit={(event) => void finalize(event)}>
      <fieldset>
        <legend>Choose the {providerLabel(provider)} account to connect</legend>
        {selection.accounts.map((account) => (
          <label key={account.id} class="check pending-account" data-account-id={account.id}>
            <input type="radio" name="pending-account" value={account.id} checked={chosen === account.id}
              disabled={account.connected_elsewhere} onChange={() => setChosen(account.id)} />
            {" "}{account.name} <span class="muted small">({account.id}{account.currency === null ? "" : ` · ${account.currency}`}{account.timezone === null ? "" : ` · ${account.timezone}`})</span>
            {account.connected_elsewhere && <span class="muted small"> · connected to another profile of this workspace</span>}
            {account.connected_here && <span class="muted small"> · already connected here</span>}
          </label>
        ))}
      </fieldset>
      {error !== null && <ErrorPanel error={error} title="The account could not be connected" />}
      <button type="submit" id="finalize-account" disabled={chosen === null || sending}>
        {sending ? "Connecting…" : "Connect this account"}
      </button>
    </form>
  )
}

export const ConnectionsScreen = ({ profile, query }: { readonly profile: MyProfile; readonly query: URLSearchParams }) => {
  const canWrite = profile.scopes.includes("connections:write")
  const [connections, setConnections] = useState<ReadonlyArray<Connection> | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [reload, setReload] = useState(0)
  const [connecting, setConnecting] = useState<string | null>(null)
  const [connectError, setConnectError] = useState<unknown>(null)
  const [shop, setShop] = useState("")
  const [returned, setReturned] = useState<Handoff | null>(null)
  const [finalized, setFinalized] = useState<Connection | null>(null)
  const heading = useFocusHeading(profile.profile_id)
  const handoffId = query.get("handoff_id")

  useEffect(() => {
    let current = true
    request<{ readonly data: ReadonlyArray<Connection> }>("/connections", { query: { profile_id: profile.profile_id, limit: 100 } }).then(
      (answer) => {
        if (current) setConnections(answer.data)
      },
      (failure: unknown) => {
        if (!current || failure instanceof SignedOut) return
        setConnections(null)
        setError(failure)
      }
    )
    return () => {
      current = false
    }
  }, [profile.profile_id, reload])

  // Back from a provider's consent: the hand-off's own record says how it ended.
  useEffect(() => {
    if (handoffId === null) return
    let current = true
    request<{ readonly data: Handoff }>(`/connections/handoffs/${encodeURIComponent(handoffId)}`, { query: { profile_id: profile.profile_id } }).then(
      (answer) => {
        if (!current) return
        setReturned(answer.data)
        setReload((count) => count + 1)
        // The result is on the page; the address loses the hand-off's parameters (a reload would not read it again),
        // but keeps the hand-off while an account is still to be chosen (a reload offers the choice again).
        const pending = answer.data.result?.status === "pending_selection"
        navigate(`/console/${profile.profile_id}/connections${pending ? `?handoff_id=${encodeURIComponent(handoffId)}` : ""}`, { replace: true })
      },
      (failure: unknown) => {
        if (current && !(failure instanceof SignedOut)) setConnectError(failure)
      }
    )
    return () => {
      current = false
    }
  }, [profile.profile_id, handoffId])

  const connect = async (provider: string) => {
    setConnecting(provider)
    setConnectError(null)
    try {
      const answer = await request<{ readonly data: Handoff }>(`/connections/${provider}/handoff`, {
        method: "POST",
        query: { profile_id: profile.profile_id },
        body: {
          return_url: `${window.location.origin}/console/${profile.profile_id}/connections`,
          ...(provider === "commerce" ? { shop: shop.trim() } : {})
        }
      })
      // The provider's consent is another site: the whole page goes there and comes back to return_url.
      window.location.assign(answer.data.start_url)
    } catch (failure) {
      if (!(failure instanceof SignedOut)) setConnectError(failure)
      setConnecting(null)
    }
  }

  const result = returned?.result ?? null
  const pendingHere = returned !== null && result?.status === "pending_selection" && finalized === null
  /** The provider's Connect button (and the store's handle for a commerce store); none without connections:write. */
  const connectCell = (kind: string, label: string, connected: boolean) =>
    !canWrite ? null : (
      <div class="connect-cell">
        {kind === "commerce" && (
          <label class="shop">
            Store handle
            <input id="commerce-shop" type="text" value={shop} placeholder="acme-store" autocomplete="off"
              onInput={(event) => setShop(event.currentTarget.value)} />
          </label>
        )}
        <button type="button" id={`connect-${kind}`} disabled={connecting !== null} onClick={() => void connect(kind)}>
          {connecting === kind ? "Opening…" : connected ? "Connect another" : "Connect"}
          <span class="visually-hidden"> {label}</span>
        </button>
      </div>
    )
  return (
    <section class="connections" aria-busy={connections === null && error === null}>
      <h1 ref={heading} tabIndex={-1}>Connections <span class="muted">· {profile.name || "Unnamed profile"}</span></h1>
      {returned !== null && finalized === null && (
        <div class={`notice handoff-result${result?.status === "success" ? "" : " warn"}`} role="status" id="handoff-result"
          data-status={result?.status ?? returned.status} data-connection-id={result?.connection_id ?? ""}>
          <strong>{providerLabel(returned.provider)}: {HANDOFF_MESSAGES[result?.status ?? returned.status] ?? result?.status ?? returned.status}</strong>
          {result !== null && result.status !== "success" && result.reason !== null && <span class="muted"> ({result.reason})</span>}
        </div>
      )}
      {finalized !== null && (
        <div class="notice handoff-result" role="status" id="handoff-result" data-status="success" data-connection-id={finalized.id}>
          <strong>{providerLabel(finalized.provider)}: Connected {finalized.display_name}{finalized.provider_account_id === null ? "" : ` (${finalized.provider_account_id})`}</strong>
        </div>
      )}
      {pendingHere && returned !== null && (
        canWrite
          ? <PendingPicker profile={profile} provider={returned.provider} handoffId={returned.handoff_id} onConnected={(connection) => {
            setFinalized(connection)
            setReload((count) => count + 1)
            navigate(`/console/${profile.profile_id}/connections`, { replace: true })
          }} />
          : <p class="muted">Choosing the account needs the connections:write permission on this profile.</p>
      )}
      {error !== null && <ErrorPanel error={error} title="The connections could not load" />}
      {error === null && connections === null && <p class="loading">Loading the connections…</p>}
      {connectError !== null && <ErrorPanel error={connectError} title="The connection could not start" />}
      {connections !== null && (
        <table class="breakdown connections-table" aria-labelledby="connections-caption">
          <caption id="connections-caption" class="visually-hidden">Providers and the profile's connections to them</caption>
          <thead>
            <tr>
              <th scope="col">Provider</th>
              <th scope="col">Status</th>
              <th scope="col">Last synced</th>
              <th scope="col">Sync</th>
              <th scope="col"><span class="visually-hidden">Connect</span></th>
            </tr>
          </thead>
          <tbody>
            {providerRows(connections).map(({ kind, label, rows }) =>
              rows.length === 0
                ? (
                  <tr key={kind} data-provider={kind} data-status="not_connected">
                    <th scope="row">{label}</th>
                    <td><span class="status status-not_connected">Not connected</span></td>
                    <td>never</td>
                    <td></td>
                    <td>{connectCell(kind, label, false)}</td>
                  </tr>
                )
                : rows.map((connection, index) => (
                  <ConnectionRow key={connection.id} profile={profile} connection={connection} canWrite={canWrite}
                    onSynced={() => setReload((count) => count + 1)} action={index === 0 ? connectCell(kind, label, true) : null} />
                ))
            )}
          </tbody>
        </table>
      )}
      <p class="muted small">
        {canWrite
          ? "Connect takes you to the provider to give consent, then back here."
          : "Connecting a provider needs the connections:write permission on this profile."}
      </p>
    </section>
  )
}

/** Each provider kind in the list's order, with its connections (a kind the API does not name last, so none is hidden). */
const providerRows = (connections: ReadonlyArray<Connection>) => {
  const known = PROVIDERS.map((provider) => ({ ...provider, rows: connections.filter((connection) => connection.provider === provider.kind) }))
  const others = [...new Set(connections.map((connection) => connection.provider))]
    .filter((kind) => !PROVIDERS.some((provider) => provider.kind === kind))
    .map((kind) => ({ kind, label: kind, rows: connections.filter((connection) => connection.provider === kind) }))
  return [...known, ...others]
}
