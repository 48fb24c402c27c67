/**
 * The pure rules of conversion definitions (decision 0030): how a row is rendered, which changes
 * are classification changes, the conversion key the deprecated route derives, and the body rules
 * of a replacement set.
 */
import type { ConversionDefinition, OutcomeDefinitionInput } from "../../../schema/attribution.ts"
import { ValidationError } from "../../../schema/errors.ts"
import type { DefinitionRow, DefinitionValues } from "./repo.ts"

export const renderDefinition = (row: DefinitionRow): ConversionDefinition => ({
  id: row.id,
  conversion_key: row.conversion_key,
  name: row.name,
  kind: row.kind,
  event_names: row.event_names,
  event_key: row.event_key,
  lookback_window_days: row.lookback_window_days,
  is_default: row.is_default,
  counts_as_cash: row.counts_as_cash,
  attribution_eligible: row.attribution_eligible,
  created_at: row.created_at,
  updated_at: row.updated_at
})

/** Event names as stored: each once, in the order first given. */
export const distinctNames = (names: ReadonlyArray<string>): ReadonlyArray<string> => [...new Set(names)]

const sameNames = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => {
  const left = new Set(a)
  const right = new Set(b)
  return left.size === right.size && [...left].every((name) => right.has(name))
}

/** Whether a change alters what makes an event a conversion, or how it is credited or counted. */
export const classificationChanged = (before: DefinitionValues, after: DefinitionValues): boolean =>
  before.kind !== after.kind ||
  !sameNames(before.event_names, after.event_names) ||
  before.event_key !== after.event_key ||
  before.lookback_window_days !== after.lookback_window_days ||
  before.counts_as_cash !== after.counts_as_cash ||
  before.attribution_eligible !== after.attribution_eligible

export const anyChanged = (before: DefinitionValues, after: DefinitionValues): boolean =>
  classificationChanged(before, after) || before.name !== after.name || before.is_default !== after.is_default

export const valuesOf = (row: DefinitionRow): DefinitionValues => ({
  conversion_key: row.conversion_key,
  name: row.name,
  kind: row.kind,
  event_names: row.event_names,
  event_key: row.event_key,
  lookback_window_days: row.lookback_window_days,
  is_default: row.is_default,
  counts_as_cash: row.counts_as_cash,
  attribution_eligible: row.attribution_eligible
})

/**
 * The conversion key the deprecated POST /api/v1/goals derives from a goal's name: accents
 * dropped, lower case, every run of other characters one `_`, trimmed, at most 64 characters.
 */
export const conversionKeyOfName = (name: string): string =>
  name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, 64)
    .replace(/_+$/, "")

export const invalid = (field: string, problem: string) => new ValidationError({ message: `${field}: ${problem}` })

export const quoted = (value: string) => JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value)

/**
 * The body's own rules of a replacement set, before anything is read: unique keys, one default,
 * an event name in one entry only, `event_key` on stages only. The first broken rule, if any.
 */
export const replacementProblem = (definitions: ReadonlyArray<OutcomeDefinitionInput>): ValidationError | undefined => {
  const keys = new Set<string>()
  const names = new Map<string, string>()
  let defaultAt: number | undefined
  for (const [index, entry] of definitions.entries()) {
    const at = `body.definitions.${index}`
    if (keys.has(entry.conversion_key)) return invalid(`${at}.conversion_key`, `${quoted(entry.conversion_key)} appears twice`)
    keys.add(entry.conversion_key)
    if (entry.is_default === true) {
      if (defaultAt !== undefined) {
        return invalid(`${at}.is_default`, `only one definition may be the default (definitions.${defaultAt} is too)`)
      }
      defaultAt = index
    }
    if ((entry.kind ?? "event") === "event" && entry.event_key !== undefined && entry.event_key !== null) {
      return invalid(`${at}.event_key`, "applies only to pipeline_stage definitions; an event definition lists event_names")
    }
    for (const name of entry.event_names) {
      const owner = names.get(name)
      if (owner !== undefined && owner !== entry.conversion_key) {
        return invalid(`${at}.event_names`, `${quoted(name)} is also listed by ${quoted(owner)}; an event name belongs to one definition`)
      }
      names.set(name, entry.conversion_key)
    }
  }
  return undefined
}
