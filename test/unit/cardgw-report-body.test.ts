/**
 * A gateway payment as `POST /api/v1/payments/cardgw` takes it (decision 0063): minor units by
 * the currency's exponent, contact data the route would refuse left out, `customer_key` from the
 * checkout's metadata.
 */
import { describe, expect, it } from "vitest"
import { fromMinor, reportBody } from "../../src/ingestion/sync/cardgw.ts"
import type { Payment } from "../../src/connections/providers/cardgw/port.ts"

const payment = (fields: Partial<Payment> = {}): Payment => ({
  id: "pay_1",
  amount_minor: 4250,
  amount_refunded_minor: 0,
  currency: "eur",
  status: "succeeded",
  description: "Order 77",
  customer: { id: "cus_1", email: " Ana@Example.com ", phone: "+34 600 111 222", name: "Ana" },
  metadata: { customer_key: "ana", order_ref: "77" },
  created_at: "2026-11-01T10:00:00.000Z",
  refunded_at: null,
  ...fields
})

describe("card-gateway report body", () => {
  it("converts minor units by the currency's exponent", () => {
    expect(fromMinor(4250, "EUR")).toBe("42.50")
    expect(fromMinor(5, "EUR")).toBe("0.05")
    expect(fromMinor(1200, "JPY")).toBe("1200")
  })

  it("builds the route's body from the payment", () => {
    expect(reportBody(payment())).toEqual({
      gateway_payment_id: "pay_1",
      amount: "42.50",
      currency: "EUR",
      occurred_at: "2026-11-01T10:00:00.000Z",
      customer: { external_id: "ana", email: "Ana@Example.com", phone: "+34600111222" },
      description: "Order 77"
    })
  })

  it("leaves out what the route would refuse: a malformed email or phone, a blank description", () => {
    const body = reportBody(payment({
      description: "  ",
      customer: { id: null, email: "not-an-email", phone: "12", name: null },
      metadata: {}
    }))
    expect(body.customer).toEqual({})
    expect("description" in body).toBe(false)
  })
})
