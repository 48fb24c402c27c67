/**
 * What every screen shares: the focus on a page's heading, how a failed call is shown, the range
 * and credit model a screen reads (from its address) and "updated N s ago".
 */
import { useEffect, useRef, useState } from "preact/hooks"
import { ApiError, CREDIT_MODELS } from "./client.ts"
import { modelLabel, updatedAgo } from "./format.ts"
import { navigate } from "./router.ts"

/** Where a page starts: its heading takes focus, so a screen reader and the keyboard begin there. */
export const useFocusHeading = (key: unknown) => {
  const heading = useRef<HTMLHeadingElement>(null)
  useEffect(() => {
    heading.current?.focus({ preventScroll: true })
  }, [key])
  return heading
}

/** A failed call: what the service said, and the request id to quote to support. */
export const ErrorPanel = ({ error, title }: { readonly error: unknown; readonly title?: string }) => {
  const apiError = error instanceof ApiError ? error : null
  return (
    <div class="error-panel" role="alert">
      <p class="error-title">{title ?? "Something went wrong"}</p>
      <p class="error-message">{apiError?.message ?? (error instanceof Error ? error.message : String(error))}</p>
      {apiError !== null && (
        <p class="error-meta">
          {apiError.code !== "unknown" && <>Code <code>{apiError.code}</code> · </>}
          Request id <code class="request-id">{apiError.requestId ?? "none"}</code>
        </p>
      )}
    </div>
  )
}


/** The ranges a screen offers, in days ending today. */
export const RANGES = [7, 30, 90, 365] as const
const DEFAULT_DAYS = 30

/** A screen's range and credit model from its address; anything unknown falls back to the defaults. */
export const rangeOf = (query: URLSearchParams) => {
  const days = Number(query.get("days"))
  const model = query.get("model") ?? "last_touch"
  return {
    days: RANGES.some((range) => range === days) ? days : DEFAULT_DAYS,
    model: CREDIT_MODELS.some((known) => known === model) ? model : "last_touch"
  }
}

/** A screen's address with its range or model changed (replacing the entry: a selector is not a page). */
export const changeRange = (
  path: string,
  current: { readonly days: number; readonly model: string },
  next: { readonly days?: number; readonly model?: string },
  /** The screen's other parameters, kept as they are (the Campaigns' level). */
  keep: Readonly<Record<string, string>> = {}
): void => {
  const params = new URLSearchParams({ days: String(next.days ?? current.days), model: next.model ?? current.model, ...keep })
  navigate(`${path}?${params.toString()}`, { replace: true })
}

/** The range and credit model selectors; a change goes into the screen's address. */
export const RangeControls = ({ days, model, onChange }: {
  readonly days: number
  readonly model: string
  readonly onChange: (next: { readonly days?: number; readonly model?: string }) => void
}) => (
  <form class="controls" aria-label="Range and credit model" onSubmit={(event) => event.preventDefault()}>
    <label>
      Range
      <select id="range" value={String(days)} onChange={(event) => onChange({ days: Number(event.currentTarget.value) })}>
        {RANGES.map((range) => <option key={range} value={String(range)}>Last {range} days</option>)}
      </select>
    </label>
    <label>
      Credit model
      <select id="model" value={model} onChange={(event) => onChange({ model: event.currentTarget.value })}>
        {CREDIT_MODELS.map((known) => <option key={known} value={known}>{modelLabel(known)}</option>)}
      </select>
    </label>
  </form>
)

/** `meta.as_of` as "updated N s ago", ticking each second. */
export const Ago = ({ asOf }: { readonly asOf: string }) => {
  const [now, setNow] = useState(Date.now())
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), 1000)
    return () => window.clearInterval(timer)
  }, [])
  return <span id="as-of" class="muted" data-as-of={asOf} title={asOf}>{updatedAgo(asOf, now)}</span>
}
