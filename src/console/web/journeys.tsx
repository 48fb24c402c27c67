/**
 * Journeys (issue 33): one person's touches and outcomes, oldest first, as a vertical timeline,
 * each touch with its credit under the chosen model, from GET /api/v1/customers/journey, the
 * read a REST client makes. Looked up by customer key (conversions:read), or by email or phone
 * where the person's scopes on the profile include customers:read (the API refuses them
 * otherwise). What was typed stays in the page, never in its address: an email or a phone
 * number must not end up in the history or a server's access log.
 */
import { useState } from "preact/hooks"
import { ApiError, CREDIT_MODELS, type MyProfile, request, SignedOut } from "./client.ts"
import { formatDecimal, formatMoney, modelLabel } from "./format.ts"
import { ErrorPanel, useFocusHeading } from "./ui.tsx"
import "./screens.css"

interface AdRef {
  readonly external_id: string | null
  readonly name: string | null
}

export interface JourneyRow {
  readonly touch_id: string
  readonly kind: string
  readonly at: string
  readonly channel: string | null
  readonly source: string | null
  readonly medium: string | null
  readonly campaign: AdRef | null
  readonly ad_set: AdRef | null
  readonly ad: AdRef | null
  readonly is_credited: boolean
  readonly credit_share: number
  readonly credit_model: string
  readonly in_window: boolean
}

interface PersonConversion {
  readonly outcome_event_id: string
  readonly conversion_id: string
  readonly conversion_key: string
  readonly occurred_at: string
  readonly value_amount: string | null
  readonly currency: string | null
}

interface PersonJourney {
  readonly data: ReadonlyArray<JourneyRow>
  readonly meta: {
    readonly person: {
      readonly customer_key: string | null
      readonly conversion_count: number
      readonly touch_count: number
      readonly first_touch_at: string | null
      readonly last_touch_at: string | null
      readonly conversions: ReadonlyArray<PersonConversion>
      readonly first_name?: string | null
      readonly last_name?: string | null
    }
  }
  readonly pagination: { readonly has_next: boolean; readonly cursor: string | null }
}

type Selector = "customer_key" | "email" | "phone"

const SELECTORS: ReadonlyArray<{ readonly name: Selector; readonly label: string; readonly inputMode: "text" | "email" | "tel"; readonly people: boolean }> = [
  { name: "customer_key", label: "Customer key", inputMode: "text", people: false },
  { name: "email", label: "Email", inputMode: "email", people: true },
  { name: "phone", label: "Phone", inputMode: "tel", people: true }
]

/** The API's largest journey page. */
const PAGE = 100

const personJourney = (profileId: string, selector: Selector, value: string, model: string, cursor: string | null) =>
  request<PersonJourney>("/customers/journey", {
    query: { profile_id: profileId, [selector]: value, model, limit: PAGE, ...(cursor === null ? {} : { cursor }) }
  })

const when = (iso: string) =>
  new Intl.DateTimeFormat("en", { dateStyle: "medium", timeStyle: "short", timeZone: "UTC" }).format(new Date(iso)) + " UTC"

const percent = (share: number) => new Intl.NumberFormat("en", { style: "percent", maximumFractionDigits: 1 }).format(share)

const adLabel = (ref: AdRef | null): string | null =>
  ref === null || (ref.name === null && ref.external_id === null) ? null : ref.name ?? ref.external_id

interface Shown {
  readonly selector: Selector
  readonly value: string
  readonly model: string
  readonly rows: ReadonlyArray<JourneyRow>
  readonly person: PersonJourney["meta"]["person"]
  readonly cursor: string | null
}

const TouchItem = ({ row }: { readonly row: JourneyRow }) => {
  const campaign = adLabel(row.campaign)
  const source = [row.source, row.medium].filter((part) => part !== null).join(" / ")
  return (
    <li class={`touch${row.is_credited ? " credited" : ""}`} data-touch-id={row.touch_id} data-kind={row.kind}
      data-credit-share={String(row.credit_share)} data-credited={String(row.is_credited)}>
      <p class="timeline-head">
        <span class="timeline-title">{row.channel ?? "(no channel)"}</span>
        <time dateTime={row.at}>{when(row.at)}</time>
      </p>
      <dl class="timeline-facts">
        {source !== "" && <><dt>Source</dt><dd>{source}</dd></>}
        {campaign !== null && <><dt>Campaign</dt><dd>{campaign}</dd></>}
        {adLabel(row.ad) !== null && <><dt>Ad</dt><dd>{adLabel(row.ad)}</dd></>}
        <dt>Credit</dt>
        <dd class="credit">
          {percent(row.credit_share)}
          <span class="muted small">{row.is_credited ? " credited" : row.in_window ? " on the path, no weight" : " outside the window"}</span>
        </dd>
      </dl>
    </li>
  )
}

const OutcomeItem = ({ row, conversion, currency }: {
  readonly row: JourneyRow
  readonly conversion: PersonConversion | undefined
  readonly currency: string | null
}) => (
  <li class="outcome" data-touch-id={row.touch_id} data-kind="outcome"
    data-conversion-key={conversion?.conversion_key ?? ""} data-value={conversion?.value_amount ?? ""}>
    <p class="timeline-head">
      <span class="timeline-title">Outcome: {conversion?.conversion_key ?? "not a conversion"}</span>
      <time dateTime={row.at}>{when(row.at)}</time>
    </p>
    {conversion !== undefined && (
      <dl class="timeline-facts">
        <dt>Value</dt>
        <dd>{formatMoney(conversion.value_amount, conversion.currency ?? currency)}</dd>
      </dl>
    )}
  </li>
)

export const JourneysScreen = ({ profile }: { readonly profile: MyProfile }) => {
  const people = profile.scopes.includes("customers:read")
  const usable = SELECTORS.filter((selector) => !selector.people || people)
  const [selector, setSelector] = useState<Selector>("customer_key")
  const [value, setValue] = useState("")
  const [model, setModel] = useState<string>("last_touch")
  const [busy, setBusy] = useState(false)
  const [shown, setShown] = useState<Shown | null>(null)
  const [missing, setMissing] = useState<string | null>(null)
  const [error, setError] = useState<unknown>(null)
  const heading = useFocusHeading(profile.profile_id)

  const lookUp = async (next: { readonly selector: Selector; readonly value: string; readonly model: string }) => {
    const trimmed = next.value.trim()
    setError(null)
    setMissing(null)
    if (trimmed === "") {
      setShown(null)
      setError(new Error(`Type a ${SELECTORS.find((known) => known.name === next.selector)?.label.toLowerCase()} to look up.`))
      return
    }
    setBusy(true)
    try {
      const answer = await personJourney(profile.profile_id, next.selector, trimmed, next.model, null)
      setShown({ ...next, value: trimmed, rows: answer.data, person: answer.meta.person, cursor: answer.pagination.has_next ? answer.pagination.cursor : null })
    } catch (failure) {
      if (failure instanceof SignedOut) return
      setShown(null)
      if (failure instanceof ApiError && failure.status === 404 && failure.code === "customer_not_found") setMissing(trimmed)
      else setError(failure)
    } finally {
      setBusy(false)
    }
  }

  const more = async () => {
    if (shown === null || shown.cursor === null) return
    setBusy(true)
    try {
      const answer = await personJourney(profile.profile_id, shown.selector, shown.value, shown.model, shown.cursor)
      setShown({ ...shown, rows: [...shown.rows, ...answer.data], cursor: answer.pagination.has_next ? answer.pagination.cursor : null })
    } catch (failure) {
      if (!(failure instanceof SignedOut)) setError(failure)
    } finally {
      setBusy(false)
    }
  }

  const submit = (event: Event) => {
    event.preventDefault()
    void lookUp({ selector, value, model })
  }

  const chosen = SELECTORS.find((known) => known.name === selector) ?? SELECTORS[0]!
  const conversions = new Map((shown?.person.conversions ?? []).map((conversion) => [conversion.outcome_event_id, conversion]))
  const credited = shown === null ? 0 : shown.rows.reduce((sum, row) => sum + (row.kind === "outcome" ? 0 : row.credit_share), 0)
  return (
    <section class="journeys">
      <h1 ref={heading} tabIndex={-1}>Journeys <span class="muted">· {profile.name || "Unnamed profile"}</span></h1>
      <form class="controls lookup" aria-label="Look up a customer" onSubmit={submit} noValidate>
        <label>
          Look up by
          <select id="lookup-by" value={selector} onChange={(event) => setSelector(event.currentTarget.value as Selector)}>
            {usable.map((known) => <option key={known.name} value={known.name}>{known.label}</option>)}
          </select>
        </label>
        <label>
          {chosen.label}
          <input id="lookup-value" type="text" inputMode={chosen.inputMode} value={value} autocomplete="off" spellcheck={false}
            aria-describedby="lookup-hint" onInput={(event) => setValue(event.currentTarget.value)} />
        </label>
        <label>
          Credit model
          <select id="journey-model" value={model} onChange={(event) => {
            const next = event.currentTarget.value
            setModel(next)
            // A journey on screen follows the model: the same person read again under it.
            if (shown !== null) void lookUp({ selector: shown.selector, value: shown.value, model: next })
          }}>
            {CREDIT_MODELS.map((known) => <option key={known} value={known}>{modelLabel(known)}</option>)}
          </select>
        </label>
        <button type="submit" class="primary" id="lookup-submit" disabled={busy}>{busy ? "Looking up…" : "Look up"}</button>
      </form>
      <p class="muted small" id="lookup-hint">
        {people
          ? "The customer key is the external id the events were sent with; email and phone match the person's identifiers."
          : "The customer key is the external id the events were sent with. Looking people up by email or phone needs the customers:read permission on this profile."}
      </p>
      <div aria-live="polite">
        {missing !== null && (
          <div class="notice not-found" role="status" id="journey-not-found">
            <p><strong>No customer found.</strong> No customer of this profile has the {chosen.label.toLowerCase()} <code>{missing}</code>: it is unknown, was erased, or belongs to another profile.</p>
          </div>
        )}
      </div>
      {error !== null && <ErrorPanel error={error} title="The journey could not load" />}
      {shown !== null && (
        <>
          <h2 id="journey-heading">
            {shown.person.customer_key ?? "Customer"}
            {(shown.person.first_name ?? shown.person.last_name) && (
              <span class="muted"> · {[shown.person.first_name, shown.person.last_name].filter((part) => part).join(" ")}</span>
            )}
          </h2>
          <p class="muted small" id="journey-summary">
            Touches: {shown.person.touch_count} · conversions: {shown.person.conversion_count} · credit under {modelLabel(shown.model)}
            {" "}given to the touches shown: {formatDecimal(String(credited))}
          </p>
          {shown.rows.length === 0
            ? <p class="muted">No touch or outcome recorded for this person.</p>
            : (
              <ol class="timeline" aria-labelledby="journey-heading" data-model={shown.model}>
                {shown.rows.map((row) =>
                  row.kind === "outcome"
                    ? <OutcomeItem key={row.touch_id} row={row} conversion={conversions.get(row.touch_id)} currency={profile.currency} />
                    : <TouchItem key={row.touch_id} row={row} />
                )}
              </ol>
            )}
          {shown.cursor !== null && (
            <button type="button" id="journey-more" onClick={() => void more()} disabled={busy}>{busy ? "Loading…" : "Show later events"}</button>
          )}
        </>
      )}
    </section>
  )
}
