import { Effect, Layer, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { Principal } from "../../../kernel/principal.ts"
import { ProfileAccess } from "../../../kernel/access.ts"
import { rawNumberLiteral } from "../../../kernel/money.ts"
import { PaymentsService } from "./service.ts"
import { groupApi } from "../../../http/group-api.ts"
import { PaymentsApi } from "./api.ts"

export const PaymentsHandlers = HttpApiBuilder.group(groupApi(PaymentsApi), "payments", (handlers) =>
  Effect.gen(function*() {
    const access = yield* ProfileAccess
    const payments = yield* PaymentsService
    /** The caller and the profile it acts on. */
    const caller = Effect.flatMap(Principal, (actor) => Effect.map(access.current, (profile) => ({ actor, profile })))
    /**
     * A JSON number has lost digits once parsed: its literal is re-read from the raw body
     * (already buffered by the payload decoder, so this reads no socket).
     */
    const amountLiteral = (amount: unknown, text: Effect.Effect<string, unknown>) =>
      typeof amount === "number"
        ? Effect.map(Effect.orDie(text), (body) => rawNumberLiteral(body, ["amount"]))
        : Effect.succeed(Option.none<string>())
    return handlers.handleAll({
      listPayments: ({ query }) => Effect.flatMap(access.current, (profile) => payments.list(profile, query)),
      paymentLinkage: ({ query }) => Effect.flatMap(access.current, (profile) => payments.linkage(profile, query)),
      setPaymentInstallment: ({ params, payload }) =>
        Effect.flatMap(caller, ({ actor, profile }) =>
          payments.setInstallment(actor, profile, params.payment_id, payload.installment)),
      assignPaymentPayer: ({ params, payload }) =>
        Effect.flatMap(caller, ({ actor, profile }) =>
          payments.assignPayer(actor, profile, params.payment_id, payload.customer_key)),
      recordPaymentRefund: ({ params, payload, request }) =>
        Effect.gen(function*() {
          const { actor, profile } = yield* caller
          const literal = typeof payload.amount === "string"
            ? Option.some(payload.amount)
            : yield* amountLiteral(payload.amount, request.text)
          if (payload.amount !== undefined && Option.isNone(literal)) {
            return yield* Effect.die("amount is a number but its literal was not read")
          }
          return yield* payments.recordRefund(actor, profile, params.payment_id, { amount: literal, reason: payload.reason })
        }),
      undoPaymentRefund: ({ params }) =>
        Effect.flatMap(caller, ({ actor, profile }) => payments.undoRefund(actor, profile, params.payment_id)),
      reportCardgwPayment: ({ payload, request }) =>
        Effect.gen(function*() {
          const { actor, profile } = yield* caller
          const literal = yield* amountLiteral(payload.amount, request.text)
          return { data: yield* payments.reportCardgw(actor, profile, payload, literal) }
        })
    })
  })).pipe(Layer.provide([PaymentsService.layer, ProfileAccess.layer]))
