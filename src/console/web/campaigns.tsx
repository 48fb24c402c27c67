/**
 * Campaigns (issue 33): each campaign's spend and what the credit model gives it, from
 * GET /api/v1/campaigns with `calibrated=true`, the read a REST client makes. Where a completed
 * experiment measured a campaign's lift, its incremental conversions and factor stand in their own
 * columns beside the credited ones (decision 0124), never in their place. Sortable by any column.
 */
import { useEffect, useState } from "preact/hooks"
import { type CalibrationInterval, type CampaignLevel, type CampaignRow, campaigns, type Campaigns, type MyProfile, SignedOut } from "./client.ts"
import { onLinkClick } from "./router.ts"
import { formatDecimal, formatMoney, formatRatio, modelLabel } from "./format.ts"
import { Ago, changeRange, ErrorPanel, RangeControls, rangeOf, useFocusHeading } from "./ui.tsx"

type SortKey = "name" | "spend" | "credited" | "revenue" | "roas" | "incremental" | "factor"
type Direction = "ascending" | "descending"

const numberOf = (value: string | null | undefined): number | null => (value === null || value === undefined ? null : Number(value))

const sortValue = (row: CampaignRow, key: SortKey): string | number | null => {
  switch (key) {
    case "name":
      return (row.name ?? row.platform_id).toLowerCase()
    case "spend":
      return numberOf(row.spend)
    case "credited":
      return Number(row.credited_conversions)
    case "revenue":
      return numberOf(row.credited_revenue)
    case "roas":
      return numberOf(row.roas)
    case "incremental":
      return row.calibration?.incremental_conversions.estimate ?? null
    case "factor":
      return row.calibration?.incrementality_factor?.estimate ?? null
  }
}

/** Sorted copy; rows without a figure go last either way, ties keep the API's order. */
const sortRows = (rows: ReadonlyArray<CampaignRow>, key: SortKey, direction: Direction): ReadonlyArray<CampaignRow> => {
  const sign = direction === "ascending" ? 1 : -1
  return rows
    .map((row, index) => ({ row, index, value: sortValue(row, key) }))
    .sort((a, b) => {
      if (a.value === null || b.value === null) return a.value === b.value ? a.index - b.index : a.value === null ? 1 : -1
      const order = typeof a.value === "string" || typeof b.value === "string"
        ? String(a.value).localeCompare(String(b.value))
        : a.value - b.value
      return order === 0 ? a.index - b.index : sign * order
    })
    .map((entry) => entry.row)
}

/** "12.3 (8.1 – 16.4)": the estimate and its interval. */
const formatInterval = (interval: CalibrationInterval | null | undefined, digits: number): string => {
  if (interval === null || interval === undefined) return "—"
  const format = (value: number) => new Intl.NumberFormat("en", { maximumFractionDigits: digits, minimumFractionDigits: digits }).format(value)
  return `${format(interval.estimate)} (${format(interval.lower)} – ${format(interval.upper)})`
}

/** The levels the API reads, as the switch names them: one table, the rows of one level at a time. */
const LEVELS: ReadonlyArray<{ readonly level: CampaignLevel; readonly label: string; readonly row: string }> = [
  { level: "campaign", label: "Campaigns", row: "Campaign" },
  { level: "ad_set", label: "Ad sets", row: "Ad set" },
  { level: "ad", label: "Ads", row: "Ad" }
]

const levelOf = (query: URLSearchParams): typeof LEVELS[number] => LEVELS.find((known) => known.level === query.get("level")) ?? LEVELS[0]!

interface Column {
  readonly key: SortKey
  readonly label: string
  readonly numeric: boolean
}

/** The columns of a level: experiments measure campaigns, so the measured columns are the campaign level's only. */
const columnsOf = (level: typeof LEVELS[number]): ReadonlyArray<Column> => [
  { key: "name", label: level.row, numeric: false },
  { key: "spend", label: "Spend", numeric: true },
  { key: "credited", label: "Credited conversions", numeric: true },
  { key: "revenue", label: "Credited value", numeric: true },
  { key: "roas", label: "ROAS", numeric: true },
  ...(level.level === "campaign"
    ? [
      { key: "incremental", label: "Incremental conversions", numeric: true },
      { key: "factor", label: "Incrementality factor", numeric: true }
    ] as const
    : [])
]

/** A column header: a button (click, Enter or Space) that sorts; `aria-sort` on the sorted one. */
const SortHeader = ({ column, sort, onSort }: {
  readonly column: Column
  readonly sort: { readonly key: SortKey; readonly direction: Direction } | null
  readonly onSort: (key: SortKey) => void
}) => {
  const direction = sort !== null && sort.key === column.key ? sort.direction : null
  return (
    <th scope="col" class={column.numeric ? "num" : undefined} aria-sort={direction ?? undefined}>
      <button type="button" class="sort" id={`sort-${column.key}`} onClick={() => onSort(column.key)}>
        {column.label}
        <span aria-hidden="true" class="sort-mark">{direction === null ? "" : direction === "ascending" ? " ▲" : " ▼"}</span>
      </button>
    </th>
  )
}

export const CampaignsScreen = ({ profile, query }: { readonly profile: MyProfile; readonly query: URLSearchParams }) => {
  const { days, model } = rangeOf(query)
  const level = levelOf(query)
  const columns = columnsOf(level)
  const [loaded, setLoaded] = useState<Campaigns | null>(null)
  const [error, setError] = useState<unknown>(null)
  // Null: the API's own order until a header is chosen.
  const [sort, setSort] = useState<{ readonly key: SortKey; readonly direction: Direction } | null>(null)
  const heading = useFocusHeading(profile.profile_id)

  useEffect(() => {
    let current = true
    setError(null)
    setLoaded(null)
    campaigns({ profile_id: profile.profile_id, days, model }, level.level).then(
      (answer) => {
        if (current) setLoaded(answer)
      },
      (failure: unknown) => {
        if (!current || failure instanceof SignedOut) return
        setLoaded(null)
        setError(failure)
      }
    )
    return () => {
      current = false
    }
  }, [profile.profile_id, days, model, level.level])

  const path = `/console/${profile.profile_id}/campaigns`
  const change = (next: { readonly days?: number; readonly model?: string }) =>
    changeRange(path, { days, model }, next, level.level === "campaign" ? {} : { level: level.level })
  const levelHref = (to: CampaignLevel) =>
    `${path}?${new URLSearchParams({ days: String(days), model, ...(to === "campaign" ? {} : { level: to }) }).toString()}`

  // A first choice of a figure puts the largest first; choosing the sorted column again turns it round.
  const onSort = (key: SortKey) =>
    setSort((previous) =>
      previous?.key === key
        ? { key, direction: previous.direction === "ascending" ? "descending" : "ascending" }
        : { key, direction: key === "name" ? "ascending" : "descending" }
    )

  const currency = loaded?.meta.currency ?? profile.currency
  const rows = loaded === null ? [] : sort === null ? loaded.data : sortRows(loaded.data, sort.key, sort.direction)
  const sortedLabel = sort === null ? "" : `, sorted by ${columns.find((column) => column.key === sort.key)?.label} ${sort.direction}`
  return (
    <section class="campaigns" aria-busy={loaded === null && error === null}>
      <div class="heading-row">
        <h1 ref={heading} tabIndex={-1}>Campaigns <span class="muted">· {profile.name || "Unnamed profile"}</span></h1>
        {loaded !== null && <Ago asOf={loaded.meta.as_of} />}
      </div>
      <RangeControls days={days} model={model} onChange={change} />
      <nav class="levels" aria-label="Level">
        {LEVELS.map((known) => (
          <a key={known.level} href={levelHref(known.level)} onClick={(event) => onLinkClick(event, levelHref(known.level))} id={`level-${known.level}`}
            aria-current={known.level === level.level ? "page" : undefined}>{known.label}</a>
        ))}
      </nav>
      {error !== null && <ErrorPanel error={error} title="The campaigns could not load" />}
      {error === null && loaded === null && <p class="loading">Loading the campaigns…</p>}
      {error === null && loaded !== null && (
        <>
          <p class="muted small" id="range-shown">
            {loaded.meta.range.start} to {loaded.meta.range.end} · {modelLabel(loaded.meta.model)}
          </p>
          <table class="breakdown campaigns-table" aria-describedby={level.level === "campaign" ? "factor-caption" : undefined}>
            <caption class="visually-hidden">{level.label}{sortedLabel}</caption>
            <thead>
              <tr>{columns.map((column) => <SortHeader key={column.key} column={column} sort={sort} onSort={onSort} />)}</tr>
            </thead>
            <tbody>
              {rows.length === 0 && <tr><td colSpan={columns.length} class="muted">No {level.row.toLowerCase()} has spend or credit in this range.</td></tr>}
              {rows.map((row) => (
                <tr key={row.platform_id} data-platform-id={row.platform_id} data-spend={row.spend ?? ""}
                  data-credited={row.credited_conversions} data-revenue={row.credited_revenue ?? ""} data-roas={row.roas ?? ""}
                  data-incremental={row.calibration?.incremental_conversions.estimate ?? ""}
                  data-factor={row.calibration?.incrementality_factor?.estimate ?? ""}>
                  <th scope="row">
                    {row.name ?? row.platform_id}
                    {row.name !== null && <span class="muted small"> · {row.platform_id}</span>}
                  </th>
                  <td class="num">{formatMoney(row.spend, currency)}</td>
                  <td class="num">{formatDecimal(row.credited_conversions)}</td>
                  <td class="num">{formatMoney(row.credited_revenue, currency)}</td>
                  <td class="num">{formatRatio(row.roas)}</td>
                  {level.level === "campaign" && (
                    <>
                      <td class="num measured">{formatInterval(row.calibration?.incremental_conversions, 1)}</td>
                      <td class="num measured">
                        {formatInterval(row.calibration?.incrementality_factor, 2)}
                        {row.calibration?.stale === true && <span class="muted small"> (over 90 days old)</span>}
                      </td>
                    </>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
          {level.level === "campaign" && <p class="muted small" id="factor-caption">
            Incremental conversions are what a completed experiment measured the campaign added (95 % interval); the
            incrementality factor is that measured lift over the conversions the model credits it for the same days: below 1,
            the model credits the campaign more than it added. “—” where no experiment has completed on the campaign.
          </p>}
        </>
      )}
    </section>
  )
}
