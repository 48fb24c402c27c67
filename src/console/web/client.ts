/**
 * The console's only way to the service: /api/v1 over fetch, with the session cookie and, on
 * unsafe methods, the CSRF token the sign-in answered (decision 0021). An error answers the
 * envelope `{"error":{"code","message","request_id"}}`; it is thrown as an ApiError carrying
 * both, so a screen can show them. A 401 on a signed-in call means the session ended: the
 * browser goes back to sign-in, keeping the address the person wanted.
 */

const CSRF_KEY = "svc.console.csrf"

export class ApiError extends Error {
  readonly status: number
  readonly code: string
  readonly requestId: string | null
  constructor(status: number, code: string, message: string, requestId: string | null) {
    super(message)
    this.status = status
    this.code = code
    this.requestId = requestId
  }
}

/** Thrown after the browser was sent to sign-in: the screen that called stops there. */
export class SignedOut extends Error {}

export const csrfToken = (): string | null => window.localStorage.getItem(CSRF_KEY)
export const rememberCsrfToken = (token: string | null): void => {
  if (token === null) window.localStorage.removeItem(CSRF_KEY)
  else window.localStorage.setItem(CSRF_KEY, token)
}

/** Only console addresses of this origin are a place to go back to after sign-in. */
export const safeNext = (next: string | null): string =>
  next !== null && /^\/console(\/|$|\?)/.test(next) && !next.startsWith("//") ? next : "/console"

export const signInAddress = (wanted: string): string => `/?next=${encodeURIComponent(wanted)}`

let sentToSignIn = false

const goToSignIn = (): never => {
  // A screen's parallel reads all see the 401: one navigation, not one that the next cancels.
  if (!sentToSignIn) {
    sentToSignIn = true
    rememberCsrfToken(null)
    const here = window.location.pathname + window.location.search
    window.location.assign(here.startsWith("/console") ? signInAddress(here) : "/")
  }
  throw new SignedOut("signed out")
}

export interface RequestOptions {
  readonly method?: "GET" | "POST" | "DELETE" | "PUT" | "PATCH"
  readonly query?: Record<string, string | number | undefined>
  readonly body?: unknown
  /** Default true: a 401 sends the browser to sign-in. The sign-in call itself answers 401 for a wrong password. */
  readonly signedIn?: boolean
}

const errorOf = async (response: Response): Promise<ApiError> => {
  const headerId = response.headers.get("x-request-id")
  try {
    const body = (await response.json()) as { error?: { code?: unknown; message?: unknown; request_id?: unknown } }
    const error = body.error ?? {}
    return new ApiError(
      response.status,
      typeof error.code === "string" ? error.code : "unknown",
      typeof error.message === "string" ? error.message : `The service answered ${response.status}.`,
      typeof error.request_id === "string" ? error.request_id : headerId
    )
  } catch {
    return new ApiError(response.status, "unknown", `The service answered ${response.status} without an error body.`, headerId)
  }
}

const addressOf = (path: string, query: RequestOptions["query"]): string => {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined) search.set(name, String(value))
  return `/api/v1${path}${search.size === 0 ? "" : `?${search.toString()}`}`
}

/** GETs started before the screens render (see `prefetch`), each taken once by the request that asks for it. */
const started = new Map<string, Promise<Response>>()

const get = (address: string): Promise<Response> =>
  fetch(address, { method: "GET", headers: { accept: "application/json" }, credentials: "same-origin" })

/**
 * Starts GETs the first screen will make, as soon as the script runs: the page's reads go out
 * together instead of after the person's profiles arrive. A read nobody takes is dropped.
 */
export const prefetch = (path: string, query?: RequestOptions["query"]): void => {
  const address = addressOf(path, query)
  if (!started.has(address)) started.set(address, get(address))
}

export const request = async <T>(path: string, options: RequestOptions = {}): Promise<T> => {
  const method = options.method ?? "GET"
  const address = addressOf(path, options.query)
  const headers: Record<string, string> = { accept: "application/json" }
  if (options.body !== undefined) headers["content-type"] = "application/json"
  const token = csrfToken()
  if (method !== "GET" && token !== null) headers["x-csrf-token"] = token
  const early = method === "GET" && options.body === undefined ? started.get(address) : undefined
  started.delete(address)
  let response: Response
  try {
    response = await (early ?? fetch(address, {
      method,
      headers,
      credentials: "same-origin",
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) })
    }))
  } catch {
    throw new ApiError(0, "network", "The service could not be reached. Check the connection and try again.", null)
  }
  if (response.status === 401 && options.signedIn !== false) return goToSignIn()
  if (!response.ok) throw await errorOf(response)
  if (response.status === 204) return undefined as T
  return (await response.json()) as T
}

/**
 * A file the API answers (a report's CSV or PDF), fetched with the session like any read and
 * saved through a Blob URL: a refusal shows its message instead of being saved as the file.
 */
export const downloadFile = async (path: string, query: RequestOptions["query"], filename: string): Promise<void> => {
  let response: Response
  try {
    response = await fetch(addressOf(path, query), { method: "GET", credentials: "same-origin" })
  } catch {
    throw new ApiError(0, "network", "The service could not be reached. Check the connection and try again.", null)
  }
  if (response.status === 401) return goToSignIn()
  if (!response.ok) throw await errorOf(response)
  const url = URL.createObjectURL(await response.blob())
  const link = document.createElement("a")
  link.href = url
  link.download = filename
  document.body.append(link)
  link.click()
  link.remove()
  // The click has handed the Blob to the download; the URL is no longer needed.
  window.setTimeout(() => URL.revokeObjectURL(url), 10_000)
}

// --- The operations the console calls (their shapes as openapi.json states them) -------------

export interface Session {
  readonly user_id: string
  readonly email: string
  readonly csrf_token: string
  readonly expires_at: string
}

export interface Person {
  readonly id: string
  readonly email: string
  readonly first_name: string | null
  readonly last_name: string | null
}

export interface MyProfile {
  readonly profile_id: string
  readonly name: string
  readonly workspace_id: string
  readonly workspace_name: string
  readonly currency: string | null
  readonly time_zone: string
  readonly workspace_role: string
  readonly profile_role: string | null
  readonly scopes: ReadonlyArray<string>
}

export interface OverviewPeriod {
  readonly start: string
  readonly end: string
  readonly outcomes: number
  readonly credited_conversions: string
  readonly revenue: string | null
  readonly spend: string | null
  readonly roas: string | null
}

export interface Overview {
  readonly data: {
    readonly model: string
    readonly time_zone: string
    readonly currency: string | null
    readonly spend_measured: boolean
    readonly current: OverviewPeriod
    readonly previous: OverviewPeriod
  }
  readonly meta: { readonly as_of: string }
}

export interface TimeseriesPoint {
  readonly date: string
  readonly outcomes: number
  readonly credited_conversions: string
  readonly revenue: string | null
  readonly spend: string | null
}

export interface Timeseries {
  readonly data: ReadonlyArray<TimeseriesPoint>
  readonly meta: { readonly as_of: string; readonly range: { readonly start: string; readonly end: string; readonly days: number } }
}

export interface BreakdownRow {
  readonly value: string | null
  readonly touches: number
  readonly conversions: number
  readonly credited_conversions: string
  readonly credited_revenue: string | null
}

export interface Breakdown {
  readonly data: ReadonlyArray<BreakdownRow>
  readonly meta: { readonly as_of: string }
}

export const CREDIT_MODELS = ["last_touch", "first_touch", "last_non_direct", "linear", "time_decay", "svc_model"] as const

export const signIn = (email: string, password: string) =>
  request<{ readonly data: Session }>("/sessions", { method: "POST", body: { email, password }, signedIn: false })
export const signOut = () => request<void>("/sessions/current", { method: "DELETE" })
/** Who is signed in, or null when nobody is (the sign-in page asks without being sent anywhere). */
export const whoIsSignedIn = async (): Promise<Person | null> => {
  try {
    const me = await request<{ readonly data: { readonly kind: string; readonly user?: Person } }>("/me", { signedIn: false })
    return me.data.kind === "session" && me.data.user !== undefined ? me.data.user : null
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return null
    throw error
  }
}
export const me = () => request<{ readonly data: { readonly kind: string; readonly user: Person } }>("/me")
export const myProfiles = () => request<{ readonly data: ReadonlyArray<MyProfile> }>("/me/profiles")

export interface AnalyticsRange {
  readonly profile_id: string
  readonly days: number
  readonly model: string
}
export const overview = (range: AnalyticsRange) => request<Overview>("/overview", { query: { ...range } })
export const timeseries = (range: AnalyticsRange) => request<Timeseries>("/timeseries", { query: { ...range } })
export const channelBreakdown = (range: AnalyticsRange) =>
  request<Breakdown>("/breakdowns/channel", { query: { ...range, limit: 50 } })

/** `calibration.incremental_conversions` and `.incrementality_factor`: an estimate and its interval. */
export interface CalibrationInterval {
  readonly estimate: number
  readonly lower: number
  readonly upper: number
  readonly level: number
}

export interface CampaignCalibration {
  readonly experiment_id: string
  readonly kind: string
  readonly analysed: { readonly start: string; readonly end: string }
  readonly stale: boolean
  readonly credited_conversions: number
  readonly incremental_conversions: CalibrationInterval
  readonly incrementality_factor: CalibrationInterval | null
}

export interface CampaignRow {
  readonly platform_id: string
  readonly name: string | null
  readonly status: string | null
  readonly outcome_count: number
  readonly credited_conversions: string
  readonly credited_revenue: string | null
  readonly spend: string | null
  readonly roas: string | null
  readonly cac: string | null
  /** Present with `calibrated=true`; null without a completed experiment. */
  readonly calibration?: CampaignCalibration | null
}

export interface Campaigns {
  readonly data: ReadonlyArray<CampaignRow>
  readonly meta: { readonly as_of: string; readonly currency: string | null; readonly model: string; readonly range: { readonly start: string; readonly end: string } }
}

/** Campaign rows (level campaign) with each one's measured incrementality beside its credit. */
export type CampaignLevel = "campaign" | "ad_set" | "ad"

/** The rows of a level; measured incrementality is asked for (and answered) at the campaign level only. */
export const campaigns = (range: AnalyticsRange, level: CampaignLevel = "campaign") =>
  request<Campaigns>("/campaigns", { query: { ...range, level, ...(level === "campaign" ? { calibrated: "true" } : {}) } })
