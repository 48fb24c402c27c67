/**
 * The specification's deprecation table, as data. An operation listed here answers with
 * `Deprecation` (RFC 9745) and `Sunset` (RFC 8594) headers and a `Link` to its successor.
 * A retired operation answers 410 `feature_retired` until its sunset date; from the sunset
 * on, every listed operation answers 404 `not_found` (it no longer exists).
 */
export interface DeprecationEntry {
  readonly method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE"
  /** Path as declared by the endpoint (`:param` form, under /api/v1). */
  readonly path: string
  /** Start of the deprecation, UTC midnight. */
  readonly deprecated: string
  /** Removal date, UTC midnight. */
  readonly sunset: string
  readonly successor: string | null
  /** Retired operations no longer do their work: they answer 410 until the sunset. */
  readonly retired: boolean
}

export const deprecations: ReadonlyArray<DeprecationEntry> = [
  {
    method: "POST",
    path: "/api/v1/goals",
    deprecated: "2026-09-05",
    sunset: "2026-12-04",
    successor: "/api/v1/goals/definitions",
    retired: false
  },
  {
    method: "POST",
    path: "/api/v1/dashboard/chat",
    deprecated: "2026-10-10",
    sunset: "2027-01-08",
    successor: null,
    retired: true
  },
  {
    method: "POST",
    path: "/api/v1/workspaces/:workspaceId/top-performers/chat",
    deprecated: "2026-10-10",
    sunset: "2027-01-08",
    successor: null,
    retired: true
  }
]

const midnight = (date: string) => Date.parse(`${date}T00:00:00Z`)

/** RFC 9745: `Deprecation: @<unix seconds>`. */
export const deprecationHeader = (entry: DeprecationEntry) => `@${Math.floor(midnight(entry.deprecated) / 1000)}`

/** RFC 8594: `Sunset: <IMF-fixdate>`. */
export const sunsetHeader = (entry: DeprecationEntry) => new Date(midnight(entry.sunset)).toUTCString()

export const isPastSunset = (entry: DeprecationEntry, nowMillis: number) => nowMillis >= midnight(entry.sunset)

const byOperation = new Map(deprecations.map((entry) => [`${entry.method} ${entry.path}`, entry]))

export const findDeprecation = (method: string, path: string): DeprecationEntry | undefined =>
  byOperation.get(`${method} ${path}`)
