/** How the console writes numbers: the API's exact decimals, shown rounded for people. */

export const formatCount = (value: number): string => new Intl.NumberFormat("en").format(value)

export const formatMoney = (value: string | null, currency: string | null): string => {
  if (value === null) return "—"
  const amount = Number(value)
  return currency === null
    ? new Intl.NumberFormat("en", { maximumFractionDigits: 2, minimumFractionDigits: 2 }).format(amount)
    : new Intl.NumberFormat("en", { style: "currency", currency }).format(amount)
}

export const formatRatio = (value: string | null): string =>
  value === null ? "—" : `${new Intl.NumberFormat("en", { maximumFractionDigits: 2, minimumFractionDigits: 2 }).format(Number(value))}×`

export const formatDecimal = (value: string): string =>
  new Intl.NumberFormat("en", { maximumFractionDigits: 2 }).format(Number(value))

/**
 * Cost per acquisition: spend over outcomes, as a decimal string with two places; null when
 * spend is not measured or there is no outcome. The API gives spend and outcomes; CAC is their quotient.
 */
export const cac = (spend: string | null, outcomes: number): string | null =>
  spend === null || outcomes === 0 ? null : (Number(spend) / outcomes).toFixed(2)

/** "updated 12 s ago" from `meta.as_of`; never negative (the browser's clock may run behind). */
export const updatedAgo = (asOf: string, now: number): string => {
  const seconds = Math.max(0, Math.round((now - Date.parse(asOf)) / 1000))
  if (seconds < 120) return `updated ${seconds} s ago`
  const minutes = Math.round(seconds / 60)
  if (minutes < 120) return `updated ${minutes} min ago`
  return `updated ${Math.round(minutes / 60)} h ago`
}

export const modelLabel = (model: string): string =>
  ({
    last_touch: "Last touch",
    first_touch: "First touch",
    last_non_direct: "Last non-direct",
    linear: "Linear",
    time_decay: "Time decay",
    svc_model: "Data-driven"
  } as Record<string, string>)[model] ?? model
