/**
 * Reading delivery-status notifications (RFC 3464) as mail servers write them: a Postfix-style
 * bounce with folded lines and the returned message, a delay notice, and mail that is no report.
 */
import { assert, describe, it } from "@effect/vitest"
import { parseDeliveryReport } from "../../src/connections/providers/email/dsn.ts"

const postfix = [
  "This is a MIME-encapsulated message.",
  "",
  "--7D3E1C0A2B.1700000000/mx.example.net",
  "Content-Description: Notification",
  "Content-Type: text/plain; charset=us-ascii",
  "",
  "I'm sorry to have to inform you that your message could not be delivered.",
  "",
  "--7D3E1C0A2B.1700000000/mx.example.net",
  "Content-Description: Delivery report",
  "Content-Type: message/delivery-status",
  "",
  "Reporting-MTA: dns; mx.example.net",
  "X-Postfix-Queue-ID: 7D3E1C0A2B",
  "Arrival-Date: Tue, 24 Nov 2026 10:00:00 +0000 (UTC)",
  "",
  "Final-Recipient: rfc822; nobody@customer.example",
  "Original-Recipient: rfc822;nobody@customer.example",
  "Action: failed",
  "Status: 5.1.1",
  "Remote-MTA: dns; mail.customer.example",
  "Diagnostic-Code: smtp; 550 5.1.1 <nobody@customer.example>: Recipient address",
  "    rejected: User unknown",
  "",
  "--7D3E1C0A2B.1700000000/mx.example.net",
  "Content-Description: Undelivered Message Headers",
  "Content-Type: text/rfc822-headers",
  "",
  "Message-ID: <abc123@svc.example>",
  "From: team@svc.example",
  "Subject: Your quote",
  "",
  "--7D3E1C0A2B.1700000000/mx.example.net--",
  ""
].join("\n")

describe("parseDeliveryReport", () => {
  it("reads a Postfix bounce: recipient, action, status, the folded diagnostic, the returned Message-ID", () => {
    const report = parseDeliveryReport(
      `multipart/report; report-type=delivery-status;\n\tboundary="7D3E1C0A2B.1700000000/mx.example.net"`,
      postfix
    )
    assert.deepStrictEqual(report, {
      originalMessageId: "<abc123@svc.example>",
      recipient: "nobody@customer.example",
      action: "failed",
      status: "5.1.1",
      diagnostic: "550 5.1.1 <nobody@customer.example>: Recipient address rejected: User unknown"
    })
  })

  it("reads a delay notice", () => {
    const delayed = postfix.replace("Action: failed", "Action: delayed").replace("Status: 5.1.1", "Status: 4.4.1")
    const report = parseDeliveryReport(`multipart/report; report-type="delivery-status"; boundary="7D3E1C0A2B.1700000000/mx.example.net"`, delayed)
    assert.deepStrictEqual([report?.action, report?.status], ["delayed", "4.4.1"])
  })

  it("answers null for anything that is not a delivery-status report", () => {
    assert.isNull(parseDeliveryReport("text/plain", "Thanks!"))
    assert.isNull(parseDeliveryReport("multipart/report; report-type=disposition-notification; boundary=x", "--x\n\n--x--"))
    assert.isNull(parseDeliveryReport("multipart/report; report-type=delivery-status", postfix))
    assert.isNull(parseDeliveryReport(`multipart/report; report-type=delivery-status; boundary="other"`, postfix))
  })
})
