/**
 * Reads a delivery-status notification (RFC 3464 `multipart/report;
 * report-type=delivery-status`): which message bounced, for whom, and why. Mail providers
 * deliver bounces as ordinary inbound mail; this tells them apart from replies.
 */

export interface DeliveryReport {
  /** The bounced message's Message-ID (from `Original-Envelope-Id` or the returned headers). */
  readonly originalMessageId: string | null
  readonly recipient: string | null
  /** `failed`, `delayed`, `delivered`, `relayed` or `expanded`. */
  readonly action: string
  /** The enhanced status code, e.g. `5.1.1`. */
  readonly status: string | null
  readonly diagnostic: string | null
}

const boundaryOf = (contentType: string) => /boundary="?([^";]+)"?/i.exec(contentType)?.[1] ?? null

/** Header fields of a block of `Name: value` lines (continuation lines folded), lower-cased names. */
const fields = (block: string) => {
  const out = new Map<string, string>()
  let last: string | null = null
  for (const line of block.split(/\r?\n/)) {
    if (/^\s/.test(line) && last !== null) {
      out.set(last, `${out.get(last) ?? ""} ${line.trim()}`)
      continue
    }
    const colon = line.indexOf(":")
    if (colon <= 0) continue
    last = line.slice(0, colon).trim().toLowerCase()
    if (!out.has(last)) out.set(last, line.slice(colon + 1).trim())
  }
  return out
}

/** Null when the body is not a delivery-status report. */
export const parseDeliveryReport = (contentType: string, body: string): DeliveryReport | null => {
  if (!/^multipart\/report/i.test(contentType) || !/report-type="?delivery-status/i.test(contentType)) return null
  const boundary = boundaryOf(contentType)
  if (boundary === null) return null
  const parts = body.split(`--${boundary}`).slice(1).filter((part) => !part.startsWith("--"))
  const split = (part: string) => {
    const trimmed = part.replace(/^\r?\n/, "")
    const end = trimmed.search(/\r?\n\r?\n/)
    return end < 0 ? { headers: fields(trimmed), content: "" } : { headers: fields(trimmed.slice(0, end)), content: trimmed.slice(end).trim() }
  }
  const sections = parts.map(split)
  const status = sections.find((s) => /message\/(global-)?delivery-status/i.test(s.headers.get("content-type") ?? ""))
  if (status === undefined) return null
  // The per-message fields, then one block per recipient: read the first recipient.
  const [messageBlock = "", ...recipientBlocks] = status.content.split(/\r?\n\s*\r?\n/)
  const perMessage = fields(messageBlock)
  const perRecipient = fields(recipientBlocks[0] ?? messageBlock)
  const returned = sections.find((s) => /text\/rfc822-headers|message\/rfc822/i.test(s.headers.get("content-type") ?? ""))
  const returnedId = returned === undefined ? null : fields(returned.content).get("message-id") ?? null
  const address = (value: string | undefined) => value === undefined ? null : value.replace(/^[^;]*;\s*/, "").trim()
  return {
    originalMessageId: perMessage.get("original-envelope-id") ?? returnedId,
    recipient: address(perRecipient.get("final-recipient") ?? perRecipient.get("original-recipient")),
    action: (perRecipient.get("action") ?? "failed").toLowerCase(),
    status: perRecipient.get("status") ?? null,
    diagnostic: address(perRecipient.get("diagnostic-code")) ?? null
  }
}
