/**
 * Overview (issue 33): outcomes, value, spend, ROAS and CAC of a range, a daily chart and the
 * credit by channel, from GET /api/v1/overview, /timeseries and /breakdowns/channel, the
 * operations a REST client calls. The range and the credit model are in the address.
 */
import { useEffect, useRef, useState } from "preact/hooks"
import uPlot from "uplot"
import {
  type Breakdown,
  channelBreakdown,
  type MyProfile,
  type Overview,
  overview,
  SignedOut,
  type Timeseries,
  timeseries
} from "./client.ts"
import { Ago, changeRange, ErrorPanel, RangeControls, rangeOf, useFocusHeading } from "./ui.tsx"
import { cac, formatCount, formatDecimal, formatMoney, formatRatio, modelLabel } from "./format.ts"

interface Loaded {
  readonly overview: Overview
  readonly series: Timeseries
  readonly channels: Breakdown
}

const Kpi = ({ id, label, value, shown, previous }: {
  readonly id: string
  readonly label: string
  /** The API's exact figure, kept on the element for anyone (a test, a copy) who needs it unrounded. */
  readonly value: string
  readonly shown: string
  readonly previous: string
}) => (
  <div class="kpi" id={`kpi-${id}`} data-value={value}>
    <dt>{label}</dt>
    <dd>
      <span class="kpi-value">{shown}</span>
      <span class="kpi-previous">previous period {previous}</span>
    </dd>
  </div>
)

/** The daily chart: outcomes on the left axis, value and spend on the right. */
const Chart = ({ series, currency }: { readonly series: Timeseries; readonly currency: string | null }) => {
  const holder = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const element = holder.current
    if (element === null) return
    const points = series.data
    const x = points.map((point) => Date.parse(`${point.date}T00:00:00Z`) / 1000)
    const money = (value: string | null) => (value === null ? null : Number(value))
    const plot = new uPlot(
      {
        width: Math.max(320, element.clientWidth),
        height: 260,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), "Etc/UTC"),
        legend: { live: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: true }, count: { auto: true }, money: { auto: true } },
        axes: [
          {},
          { scale: "count", label: "Outcomes" },
          { scale: "money", side: 1, label: currency === null ? "Amount" : currency, grid: { show: false } }
        ],
        series: [
          {},
          { label: "Outcomes", scale: "count", stroke: "#0b63c5", width: 2, fill: "rgba(11,99,197,0.08)" },
          { label: "Value", scale: "money", stroke: "#1a7f37", width: 2 },
          { label: "Spend", scale: "money", stroke: "#b35900", width: 2, dash: [6, 4] }
        ]
      },
      [x, points.map((point) => point.outcomes), points.map((point) => money(point.revenue)), points.map((point) => money(point.spend))],
      element
    )
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(320, element.clientWidth), height: 260 }))
    resize.observe(element)
    return () => {
      resize.disconnect()
      plot.destroy()
    }
  }, [series, currency])
  const total = series.data.reduce((sum, point) => sum + point.outcomes, 0)
  return (
    <figure class="chart">
      <div
        ref={holder}
        role="img"
        aria-label={`Daily outcomes, value and spend from ${series.meta.range.start} to ${series.meta.range.end}: ${total} outcomes in ${series.data.length} days.`}
      />
      <figcaption class="muted small">Per day in the profile's time zone.</figcaption>
    </figure>
  )
}

export const OverviewScreen = ({ profile, query }: { readonly profile: MyProfile; readonly query: URLSearchParams }) => {
  const { days, model } = rangeOf(query)
  const [loaded, setLoaded] = useState<Loaded | null>(null)
  const [error, setError] = useState<unknown>(null)
  const heading = useFocusHeading(profile.profile_id)

  useEffect(() => {
    let current = true
    setError(null)
    const range = { profile_id: profile.profile_id, days, model }
    // All three or none: a screen never shows one read beside another's failure.
    Promise.all([overview(range), timeseries(range), channelBreakdown(range)]).then(
      ([overviewAnswer, seriesAnswer, channelsAnswer]) => {
        if (current) setLoaded({ overview: overviewAnswer, series: seriesAnswer, channels: channelsAnswer })
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
  }, [profile.profile_id, days, model])

  const change = (next: { readonly days?: number; readonly model?: string }) =>
    changeRange(`/console/${profile.profile_id}/overview`, { days, model }, next)

  const data = loaded?.overview.data
  const currency = data?.currency ?? profile.currency
  return (
    <section class="overview" aria-busy={loaded === null && error === null}>
      <div class="heading-row">
        <h1 ref={heading} tabIndex={-1}>Overview <span class="muted">· {profile.name || "Unnamed profile"}</span></h1>
        {loaded !== null && <Ago asOf={loaded.overview.meta.as_of} />}
      </div>
      <RangeControls days={days} model={model} onChange={change} />
      {error !== null && <ErrorPanel error={error} title="The overview could not load" />}
      {error === null && (loaded === null || data === undefined) && <p class="loading">Loading the overview…</p>}
      {error === null && loaded !== null && data !== undefined && (
        <>
          <p class="muted small" id="range-shown">
            {data.current.start} to {data.current.end} · {modelLabel(data.model)} · {data.time_zone}
          </p>
          <dl class="kpis">
            <Kpi id="outcomes" label="Outcomes" value={String(data.current.outcomes)} shown={formatCount(data.current.outcomes)}
              previous={formatCount(data.previous.outcomes)} />
            <Kpi id="value" label="Value" value={data.current.revenue ?? ""} shown={formatMoney(data.current.revenue, currency)}
              previous={formatMoney(data.previous.revenue, currency)} />
            <Kpi id="spend" label="Spend" value={data.current.spend ?? ""} shown={formatMoney(data.current.spend, currency)}
              previous={formatMoney(data.previous.spend, currency)} />
            <Kpi id="roas" label="ROAS" value={data.current.roas ?? ""} shown={formatRatio(data.current.roas)}
              previous={formatRatio(data.previous.roas)} />
            <Kpi id="cac" label="CAC" value={cac(data.current.spend, data.current.outcomes) ?? ""}
              shown={formatMoney(cac(data.current.spend, data.current.outcomes), currency)}
              previous={formatMoney(cac(data.previous.spend, data.previous.outcomes), currency)} />
          </dl>
          {!data.spend_measured && <p class="muted small">No spend is imported for this profile: ROAS and CAC need it.</p>}
          <h2>By day</h2>
          <Chart series={loaded.series} currency={currency} />
          <h2 id="channels-heading">By channel</h2>
          <table class="breakdown" aria-labelledby="channels-heading">
            <thead>
              <tr>
                <th scope="col">Channel</th>
                <th scope="col" class="num">Touches</th>
                <th scope="col" class="num">Conversions</th>
                <th scope="col" class="num">Credited ({modelLabel(data.model)})</th>
                <th scope="col" class="num">Credited value</th>
              </tr>
            </thead>
            <tbody>
              {loaded.channels.data.length === 0 && (
                <tr><td colSpan={5} class="muted">No touches in this range.</td></tr>
              )}
              {loaded.channels.data.map((row) => (
                <tr key={row.value ?? ""} data-channel={row.value ?? ""} data-credited={row.credited_conversions}
                  data-revenue={row.credited_revenue ?? ""}>
                  <th scope="row">{row.value ?? "(none)"}</th>
                  <td class="num">{formatCount(row.touches)}</td>
                  <td class="num">{formatCount(row.conversions)}</td>
                  <td class="num">{formatDecimal(row.credited_conversions)}</td>
                  <td class="num">{formatMoney(row.credited_revenue, currency)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  )
}
