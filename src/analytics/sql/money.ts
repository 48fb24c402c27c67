/**
 * SQL fragments shared by the analytics repositories (decision 0041): converting a summed amount
 * with the stored FX table, and totalling converted amounts. They read the row alias `x` with
 * its `currency` ('' = the profile's) and `day` columns.
 */
import type { SqlClient } from "effect/sql/SqlClient"

/**
 * `money` (an SQL expression, default `x.money`) of `x.currency` on `x.day` in `target`, rounded
 * to 6 decimals; null when it cannot be converted. The rate lookup runs only for a real conversion:
 * reads convert one amount per (entity, day, currency). In the profile's own block (`profileBlock`) an
 * amount of no known currency is taken as is: it is "in the profile's currency", which is unset.
 */
export const convertedMoney = (
  sql: SqlClient,
  profileCurrency: string | null,
  target: string | null,
  profileBlock: boolean,
  money = "x.money"
) => {
  const amount = sql.literal(money)
  const currency = sql`COALESCE(NULLIF(x.currency, ''), ${profileCurrency}::text)`
  return sql`CASE WHEN ${amount} = 0 THEN 0
                  WHEN ${currency} IS NULL THEN ${profileBlock ? sql`round(${amount}, 6)` : sql`NULL::numeric`}
                  WHEN ${target}::text IS NULL THEN NULL::numeric
                  WHEN ${currency} = ${target}::text THEN round(${amount}, 6)
                  ELSE round(${amount} * analytics_fx_rate(${currency}, ${target}::text, x.day), 6) END`
}

/** The sum of a converted column as exact text: null as soon as one amount could not be converted. */
export const convertedTotal = (sql: SqlClient, column: string) =>
  sql.literal(`CASE WHEN bool_or(${column} IS NULL) THEN NULL ELSE trim_scale(COALESCE(sum(${column}), 0))::text END`)
