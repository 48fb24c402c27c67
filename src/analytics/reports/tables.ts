/**
 * A report's figures as plain tables (one per read), the one shape the CSV and the PDF are
 * both written from, so the two files always show the same numbers.
 */
export interface ReportTable {
  /** The read it comes from: `overview`, `timeseries`, `breakdown:channel`... */
  readonly section: string
  readonly title: string
  /** The first column is the row's key (a period, a date, a dimension value). */
  readonly columns: ReadonlyArray<string>
  readonly rows: ReadonlyArray<ReadonlyArray<string>>
}

/** A figure as text: a missing amount (null) is an empty cell. */
export const cell = (value: string | number | null): string => (value === null ? "" : String(value))
