/**
 * Developers (issue 33): the profile's API keys, webhook endpoints and recent requests (decision
 * 0130), through the same /api/v1 operations a REST client calls. A key or a signing secret is shown once, in a dialog, as the API
 * answers it once. What the person's roles and scopes do not allow is not offered (decision 0126);
 * the API refuses it anyway. A failed call shows the API's message and request id, and nothing of
 * the change it did not make.
 */
import "./developers.css"
import { useEffect, useState } from "preact/hooks"
import { type MyProfile, SignedOut } from "./client.ts"
import { managesKeys, readsRequestLogs, readsWebhooks, seesDevelopers, writesWebhooks } from "./access.ts"
import {
  type ApiKey,
  attempts,
  createKey,
  createSubscription,
  DEFAULT_KEY_SCOPES,
  deliveries,
  profileKeys,
  redeliver,
  REQUEST_STATUS_CLASSES,
  type RequestLogEntry,
  requestLogs,
  revokeKey,
  subscriptions,
  WEBHOOK_EVENT_TYPES,
  type WebhookAttempt,
  type WebhookDelivery,
  type WebhookSubscription
} from "./developers-client.ts"
import { ConfirmDialog, SecretDialog } from "./dialog.tsx"
import { ErrorPanel, useFocusHeading } from "./ui.tsx"

/** A read's state: loading, its answer, or the failure to show. */
type Loaded<A> = { readonly state: "loading" } | { readonly state: "done"; readonly value: A } | { readonly state: "failed"; readonly error: unknown }

/**
 * A read that runs on mount and when `reload` is called; an answer that arrives after the screen
 * left (or after a newer read) is dropped, and a 401 has already sent the browser to sign-in.
 */
const useRead = <A,>(read: () => Promise<A>, keys: ReadonlyArray<unknown>) => {
  const [loaded, setLoaded] = useState<Loaded<A>>({ state: "loading" })
  const [round, setRound] = useState(0)
  useEffect(() => {
    let current = true
    read().then(
      (value) => {
        if (current) setLoaded({ state: "done", value })
      },
      (error: unknown) => {
        if (current && !(error instanceof SignedOut)) setLoaded({ state: "failed", error })
      }
    )
    return () => {
      current = false
    }
  }, [...keys, round])
  return { loaded, reload: () => setRound((n) => n + 1) }
}

const When = ({ iso }: { readonly iso: string | null }) =>
  iso === null ? <span class="muted">—</span> : <time dateTime={iso} title={iso}>{new Date(iso).toLocaleString("en-GB", { timeZone: "UTC" })} UTC</time>

/** A failed write: the error panel, unless the session ended (the browser is already on its way to sign-in). */
const failureOf = (error: unknown): unknown => (error instanceof SignedOut ? null : error)

// --- API keys ---------------------------------------------------------------------------------

const KeysSection = ({ profile }: { readonly profile: MyProfile }) => {
  const { loaded, reload } = useRead(() => profileKeys(profile.workspace_id, profile.profile_id), [profile.profile_id])
  const offered = profile.scopes
  const [name, setName] = useState("")
  const [chosen, setChosen] = useState<ReadonlyArray<string>>(() => DEFAULT_KEY_SCOPES.filter((scope) => offered.includes(scope)))
  const [creating, setCreating] = useState(false)
  const [createError, setCreateError] = useState<unknown>(null)
  const [minted, setMinted] = useState<{ readonly name: string; readonly key: string } | null>(null)
  const [revoking, setRevoking] = useState<ApiKey | null>(null)
  const [revokeBusy, setRevokeBusy] = useState(false)
  const [revokeError, setRevokeError] = useState<unknown>(null)
  const [notice, setNotice] = useState("")
  // After a revoke its row's button is gone: the keyboard carries on from the section's heading,
  // once the dialog has closed (and given the focus back to that button).
  const [focusHeading, setFocusHeading] = useState(false)
  useEffect(() => {
    if (!focusHeading || revoking !== null) return
    setFocusHeading(false)
    document.getElementById("api-keys-title")?.focus()
  }, [focusHeading, revoking])

  const toggle = (scope: string, on: boolean) =>
    setChosen((previous) => (on ? [...previous, scope] : previous.filter((known) => known !== scope)))

  const create = async (event: Event) => {
    event.preventDefault()
    if (chosen.length === 0) {
      setCreateError(new Error("Choose at least one scope."))
      return
    }
    setCreating(true)
    setCreateError(null)
    setNotice("")
    try {
      const answer = await createKey(profile.workspace_id, {
        profile_id: profile.profile_id,
        name: name.trim(),
        // In the order the form lists them, so the key's scopes read like the form.
        scopes: offered.filter((scope) => chosen.includes(scope))
      })
      setMinted({ name: answer.data.name, key: answer.data.key })
      setName("")
      const withheld = answer.meta?.withheld_scopes ?? []
      if (withheld.length > 0) setNotice(`Left out on this healthcare profile: ${withheld.join(", ")}.`)
      reload()
    } catch (failure) {
      setCreateError(failureOf(failure))
    } finally {
      setCreating(false)
    }
  }

  const revoke = async () => {
    if (revoking === null) return
    setRevokeBusy(true)
    setRevokeError(null)
    try {
      await revokeKey(profile.workspace_id, revoking.id)
      setNotice(`Key ${revoking.name || revoking.prefix} revoked.`)
      setRevoking(null)
      reload()
      setFocusHeading(true)
    } catch (failure) {
      setRevokeError(failureOf(failure))
    } finally {
      setRevokeBusy(false)
    }
  }

  return (
    <section class="dev-section" id="api-keys" aria-labelledby="api-keys-title">
      <h2 id="api-keys-title" tabIndex={-1}>API keys</h2>
      <p class="muted small">
        A key calls /api/v1 for this profile with the scopes it holds (<code>Authorization: Bearer …</code>). Its secret is shown once, when it is created.
      </p>
      <p role="status" class="notice-line" id="keys-notice">{notice}</p>
      {loaded.state === "failed" && <ErrorPanel error={loaded.error} title="The API keys could not load" />}
      {loaded.state === "loading" && <p class="loading">Loading the keys…</p>}
      {loaded.state === "done" && (
        <table class="breakdown dev-table" id="keys-table">
          <caption class="visually-hidden">API keys of this profile</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Key</th>
              <th scope="col">Scopes</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
              <th scope="col"><span class="visually-hidden">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {loaded.value.length === 0 && <tr><td colSpan={6} class="muted">No key for this profile yet.</td></tr>}
            {loaded.value.map((key) => (
              <tr key={key.id} data-key-id={key.id} data-status={key.status}>
                <th scope="row">{key.name || <span class="muted">Unnamed</span>}</th>
                <td><code>{key.prefix}…</code></td>
                <td class="scopes">{key.scopes.join(", ")}</td>
                <td>{key.status}</td>
                <td><When iso={key.created_at} /></td>
                <td>
                  {key.status === "active" && (
                    <button type="button" class="danger small-button revoke-key" aria-label={`Revoke key ${key.name || key.prefix}`}
                      onClick={() => {
                        setRevokeError(null)
                        setRevoking(key)
                      }}>Revoke</button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <form class="dev-form" id="create-key" aria-labelledby="create-key-title" onSubmit={create}>
        <h3 id="create-key-title">Create a key</h3>
        <label for="key-name">Name</label>
        <input id="key-name" type="text" maxLength={200} value={name} placeholder="e.g. BI export"
          onInput={(event) => setName(event.currentTarget.value)} />
        <fieldset>
          <legend>Scopes</legend>
          <div class="choices">
            {offered.map((scope) => (
              <label key={scope} class="choice">
                <input type="checkbox" name="scope" value={scope} checked={chosen.includes(scope)}
                  onChange={(event) => toggle(scope, event.currentTarget.checked)} />
                <code>{scope}</code>
              </label>
            ))}
          </div>
        </fieldset>
        {createError !== null && <ErrorPanel error={createError} title="The key was not created" />}
        <button type="submit" class="primary" id="create-key-submit" disabled={creating}>{creating ? "Creating…" : "Create key"}</button>
      </form>

      {minted !== null && (
        <SecretDialog title={`Key ${minted.name || "created"}`} what="API key" secret={minted.key} onClose={() => setMinted(null)} />
      )}
      {revoking !== null && (
        <ConfirmDialog title="Revoke this key?" confirmLabel="Revoke key" busy={revokeBusy} onConfirm={revoke}
          onCancel={() => setRevoking(null)}>
          <p>
            <strong>{revoking.name || "Unnamed"}</strong> (<code>{revoking.prefix}…</code>) stops working within about 10 seconds,
            for every application that uses it. This cannot be undone.
          </p>
          {revokeError !== null && <ErrorPanel error={revokeError} title="The key was not revoked" />}
        </ConfirmDialog>
      )}
    </section>
  )
}

/** Keys are the workspace's owners' and admins' to manage; anyone else is told whom to ask. */
const KeysNotManaged = ({ profile }: { readonly profile: MyProfile }) => (
  <section class="dev-section" id="api-keys" aria-labelledby="api-keys-title">
    <h2 id="api-keys-title">API keys</h2>
    <p>
      API keys are created and revoked by the workspace's owners and admins; your role in {profile.workspace_name} is{" "}
      <strong>{profile.workspace_role}</strong>. Ask one of them for a key.
    </p>
  </section>
)

// --- Webhooks ---------------------------------------------------------------------------------

const AttemptLog = ({ profile, delivery }: { readonly profile: MyProfile; readonly delivery: WebhookDelivery }) => {
  const { loaded } = useRead(() => attempts(profile.profile_id, delivery.id), [delivery.id, delivery.attempts])
  if (loaded.state === "loading") return <p class="loading small">Loading the attempts…</p>
  if (loaded.state === "failed") return <ErrorPanel error={loaded.error} title="The attempts could not load" />
  if (loaded.value.length === 0) return <p class="muted small">No attempt yet.</p>
  return (
    <ol class="attempts">
      {loaded.value.map((attempt: WebhookAttempt) => (
        <li key={`${attempt.delivery_id}-${attempt.attempt}`} data-status-code={attempt.status_code ?? ""}>
          <When iso={attempt.attempted_at} /> · HTTP {attempt.status_code ?? "no answer"}
          {attempt.duration_ms !== null && <> · {attempt.duration_ms} ms</>}
          {attempt.delivery_id !== delivery.id && <span class="muted"> · redelivery</span>}
          {attempt.status_code !== null && (
            attempt.response_body === null
              ? <p class="muted small attempt-body-empty">The response had no body.</p>
              : (
                <figure class="attempt-body">
                  <figcaption class="small">Response body{[...attempt.response_body].length >= 1000 ? " (its first 1000 characters)" : ""}</figcaption>
                  <pre tabIndex={0}>{attempt.response_body}</pre>
                </figure>
              )
          )}
          {attempt.error !== null && (
            <details class="attempt-error">
              <summary>What went wrong</summary>
              <pre>{attempt.error}</pre>
            </details>
          )}
        </li>
      ))}
    </ol>
  )
}

const DeliveryRow = ({ profile, delivery, canWrite, onResent }: {
  readonly profile: MyProfile
  readonly delivery: WebhookDelivery
  readonly canWrite: boolean
  readonly onResent: (resent: WebhookDelivery) => void
}) => {
  const [open, setOpen] = useState(false)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(null)
  const resend = async () => {
    setBusy(true)
    setError(null)
    try {
      onResent((await redeliver(profile.profile_id, delivery.id)).data)
    } catch (failure) {
      setError(failureOf(failure))
    } finally {
      setBusy(false)
    }
  }
  return (
    <>
      <tr data-delivery-id={delivery.id} data-status={delivery.status} data-event-id={delivery.event_id}>
        <th scope="row"><code>{delivery.event_type}</code>{delivery.redelivery_of !== null && <span class="muted small"> · resent</span>}</th>
        <td>{delivery.status}</td>
        <td class="num">{delivery.last_status_code ?? "—"}</td>
        <td class="num">{delivery.attempts}</td>
        <td><When iso={delivery.last_attempt_at ?? delivery.created_at} /></td>
        <td class="actions">
          <button type="button" class="small-button show-attempts" aria-expanded={open} aria-controls={`attempts-${delivery.id}`}
            onClick={() => setOpen(!open)}>{open ? "Hide attempts" : "Attempts"}</button>
          {canWrite && (
            <button type="button" class="small-button resend" onClick={resend} disabled={busy}
              aria-label={`Resend ${delivery.event_type} delivery`}>{busy ? "Resending…" : "Resend"}</button>
          )}
        </td>
      </tr>
      {(open || error !== null) && (
        <tr class="detail-row" id={`attempts-${delivery.id}`}>
          <td colSpan={6}>
            {error !== null && <ErrorPanel error={error} title="The delivery was not resent" />}
            {open && (
              <>
                {delivery.last_error !== null && <p class="small">Last error: <code>{delivery.last_error}</code></p>}
                <AttemptLog profile={profile} delivery={delivery} />
              </>
            )}
          </td>
        </tr>
      )}
    </>
  )
}

const DeliveryLog = ({ profile, subscription, canWrite }: {
  readonly profile: MyProfile
  readonly subscription: WebhookSubscription
  readonly canWrite: boolean
}) => {
  const { loaded, reload } = useRead(() => deliveries(profile.profile_id, subscription.id), [subscription.id])
  const [notice, setNotice] = useState("")
  return (
    <section class="deliveries" id="deliveries" aria-labelledby="deliveries-title">
      <div class="heading-row">
        <h3 id="deliveries-title">Deliveries to <code>{subscription.url}</code></h3>
        <button type="button" id="refresh-deliveries" class="small-button" onClick={() => {
          setNotice("")
          reload()
        }}>Refresh</button>
      </div>
      <p role="status" class="notice-line" id="deliveries-notice">{notice}</p>
      {loaded.state === "loading" && <p class="loading">Loading the deliveries…</p>}
      {loaded.state === "failed" && <ErrorPanel error={loaded.error} title="The deliveries could not load" />}
      {loaded.state === "done" && (
        <table class="breakdown dev-table" id="deliveries-table">
          <caption class="visually-hidden">Deliveries, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Status</th>
              <th scope="col" class="num">HTTP code</th>
              <th scope="col" class="num">Attempts</th>
              <th scope="col">Time</th>
              <th scope="col"><span class="visually-hidden">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {loaded.value.data.length === 0 && <tr><td colSpan={6} class="muted">Nothing delivered yet.</td></tr>}
            {loaded.value.data.map((delivery) => (
              <DeliveryRow key={delivery.id} profile={profile} delivery={delivery} canWrite={canWrite}
                onResent={(resent) => {
                  setNotice(`Resent: delivery ${resent.id} is queued.`)
                  reload()
                }} />
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}

const WebhooksSection = ({ profile }: { readonly profile: MyProfile }) => {
  const canWrite = writesWebhooks(profile)
  const { loaded, reload } = useRead(() => subscriptions(profile.profile_id), [profile.profile_id])
  const [url, setUrl] = useState("")
  const [types, setTypes] = useState<ReadonlyArray<string>>(() => WEBHOOK_EVENT_TYPES.filter((known) => known.byDefault).map((known) => known.type))
  const [creating, setCreating] = useState(false)
  const [createError, setCreateError] = useState<unknown>(null)
  const [created, setCreated] = useState<{ readonly url: string; readonly secret: string } | null>(null)
  const [selected, setSelected] = useState<string | null>(null)

  const create = async (event: Event) => {
    event.preventDefault()
    if (types.length === 0) {
      setCreateError(new Error("Choose at least one event type."))
      return
    }
    setCreating(true)
    setCreateError(null)
    try {
      const answer = await createSubscription(profile.profile_id, {
        url: url.trim(),
        event_types: WEBHOOK_EVENT_TYPES.map((known) => known.type).filter((type) => types.includes(type))
      })
      setCreated({ url: answer.data.url, secret: answer.data.secret })
      setUrl("")
      setSelected(answer.data.id)
      reload()
    } catch (failure) {
      setCreateError(failureOf(failure))
    } finally {
      setCreating(false)
    }
  }

  const shown = loaded.state === "done" ? loaded.value.find((subscription) => subscription.id === selected) ?? null : null
  return (
    <section class="dev-section" id="webhooks" aria-labelledby="webhooks-title">
      <h2 id="webhooks-title">Webhooks</h2>
      <p class="muted small">
        Endpoints receive this profile's events, signed per Standard Webhooks (<code>webhook-id</code>, <code>webhook-timestamp</code>,{" "}
        <code>webhook-signature</code>). The signing secret is shown once, when the endpoint is created.
      </p>
      {loaded.state === "failed" && <ErrorPanel error={loaded.error} title="The webhook endpoints could not load" />}
      {loaded.state === "loading" && <p class="loading">Loading the endpoints…</p>}
      {loaded.state === "done" && (
        <table class="breakdown dev-table" id="endpoints-table">
          <caption class="visually-hidden">Webhook endpoints</caption>
          <thead>
            <tr>
              <th scope="col">Endpoint</th>
              <th scope="col">Events</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {loaded.value.length === 0 && <tr><td colSpan={4} class="muted">No endpoint yet.</td></tr>}
            {loaded.value.map((subscription) => (
              <tr key={subscription.id} data-subscription-id={subscription.id}>
                <th scope="row">
                  <button type="button" class="link-button show-deliveries" aria-pressed={subscription.id === selected}
                    onClick={() => setSelected(subscription.id === selected ? null : subscription.id)}>
                    {subscription.url}
                  </button>
                  {subscription.description !== null && <span class="muted small"> · {subscription.description}</span>}
                </th>
                <td class="scopes">{subscription.event_types.join(", ")}</td>
                <td>{subscription.status}{subscription.status_reason !== null && <span class="muted small"> ({subscription.status_reason})</span>}</td>
                <td><When iso={subscription.created_at} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {loaded.state === "done" && loaded.value.length > 0 && shown === null && (
        <p class="muted small">Choose an endpoint to see its deliveries and their attempts.</p>
      )}
      {shown !== null && <DeliveryLog key={shown.id} profile={profile} subscription={shown} canWrite={canWrite} />}

      {canWrite && (
        <form class="dev-form" id="create-endpoint" aria-labelledby="create-endpoint-title" onSubmit={create}>
          <h3 id="create-endpoint-title">Add an endpoint</h3>
          <label for="endpoint-url">URL</label>
          <input id="endpoint-url" type="url" required maxLength={2048} value={url} placeholder="https://example.com/webhooks"
            aria-describedby="endpoint-url-hint" onInput={(event) => setUrl(event.currentTarget.value)} />
          <p class="muted small" id="endpoint-url-hint">An https address of a public host; redirects are not followed.</p>
          <fieldset>
            <legend>Event types</legend>
            <div class="choices">
              {WEBHOOK_EVENT_TYPES.map((known) => (
                <label key={known.type} class="choice">
                  <input type="checkbox" name="event_type" value={known.type} checked={types.includes(known.type)}
                    onChange={(event) => {
                      const on = event.currentTarget.checked
                      setTypes((previous) => (on ? [...previous, known.type] : previous.filter((type) => type !== known.type)))
                    }} />
                  <code>{known.type}</code>
                </label>
              ))}
            </div>
          </fieldset>
          {createError !== null && <ErrorPanel error={createError} title="The endpoint was not added" />}
          <button type="submit" class="primary" id="create-endpoint-submit" disabled={creating}>{creating ? "Adding…" : "Add endpoint"}</button>
        </form>
      )}
      {created !== null && (
        <SecretDialog title={`Endpoint ${created.url} added`} what="signing secret" secret={created.secret} onClose={() => setCreated(null)} />
      )}
    </section>
  )
}

// --- Requests ---------------------------------------------------------------------------------

const CALLERS: Record<RequestLogEntry["principal_kind"], string> = { api_key: "API key", user_token: "User token", session: "Console" }

/**
 * The profile's recent API requests (decision 0130), newest first, 25 at a time with "Load more";
 * filtered by status class. Entries are written about a second after their answer: Refresh reads
 * the newest again.
 */
const RequestsSection = ({ profile }: { readonly profile: MyProfile }) => {
  const [status, setStatus] = useState("")
  const [round, setRound] = useState(0)
  const [entries, setEntries] = useState<ReadonlyArray<RequestLogEntry>>([])
  const [cursor, setCursor] = useState<string | null>(null)
  const [loading, setLoading] = useState(true)
  const [error, setError] = useState<unknown>(null)
  // The first page, again whenever the filter, the profile or Refresh changes it; a late answer to an older read is dropped.
  useEffect(() => {
    let current = true
    setLoading(true)
    setError(null)
    requestLogs(profile.profile_id, { status: status === "" ? undefined : status }).then(
      (page) => {
        if (!current) return
        setEntries(page.data)
        setCursor(page.pagination.has_next ? page.pagination.cursor : null)
        setLoading(false)
      },
      (failure: unknown) => {
        if (!current || failure instanceof SignedOut) return
        setError(failure)
        setLoading(false)
      }
    )
    return () => {
      current = false
    }
  }, [profile.profile_id, status, round])

  const more = async () => {
    if (cursor === null) return
    setLoading(true)
    setError(null)
    try {
      const page = await requestLogs(profile.profile_id, { status: status === "" ? undefined : status, cursor })
      setEntries((previous) => [...previous, ...page.data])
      setCursor(page.pagination.has_next ? page.pagination.cursor : null)
    } catch (failure) {
      setError(failureOf(failure))
    } finally {
      setLoading(false)
    }
  }

  return (
    <section class="dev-section" id="requests" aria-labelledby="requests-title">
      <h2 id="requests-title">Requests</h2>
      <p class="muted small">
        The last 7 days of <code>/api/v1</code> calls on this profile: path without its query string, never bodies or secrets.
        A call shows up about a second after its answer.
      </p>
      <div class="request-filters">
        <label for="request-status">Status</label>
        <select id="request-status" value={status} onChange={(event) => setStatus(event.currentTarget.value)}>
          <option value="">All</option>
          {REQUEST_STATUS_CLASSES.map((known) => <option key={known} value={known}>{known}</option>)}
        </select>
        <button type="button" class="small-button" id="requests-refresh" onClick={() => setRound((n) => n + 1)}>Refresh</button>
      </div>
      {error !== null && <ErrorPanel error={error} title="The requests could not load" />}
      {entries.length === 0 && !loading && error === null && <p class="muted">No requests{status === "" ? "" : ` with status ${status}`} in the last 7 days.</p>}
      {entries.length > 0 && (
        <table class="dev-table requests-table">
          <caption class="visually-hidden">Recent API requests, newest first</caption>
          <thead>
            <tr><th scope="col">Method</th><th scope="col">Path</th><th scope="col">Status</th><th scope="col">Request id</th><th scope="col">Duration</th><th scope="col">Caller</th><th scope="col">Time</th></tr>
          </thead>
          <tbody>
            {entries.map((entry) => (
              <tr key={entry.id} data-request-id={entry.request_id} data-status={entry.status}>
                <td><code>{entry.method}</code></td>
                <th scope="row" class="request-path"><code title={entry.route ?? undefined}>{entry.path}</code></th>
                <td class="num">{entry.status}</td>
                <td><code class="request-id">{entry.request_id}</code></td>
                <td class="num">{entry.duration_ms} ms</td>
                <td>{CALLERS[entry.principal_kind]}</td>
                <td><When iso={entry.created_at} /></td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {loading && <p class="loading small">Loading the requests…</p>}
      {cursor !== null && !loading && (
        <button type="button" class="small-button" id="requests-more" onClick={more}>Load more</button>
      )}
    </section>
  )
}

// --- The screen -------------------------------------------------------------------------------

export const DevelopersScreen = ({ profile }: { readonly profile: MyProfile }) => {
  const heading = useFocusHeading(profile.profile_id)
  const title = <>Developers <span class="muted">· {profile.name || "Unnamed profile"}</span></>
  if (!seesDevelopers(profile)) {
    return (
      <section class="developers">
        <h1 ref={heading} tabIndex={-1}>{title}</h1>
        <p>Your membership of this profile includes neither API keys nor webhooks, nor its request log. Ask the workspace owner for access.</p>
      </section>
    )
  }
  return (
    <section class="developers">
      <h1 ref={heading} tabIndex={-1}>{title}</h1>
      {managesKeys(profile) ? <KeysSection profile={profile} /> : <KeysNotManaged profile={profile} />}
      {readsWebhooks(profile) && <WebhooksSection profile={profile} />}
      {readsRequestLogs(profile) && <RequestsSection profile={profile} />}
    </section>
  )
}

