/**
 * A strict parser of the Prometheus text exposition format 0.0.4 (what `GET /metrics` answers),
 * for tests: no parser package is installed, so this one follows the format's rules and throws,
 * naming the line, on anything a Prometheus server would refuse or misread: a malformed line, a
 * TYPE or HELP given twice or after the family's samples, a family's samples not together, a
 * sample of a histogram that is not `_bucket` (with `le`), `_sum` or `_count`, a bad value.
 */

export type FamilyType = "counter" | "gauge" | "histogram" | "summary" | "untyped"

export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

export interface Family {
  readonly name: string
  type: FamilyType | undefined
  help: string | undefined
  readonly samples: Array<Sample>
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const TYPES: ReadonlyArray<FamilyType> = ["counter", "gauge", "histogram", "summary", "untyped"]
const isFamilyType = (text: string): text is FamilyType => TYPES.some((type) => type === text)

class ExpositionError extends Error {
  constructor(line: number, message: string) {
    super(`line ${line}: ${message}`)
  }
}

const parseValue = (text: string, line: number): number => {
  if (text === "NaN") return Number.NaN
  if (text === "+Inf" || text === "Inf") return Number.POSITIVE_INFINITY
  if (text === "-Inf") return Number.NEGATIVE_INFINITY
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new ExpositionError(line, `not a number: ${text}`)
  return Number(text)
}

/** `{a="x",b="y"}` from `start` (at `{`): the labels and the index after `}`. */
const parseLabels = (text: string, start: number, line: number): { labels: Record<string, string>; end: number } => {
  const labels: Record<string, string> = {}
  let i = start + 1
  while (true) {
    while (text[i] === " ") i++
    if (text[i] === "}") return { labels, end: i + 1 }
    const eq = text.indexOf("=", i)
    if (eq === -1) throw new ExpositionError(line, "label without =")
    const name = text.slice(i, eq).trim()
    if (!LABEL_NAME.test(name)) throw new ExpositionError(line, `bad label name: ${name}`)
    if (name in labels) throw new ExpositionError(line, `label ${name} twice`)
    if (text[eq + 1] !== "\"") throw new ExpositionError(line, `label ${name}: value not quoted`)
    let value = ""
    i = eq + 2
    while (true) {
      const c = text[i]
      if (c === undefined) throw new ExpositionError(line, `label ${name}: unterminated value`)
      if (c === "\"") break
      if (c === "\\") {
        const next = text[i + 1]
        if (next === "\\") value += "\\"
        else if (next === "\"") value += "\""
        else if (next === "n") value += "\n"
        else throw new ExpositionError(line, `label ${name}: bad escape \\${next ?? ""}`)
        i += 2
      } else {
        value += c
        i++
      }
    }
    labels[name] = value
    i++
    while (text[i] === " ") i++
    if (text[i] === ",") i++
    else if (text[i] !== "}") throw new ExpositionError(line, `after label ${name}: expected , or }`)
  }
}

/** The family a sample name belongs to, given the families declared so far. */
const familyNameOf = (sample: string, families: ReadonlyMap<string, Family>): string => {
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (sample.endsWith(suffix)) {
      const base = sample.slice(0, -suffix.length)
      const type = families.get(base)?.type
      if (type === "histogram" || (type === "summary" && suffix !== "_bucket")) return base
    }
  }
  return sample
}

export const parseExposition = (text: string): Map<string, Family> => {
  const families = new Map<string, Family>()
  const closed = new Set<string>()
  let current: string | undefined
  const family = (name: string, line: number): Family => {
    if (!METRIC_NAME.test(name)) throw new ExpositionError(line, `bad metric name: ${name}`)
    let found = families.get(name)
    if (found === undefined) {
      found = { name, type: undefined, help: undefined, samples: [] }
      families.set(name, found)
    }
    if (current !== name) {
      if (closed.has(name)) throw new ExpositionError(line, `family ${name} is not together`)
      if (current !== undefined) closed.add(current)
      current = name
    }
    return found
  }
  const lines = text.split("\n")
  if (text.length > 0 && !text.endsWith("\n")) throw new ExpositionError(lines.length, "no final newline")
  lines.forEach((raw, index) => {
    const line = index + 1
    if (raw.trim() === "") return
    if (raw.startsWith("#")) {
      const meta = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s(.*))?$/.exec(raw)
      if (meta === null) return // a comment
      const [, kind, name = "", rest = ""] = meta
      const target = family(name, line)
      if (kind === "TYPE") {
        if (target.type !== undefined) throw new ExpositionError(line, `TYPE of ${name} twice`)
        if (target.samples.length > 0) throw new ExpositionError(line, `TYPE of ${name} after its samples`)
        const type = rest.trim()
        if (!isFamilyType(type)) throw new ExpositionError(line, `unknown type ${rest}`)
        target.type = type
      } else {
        if (target.help !== undefined) throw new ExpositionError(line, `HELP of ${name} twice`)
        target.help = rest.replace(/\\(\\|n)/g, (_, c: string) => (c === "n" ? "\n" : "\\"))
      }
      return
    }
    const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(raw)
    if (nameMatch === null) throw new ExpositionError(line, `not a sample: ${raw}`)
    const sampleName = nameMatch[0]
    let rest = raw.slice(sampleName.length)
    let labels: Record<string, string> = {}
    if (rest.startsWith("{")) {
      const parsed = parseLabels(raw, sampleName.length, line)
      labels = parsed.labels
      rest = raw.slice(parsed.end)
    }
    const fields = rest.trim().split(/\s+/)
    if (!rest.startsWith(" ") || fields.length < 1 || fields.length > 2) throw new ExpositionError(line, `bad sample: ${raw}`)
    const value = parseValue(fields[0] ?? "", line)
    if (fields[1] !== undefined && !/^-?\d+$/.test(fields[1])) throw new ExpositionError(line, `bad timestamp: ${fields[1]}`)
    const target = family(familyNameOf(sampleName, families), line)
    if (target.type === "histogram") {
      if (sampleName.endsWith("_bucket") && labels["le"] === undefined) throw new ExpositionError(line, "bucket without le")
      if (sampleName === target.name) throw new ExpositionError(line, `histogram ${target.name} sample without _bucket/_sum/_count`)
    }
    target.samples.push({ name: sampleName, labels, value })
  })
  return families
}
