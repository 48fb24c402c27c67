/**
 * A report as CSV (RFC 4180): CRLF line ends, every field quoted when it holds a comma, a quote
 * or a line break, quotes doubled. One long table `section,key,metric,value` so that every
 * record has the same fields whatever the reads. A text cell starting with `=`, `+`, `-`, `@`
 * (or a tab or carriage return) is prefixed with `'`, so a spreadsheet never runs it as a
 * formula (a campaign name is caller-controlled text); numbers are written as they are.
 */
import type { ReportTable } from "./tables.ts"

const NUMBER = /^-?\d+(\.\d+)?$/

/** A cell a spreadsheet would take for a formula, defused. */
export const defuse = (value: string): string => (!NUMBER.test(value) && /^[=+\-@\t\r]/.test(value) ? `'${value}` : value)

export const quote = (value: string): string => (/[",\r\n]/.test(value) ? `"${value.replaceAll("\"", "\"\"")}"` : value)

const record = (fields: ReadonlyArray<string>) => fields.map((field) => quote(defuse(field))).join(",")

export const toCsv = (tables: ReadonlyArray<ReportTable>): string => {
  const lines = [record(["section", "key", "metric", "value"])]
  for (const table of tables) {
    for (const row of table.rows) {
      const key = row[0] ?? ""
      table.columns.slice(1).forEach((metric, i) => lines.push(record([table.section, key, metric, row[i + 1] ?? ""])))
    }
  }
  return lines.join("\r\n") + "\r\n"
}
