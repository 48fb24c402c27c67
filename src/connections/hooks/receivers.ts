/**
 * What a provider push carries beyond connections: commerce orders, card-gateway payments and
 * CRM deals are ingestion's, inbound messages the inbox's (both above connections). The hook
 * receiver dispatches to this port; src/main/ provides it from those contexts' services.
 */
import { Context, type Effect } from "effect"
import type { DatabaseUnavailable, ServiceUnavailable } from "../../../schema/errors.ts"
import type { ProviderKind } from "../providers/registry.ts"

type Json = Readonly<Record<string, unknown>>

/** An inbound message a push carries, as the inbox recorded it. */
export interface PushedMessage {
  readonly accountId: string
  readonly messageId: string
  /** What the push itself says of the message (for `message.received`). */
  readonly seen: {
    readonly from: string | null
    readonly to: string | null
    readonly text: string | null
    readonly conversationId: string | null
    /** Unix seconds, when the push gives them. */
    readonly timestamp: number | null
  }
}

export class PushReceivers extends Context.Service<PushReceivers, {
  /** The commerce platform's orders and uninstalls, the whole push; answers whether it was fresh. */
  readonly commerce: (body: Json) => Effect.Effect<boolean, DatabaseUnavailable>
  /** Records the push's inbound messages in the inbox (idempotent by message id) and answers them. */
  readonly messages: (provider: ProviderKind, body: Json) => Effect.Effect<ReadonlyArray<PushedMessage>, DatabaseUnavailable>
  /** A CRM deal callback: an outcome when the deal reached a mapped stage (decision 0062). */
  readonly crmDeal: (accountId: string, body: Json) => Effect.Effect<void, ServiceUnavailable | DatabaseUnavailable>
  /** A card-gateway payment, recorded idempotently by its payment id. */
  readonly cardPayment: (body: Json) => Effect.Effect<void, DatabaseUnavailable>
}>()("svc/PushReceivers") {}
