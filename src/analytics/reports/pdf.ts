/**
 * A report as PDF 1.4, written in-process: text tables in the standard Helvetica font (no
 * embedded font, no network, no browser), A4 landscape, as many pages as the rows need. The
 * cross-reference table holds each object's exact byte offset, so any reader opens it.
 *
 * Text is WinAnsi-encoded Latin-1: a character beyond it is written as `?`.
 */
import type { ReportTable } from "./tables.ts"

const PAGE_WIDTH = 842
const PAGE_HEIGHT = 595
const MARGIN = 40
const FONT_SIZE = 9
const LINE = 13
/** Helvetica's average advance is about half the size: enough to keep columns apart. */
const CHAR_WIDTH = FONT_SIZE * 0.55

/** A string literal of a content stream: backslash, parentheses escaped; Latin-1 only. */
export const pdfString = (text: string): string => {
  let out = ""
  for (const ch of text) {
    const code = ch.codePointAt(0) ?? 63
    const safe = code >= 32 && code <= 255 && code !== 127 ? ch : "?"
    out += safe === "\\" || safe === "(" || safe === ")" ? `\\${safe}` : safe
  }
  return `(${out})`
}

interface Line {
  readonly text: ReadonlyArray<{ readonly x: number; readonly value: string }>
  readonly bold: boolean
  readonly gap: boolean
}

const fit = (value: string, width: number) => {
  const max = Math.max(1, Math.floor(width / CHAR_WIDTH) - 1)
  return value.length <= max ? value : `${value.slice(0, Math.max(1, max - 1))}~`
}

/** The lines of a table: its title, the header, the rows, columns sized to the page. */
const linesOf = (table: ReportTable): ReadonlyArray<Line> => {
  const usable = PAGE_WIDTH - 2 * MARGIN
  const firstWidth = Math.min(usable / 2, Math.max(90, usable / (table.columns.length + 1)))
  const restWidth = table.columns.length > 1 ? (usable - firstWidth) / (table.columns.length - 1) : 0
  const xOf = (i: number) => (i === 0 ? MARGIN : MARGIN + firstWidth + (i - 1) * restWidth)
  const widthOf = (i: number) => (i === 0 ? firstWidth : restWidth)
  const row = (cells: ReadonlyArray<string>, bold: boolean): Line => ({
    text: cells.map((value, i) => ({ x: xOf(i), value: fit(value, widthOf(i)) })),
    bold,
    gap: false
  })
  return [
    { text: [{ x: MARGIN, value: table.title }], bold: true, gap: true },
    row(table.columns, true),
    ...(table.rows.length === 0 ? [row(["(no rows)"], false)] : table.rows.map((cells) => row(cells, false)))
  ]
}

const latin1 = (text: string) => Buffer.from(text, "latin1")

/** The PDF bytes of a document: a heading, a subtitle, then the tables. */
export const toPdf = (heading: string, subtitle: string, tables: ReadonlyArray<ReportTable>): Uint8Array => {
  const lines: Array<Line> = [
    { text: [{ x: MARGIN, value: heading }], bold: true, gap: false },
    { text: [{ x: MARGIN, value: subtitle }], bold: false, gap: false },
    ...tables.flatMap(linesOf)
  ]
  // Lay the lines out on pages.
  const pages: Array<Array<string>> = [[]]
  let y = PAGE_HEIGHT - MARGIN
  for (const line of lines) {
    const needed = line.gap ? 2 * LINE : LINE
    if (y - needed < MARGIN) {
      pages.push([])
      y = PAGE_HEIGHT - MARGIN
    } else if (line.gap) {
      y -= LINE
    }
    const page = pages[pages.length - 1] ?? []
    for (const piece of line.text) {
      page.push(`BT /${line.bold ? "F2" : "F1"} ${FONT_SIZE} Tf ${piece.x.toFixed(2)} ${y.toFixed(2)} Td ${pdfString(piece.value)} Tj ET`)
    }
    y -= LINE
  }

  // Objects: 1 catalog, 2 page tree, 3 and 4 the fonts, then each page and its content stream.
  const objects: Array<string> = []
  const pageIds = pages.map((_, i) => 5 + 2 * i)
  objects[1] = "<< /Type /Catalog /Pages 2 0 R >>"
  objects[2] = `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(" ")}] /Count ${pages.length} >>`
  objects[3] = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
  objects[4] = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>"
  pages.forEach((commands, i) => {
    const pageId = 5 + 2 * i
    const stream = commands.join("\n")
    objects[pageId] = `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${PAGE_WIDTH} ${PAGE_HEIGHT}] ` +
      `/Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents ${pageId + 1} 0 R >>`
    objects[pageId + 1] = `<< /Length ${latin1(stream).length} >>\nstream\n${stream}\nendstream`
  })

  const chunks: Array<Buffer> = [Buffer.from("%PDF-1.4\n%\xE2\xE3\xCF\xD3\n", "latin1")]
  let offset = chunks[0]?.length ?? 0
  const offsets: Array<number> = []
  for (let id = 1; id < objects.length; id++) {
    offsets[id] = offset
    const chunk = latin1(`${id} 0 obj\n${objects[id] ?? "null"}\nendobj\n`)
    chunks.push(chunk)
    offset += chunk.length
  }
  const xref = [
    "xref",
    `0 ${objects.length}`,
    "0000000000 65535 f ",
    ...offsets.slice(1).map((at) => `${String(at).padStart(10, "0")} 00000 n `),
    "trailer",
    `<< /Size ${objects.length} /Root 1 0 R >>`,
    "startxref",
    String(offset),
    "%%EOF",
    ""
  ].join("\n")
  chunks.push(latin1(xref))
  return new Uint8Array(Buffer.concat(chunks))
}
