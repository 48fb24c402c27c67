/**
 * The internal write path of analytics inputs (decision 0041): ad spend and FX rates, imported by
 * operators from CSV files (`svc spend import`, `svc fx import`) and by tests through the same
 * functions. There is no public HTTP write of either. Both are idempotent upserts on their keys:
 * importing a file again, or a corrected file, leaves one row per key with the latest values.
 *
 * Spend CSV: header `profile_id,platform,day,campaign_id,ad_set_id,ad_id,currency,amount`; `day`
 * is the calendar day in the profile's time zone, `amount` an exact decimal in `currency` (the ad
 * account's), empty campaign/ad set ids allowed.
 *
 * FX CSV: the ECB euro reference rates file as published (`eurofxref-hist.csv` or
 * `eurofxref.csv`: a `Date` column, then one column per currency, rates per 1 EUR, `N/A` where
 * there is none), or the long form `day,base,quote,rate`.
 */
import { Context, Effect, Layer, Result } from "effect"
import { type DatabaseUnavailable, ValidationError } from "../../../schema/errors.ts"
import { isCalendarDate } from "../../../schema/events.ts"
import { normaliseAmount } from "../../kernel/money.ts"
import { AnalyticsImportsRepo, type FxRow, type SpendRow, type SyncedSpendRow, type TargetSpend } from "./repo.ts"

export type { FxRow, SpendRow, SyncedSpendRow, TargetSpend } from "./repo.ts"

const CURRENCY = /^[A-Z]{3}$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Minimal CSV: comma-separated, optional double quotes ("" inside quotes is a quote), CR/LF lines. */
export const parseCsv = (text: string): Array<Array<string>> => {
  const rows: Array<Array<string>> = []
  let row: Array<string> = []
  let field = ""
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]
    if (quoted) {
      if (ch === "\"" && text[i + 1] === "\"") {
        field += "\""
        i++
      } else if (ch === "\"") quoted = false
      else field += ch
    } else if (ch === "\"") quoted = true
    else if (ch === ",") {
      row.push(field.trim())
      field = ""
    } else if (ch === "\n" || ch === "\r") {
      if (ch === "\r" && text[i + 1] === "\n") i++
      row.push(field.trim())
      if (row.some((cell) => cell !== "")) rows.push(row)
      row = []
      field = ""
    } else field += ch
  }
  row.push(field.trim())
  if (row.some((cell) => cell !== "")) rows.push(row)
  return rows
}

const refuse = (line: number, message: string) => new ValidationError({ message: `line ${line}: ${message}` })

const amountOf = (line: number, raw: string, what: string, positive: boolean): Result.Result<string, ValidationError> => {
  const normalised = normaliseAmount(raw)
  if (Result.isFailure(normalised)) return Result.fail(refuse(line, `${what}: ${normalised.failure}`))
  const value = normalised.success
  if (value.startsWith("-") || (positive && value === "0")) return Result.fail(refuse(line, `${what}: must be ${positive ? "above" : "at least"} 0`))
  return Result.succeed(value)
}

const SPEND_HEADER = ["profile_id", "platform", "day", "campaign_id", "ad_set_id", "ad_id", "currency", "amount"]

/** The rows of a spend CSV, or the first line that is wrong. */
export const parseSpendCsv = (text: string): Result.Result<Array<SpendRow>, ValidationError> => {
  const [header, ...lines] = parseCsv(text)
  if (header === undefined || header.join(",").toLowerCase() !== SPEND_HEADER.join(",")) {
    return Result.fail(refuse(1, `expected the header ${SPEND_HEADER.join(",")}`))
  }
  const rows: Array<SpendRow> = []
  for (const [index, cells] of lines.entries()) {
    const line = index + 2
    if (cells.length !== SPEND_HEADER.length) return Result.fail(refuse(line, `expected ${SPEND_HEADER.length} columns, got ${cells.length}`))
    const [profileId = "", platform = "", day = "", campaignId = "", adSetId = "", adId = "", currency = "", amount = ""] = cells
    if (!UUID.test(profileId)) return Result.fail(refuse(line, "profile_id: not a UUID"))
    if (platform === "" || platform.length > 100) return Result.fail(refuse(line, "platform: 1 to 100 characters"))
    if (!isCalendarDate(day)) return Result.fail(refuse(line, "day: not a calendar date (YYYY-MM-DD)"))
    if (adId === "" || adId.length > 200) return Result.fail(refuse(line, "ad_id: 1 to 200 characters"))
    if (!CURRENCY.test(currency)) return Result.fail(refuse(line, "currency: three upper-case letters"))
    const checked = amountOf(line, amount, "amount", false)
    if (Result.isFailure(checked)) return Result.fail(checked.failure)
    rows.push({
      profileId: profileId.toLowerCase(),
      platform,
      day,
      campaignId: campaignId === "" ? null : campaignId,
      adSetId: adSetId === "" ? null : adSetId,
      adId,
      currency,
      amount: checked.success
    })
  }
  return Result.succeed(rows)
}

/** The rates of an FX CSV (ECB wide form or long form), or the first line that is wrong. */
export const parseFxCsv = (text: string): Result.Result<Array<FxRow>, ValidationError> => {
  const [header, ...lines] = parseCsv(text)
  if (header === undefined) return Result.fail(refuse(1, "empty file"))
  const rows: Array<FxRow> = []
  if (header.join(",").toLowerCase() === "day,base,quote,rate") {
    for (const [index, cells] of lines.entries()) {
      const line = index + 2
      const [day = "", base = "", quote = "", rate = ""] = cells
      if (!isCalendarDate(day)) return Result.fail(refuse(line, "day: not a calendar date (YYYY-MM-DD)"))
      if (!CURRENCY.test(base) || !CURRENCY.test(quote) || base === quote) return Result.fail(refuse(line, "base and quote: two different currencies"))
      const checked = amountOf(line, rate, "rate", true)
      if (Result.isFailure(checked)) return Result.fail(checked.failure)
      rows.push({ day, base, quote, rate: checked.success })
    }
    return Result.succeed(rows)
  }
  if (header[0]?.toLowerCase() !== "date") return Result.fail(refuse(1, "expected the ECB header (Date,USD,...) or day,base,quote,rate"))
  const quotes = header.slice(1)
  for (const [i, quote] of quotes.entries()) {
    if (quote !== "" && (!CURRENCY.test(quote) || quote === "EUR")) return Result.fail(refuse(1, `column ${i + 2}: not a currency`))
  }
  for (const [index, cells] of lines.entries()) {
    const line = index + 2
    const day = cells[0] ?? ""
    if (!isCalendarDate(day)) return Result.fail(refuse(line, "Date: not a calendar date (YYYY-MM-DD)"))
    for (const [i, quote] of quotes.entries()) {
      const raw = cells[i + 1] ?? ""
      if (quote === "" || raw === "" || raw === "N/A") continue
      const checked = amountOf(line, raw, quote, true)
      if (Result.isFailure(checked)) return Result.fail(checked.failure)
      rows.push({ day, base: "EUR", quote, rate: checked.success })
    }
  }
  return Result.succeed(rows)
}

export class AnalyticsImports extends Context.Service<AnalyticsImports, {
  /** Upserts spend rows (one per profile, platform, day and ad); answers how many rows were written. */
  readonly upsertSpend: (rows: ReadonlyArray<SpendRow>) => Effect.Effect<number, DatabaseUnavailable | ValidationError>
  readonly upsertFxRates: (rows: ReadonlyArray<FxRow>, source?: string) => Effect.Effect<number, DatabaseUnavailable>
  /**
   * Upserts the days an ad platform sync read (source `sync`, src/ingestion/sync/worker.ts): the
   * amount, impressions, clicks and the platform's reported conversions and chats.
   */
  readonly upsertSyncedSpend: (rows: ReadonlyArray<SyncedSpendRow>) => Effect.Effect<void, DatabaseUnavailable>
  /** A campaign's or ad set's spend per day in the profile's currency (experiments' incremental ROAS, issue 32). */
  readonly targetSpend: (
    profileId: string,
    level: "campaign" | "ad_set",
    id: string,
    days: ReadonlyArray<string>
  ) => Effect.Effect<TargetSpend, DatabaseUnavailable>
}>()("svc/AnalyticsImports") {
  static readonly layer = Layer.effect(AnalyticsImports)(
    Effect.gen(function*() {
      const repo = yield* AnalyticsImportsRepo

      const upsertSpend = Effect.fn("AnalyticsImports.upsertSpend")(function*(rows: ReadonlyArray<SpendRow>) {
        const profiles = [...new Set(rows.map((row) => row.profileId))]
        const known = yield* repo.existingProfiles(profiles)
        const missing = profiles.filter((id) => !known.includes(id))
        if (missing.length > 0) return yield* new ValidationError({ message: `profile_id: no such profile: ${missing.join(", ")}` })
        // Last row wins within one file as across files.
        const distinct = [...new Map(rows.map((row) => [`${row.profileId}\u0000${row.platform}\u0000${row.day}\u0000${row.adId}`, row] as const)).values()]
        yield* repo.upsertSpend(distinct)
        return distinct.length
      })

      const upsertFxRates = Effect.fn("AnalyticsImports.upsertFxRates")(function*(rows: ReadonlyArray<FxRow>, source = "ecb") {
        const distinct = [...new Map(rows.map((row) => [`${row.base}${row.quote}${row.day}`, row] as const)).values()]
        yield* repo.upsertFxRates(distinct, source)
        return distinct.length
      })

      const upsertSyncedSpend = Effect.fn("AnalyticsImports.upsertSyncedSpend")(function*(rows: ReadonlyArray<SyncedSpendRow>) {
        yield* repo.upsertSyncedSpend(rows)
      })

      const targetSpend = Effect.fn("AnalyticsImports.targetSpend")(function*(
        profileId: string,
        level: "campaign" | "ad_set",
        id: string,
        days: ReadonlyArray<string>
      ) {
        return yield* repo.targetSpend(profileId, level, id, days)
      })

      return { upsertSpend, upsertFxRates, upsertSyncedSpend, targetSpend }
    })
  ).pipe(Layer.provide(AnalyticsImportsRepo.layer))
}
