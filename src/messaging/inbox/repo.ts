/**
 * The owner of the inbox's copy (decision 0079): `inbox_conversations`, `inbox_messages`,
 * `inbox_drafts`, `inbox_extraction_proposals` and `inbox_backfills`. A conversation is one per
 * (profile, channel, provider conversation), a message one per (conversation, provider message),
 * a proposal one per (conversation, identifier): a push, a backfill and a retry write each once.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { DatabaseUnavailable } from "../../../schema/errors.ts"
import type { InboxChannel } from "../../../schema/inbox.ts"
import { atDatabaseBoundary, decodeFirstRow, decodeRows, orDatabaseUnavailable, retryConflicts } from "../../platform/database.ts"
import type { Keyset } from "../../platform/pagination.ts"
import { isoTimestamp } from "../../platform/sql-time.ts"

type Repo<A> = Effect.Effect<A, DatabaseUnavailable>

export const ConversationRow = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  channel: Schema.Literals(["chat_app_a", "social_dm", "page_messenger", "short_video_messaging", "email"]),
  provider_conversation_id: Schema.String,
  contact_id: Schema.String,
  contact_name: Schema.NullOr(Schema.String),
  subject: Schema.NullOr(Schema.String),
  labels: Schema.Array(Schema.String),
  customer_id: Schema.NullOr(Schema.String),
  customer_key: Schema.NullOr(Schema.String),
  pending_proposals: Schema.Int,
  last_message_at: Schema.String,
  created_at: Schema.String
})
export type ConversationRow = typeof ConversationRow.Type

export const MessageRow = Schema.Struct({
  id: Schema.String,
  conversation_id: Schema.String,
  provider_message_id: Schema.String,
  direction: Schema.Literals(["inbound", "outbound"]),
  sender: Schema.String,
  body: Schema.NullOr(Schema.String),
  rfc822_message_id: Schema.NullOr(Schema.String),
  status: Schema.String,
  sent_at: Schema.String
})
export type MessageRow = typeof MessageRow.Type

export const DraftRow = Schema.Struct({
  id: Schema.String,
  conversation_id: Schema.String,
  body: Schema.String,
  provider_draft_id: Schema.NullOr(Schema.String),
  created_at: Schema.String
})
export type DraftRow = typeof DraftRow.Type

export const ProposalRow = Schema.Struct({
  id: Schema.String,
  profile_id: Schema.String,
  conversation_id: Schema.String,
  message_id: Schema.String,
  identifier_type: Schema.Literals(["email", "phone"]),
  value: Schema.String,
  status: Schema.Literals(["pending", "approved", "rejected"]),
  decided_at: Schema.NullOr(Schema.String),
  created_at: Schema.String
})
export type ProposalRow = typeof ProposalRow.Type

export interface ConversationKey {
  readonly profileId: string
  readonly channel: InboxChannel
  readonly providerConversationId: string
  readonly contactId: string
  readonly contactName: string | null
  readonly subject: string | null
}

export interface NewMessage {
  readonly providerMessageId: string
  readonly direction: "inbound" | "outbound"
  readonly sender: string
  readonly body: string | null
  readonly rfc822MessageId: string | null
  readonly status: string
  readonly sentAt: string
}

export interface NewProposal {
  readonly messageId: string
  readonly identifierType: "email" | "phone"
  readonly value: string
}

export interface ConversationFilter {
  readonly channel: InboxChannel | undefined
  readonly label: string | undefined
}

const IdRow = Schema.Struct({ id: Schema.String })
const InsertedRow = Schema.Struct({ id: Schema.String, direction: Schema.String, body: Schema.NullOr(Schema.String) })
const BackfillRow = Schema.Struct({ stale: Schema.Boolean })

export class InboxRepo extends Context.Service<InboxRepo, {
  /** The conversation's id, created on first sight; a later message moves `last_message_at` forward only. */
  readonly upsertConversation: (key: ConversationKey, lastMessageAt: string) => Repo<string>
  /** Inserts the messages not yet recorded; answers those this call inserted. */
  readonly insertMessages: (
    profileId: string,
    conversationId: string,
    messages: ReadonlyArray<NewMessage>
  ) => Repo<ReadonlyArray<typeof InsertedRow.Type>>
  readonly insertProposals: (profileId: string, conversationId: string, proposals: ReadonlyArray<NewProposal>) => Repo<void>
  /** Most recent activity first; `after` is the last row's `(last_message_at, id)`. */
  readonly list: (
    profileId: string,
    filter: ConversationFilter,
    after: Option.Option<Keyset>,
    limit: number
  ) => Repo<ReadonlyArray<ConversationRow>>
  readonly find: (profileId: string, id: string) => Repo<Option.Option<ConversationRow>>
  /** The newest `limit`, answered oldest first. */
  readonly messages: (conversationId: string, limit: number) => Repo<ReadonlyArray<MessageRow>>
  readonly lastInbound: (conversationId: string) => Repo<Option.Option<MessageRow>>
  readonly messageByProviderId: (conversationId: string, providerMessageId: string) => Repo<Option.Option<MessageRow>>
  readonly drafts: (conversationId: string) => Repo<ReadonlyArray<DraftRow>>
  readonly insertDraft: (
    draft: { readonly profileId: string; readonly conversationId: string; readonly body: string; readonly providerDraftId: string | null }
  ) => Repo<DraftRow>
  readonly setLabels: (profileId: string, id: string, labels: ReadonlyArray<string>) => Repo<void>
  readonly setCustomer: (profileId: string, id: string, customerId: string | null) => Repo<void>
  readonly proposals: (conversationId: string) => Repo<ReadonlyArray<ProposalRow>>
  /** `lock` holds the row until the transaction ends (two decisions take turns). */
  readonly proposal: (profileId: string, id: string, lock: boolean) => Repo<Option.Option<ProposalRow>>
  readonly decideProposal: (id: string, status: "approved" | "rejected", customerId: string | null) => Repo<ProposalRow>
  /** Claims a backfill of the connection when the last one is older than `seconds`; false when it is fresh. */
  readonly claimBackfill: (profileId: string, connectionId: string, seconds: number) => Repo<boolean>
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | DatabaseUnavailable, R>
}>()("svc/InboxRepo") {
  static readonly layer = Layer.effect(InboxRepo)(
    Effect.gen(function*() {
      const sql = yield* SqlClient
      const conversations = decodeRows(ConversationRow)
      const oneConversation = decodeFirstRow(ConversationRow)
      const messageRows = decodeRows(MessageRow)
      const oneMessage = decodeFirstRow(MessageRow)
      const draftRows = decodeRows(DraftRow)
      const proposalRows = decodeRows(ProposalRow)
      const oneProposal = decodeFirstRow(ProposalRow)

      const conversationColumns = sql`
        c.id, c.profile_id, c.channel, c.provider_conversation_id, c.contact_id, c.contact_name, c.subject, c.labels,
        c.customer_id, k.customer_key,
        (SELECT count(*)::int FROM inbox_extraction_proposals p WHERE p.conversation_id = c.id AND p.status = 'pending') AS pending_proposals,
        ${isoTimestamp(sql, "c.last_message_at")} AS last_message_at,
        ${isoTimestamp(sql, "c.created_at")} AS created_at`

      const messageColumns = sql`
        m.id, m.conversation_id, m.provider_message_id, m.direction, m.sender, m.body, m.rfc822_message_id, m.status,
        ${isoTimestamp(sql, "m.sent_at")} AS sent_at`

      const proposalColumns = sql`
        p.id, p.profile_id, p.conversation_id, p.message_id, p.identifier_type, p.value, p.status,
        ${isoTimestamp(sql, "p.decided_at")} AS decided_at, ${isoTimestamp(sql, "p.created_at")} AS created_at`

      const upsertConversation = (key: ConversationKey, lastMessageAt: string) =>
        Effect.flatMap(
          decodeFirstRow(IdRow)(sql`
            INSERT INTO inbox_conversations (id, profile_id, channel, provider_conversation_id, contact_id, contact_name, subject, last_message_at)
            VALUES (${crypto.randomUUID()}, ${key.profileId}, ${key.channel}, ${key.providerConversationId}, ${key.contactId},
                    ${key.contactName}, ${key.subject}, ${lastMessageAt}::timestamptz)
            ON CONFLICT (profile_id, channel, provider_conversation_id) DO UPDATE SET
              contact_name = COALESCE(EXCLUDED.contact_name, inbox_conversations.contact_name),
              subject = COALESCE(inbox_conversations.subject, EXCLUDED.subject),
              last_message_at = GREATEST(inbox_conversations.last_message_at, EXCLUDED.last_message_at),
              updated_at = now()
            RETURNING id`),
          // ON CONFLICT DO UPDATE always returns the row.
          Option.match({ onNone: () => Effect.die("INSERT RETURNING answered no row"), onSome: (row) => Effect.succeed(row.id) })
        )

      const insertMessages = (profileId: string, conversationId: string, messages: ReadonlyArray<NewMessage>) =>
        messages.length === 0 ? Effect.succeed([]) : decodeRows(InsertedRow)(sql`
          INSERT INTO inbox_messages (id, conversation_id, profile_id, provider_message_id, direction, sender, body, rfc822_message_id, status, sent_at)
          SELECT v.id, ${conversationId}, ${profileId}, v.provider_message_id, v.direction, v.sender, v.body, v.rfc822_message_id, v.status, v.sent_at
          FROM jsonb_to_recordset(${JSON.stringify(messages.map((m) => ({
          id: crypto.randomUUID(),
          provider_message_id: m.providerMessageId,
          direction: m.direction,
          sender: m.sender,
          body: m.body,
          rfc822_message_id: m.rfc822MessageId,
          status: m.status,
          sent_at: m.sentAt
        })))}::jsonb) AS v(id uuid, provider_message_id text, direction text, sender text, body text, rfc822_message_id text, status text, sent_at timestamptz)
          ON CONFLICT (conversation_id, provider_message_id, profile_id) DO NOTHING
          RETURNING id, direction, body`)

      const insertProposals = (profileId: string, conversationId: string, proposals: ReadonlyArray<NewProposal>) =>
        proposals.length === 0 ? Effect.void : Effect.asVoid(sql`
          INSERT INTO inbox_extraction_proposals (id, conversation_id, profile_id, message_id, identifier_type, value)
          SELECT v.id, ${conversationId}, ${profileId}, v.message_id, v.identifier_type, v.value
          FROM jsonb_to_recordset(${JSON.stringify(proposals.map((p) => ({
          id: crypto.randomUUID(),
          message_id: p.messageId,
          identifier_type: p.identifierType,
          value: p.value
        })))}::jsonb) AS v(id uuid, message_id uuid, identifier_type text, value text)
          ON CONFLICT (conversation_id, identifier_type, value, profile_id) DO NOTHING`)

      const list = (profileId: string, filter: ConversationFilter, after: Option.Option<Keyset>, limit: number) => {
        const channel = filter.channel === undefined ? sql`` : sql`AND c.channel = ${filter.channel}`
        const label = filter.label === undefined ? sql`` : sql`AND ${filter.label} = ANY (c.labels)`
        const keyset = Option.isNone(after)
          ? sql``
          : sql`AND (c.last_message_at, c.id) < (${after.value.createdAt}::timestamptz, ${after.value.id}::uuid)`
        return conversations(sql`
          SELECT ${conversationColumns}
          FROM inbox_conversations c LEFT JOIN customers k ON k.id = c.customer_id
          WHERE c.profile_id = ${profileId} ${channel} ${label} ${keyset}
          ORDER BY c.last_message_at DESC, c.id DESC LIMIT ${limit + 1}`)
      }

      const find = (profileId: string, id: string) =>
        oneConversation(sql`
          SELECT ${conversationColumns}
          FROM inbox_conversations c LEFT JOIN customers k ON k.id = c.customer_id
          WHERE c.profile_id = ${profileId} AND c.id = ${id}`)

      const messages = (conversationId: string, limit: number) =>
        messageRows(sql`
          SELECT * FROM (
            SELECT ${messageColumns}, m.sent_at AS at FROM inbox_messages m WHERE m.conversation_id = ${conversationId}
            ORDER BY m.sent_at DESC, m.id DESC LIMIT ${limit}
          ) newest ORDER BY at, id`)

      const lastInbound = (conversationId: string) =>
        oneMessage(sql`
          SELECT ${messageColumns} FROM inbox_messages m
          WHERE m.conversation_id = ${conversationId} AND m.direction = 'inbound'
          ORDER BY m.sent_at DESC, m.id DESC LIMIT 1`)

      const messageByProviderId = (conversationId: string, providerMessageId: string) =>
        oneMessage(sql`
          SELECT ${messageColumns} FROM inbox_messages m
          WHERE m.conversation_id = ${conversationId} AND m.provider_message_id = ${providerMessageId}`)

      const drafts = (conversationId: string) =>
        draftRows(sql`
          SELECT d.id, d.conversation_id, d.body, d.provider_draft_id, ${isoTimestamp(sql, "d.created_at")} AS created_at
          FROM inbox_drafts d WHERE d.conversation_id = ${conversationId} ORDER BY d.created_at, d.id`)

      const insertDraft = (
        draft: { readonly profileId: string; readonly conversationId: string; readonly body: string; readonly providerDraftId: string | null }
      ) =>
        Effect.flatMap(
          draftRows(sql`
            INSERT INTO inbox_drafts (id, conversation_id, profile_id, body, provider_draft_id)
            VALUES (${crypto.randomUUID()}, ${draft.conversationId}, ${draft.profileId}, ${draft.body}, ${draft.providerDraftId})
            RETURNING id, conversation_id, body, provider_draft_id, ${isoTimestamp(sql, "created_at")} AS created_at`),
          (rows) => (rows[0] === undefined ? Effect.die("INSERT RETURNING answered no row") : Effect.succeed(rows[0]))
        )

      const setLabels = (profileId: string, id: string, labels: ReadonlyArray<string>) =>
        Effect.asVoid(sql`
          UPDATE inbox_conversations
          SET labels = ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(labels)}::jsonb)), updated_at = now()
          WHERE profile_id = ${profileId} AND id = ${id}`)

      const setCustomer = (profileId: string, id: string, customerId: string | null) =>
        Effect.asVoid(sql`
          UPDATE inbox_conversations SET customer_id = ${customerId}::uuid, updated_at = now()
          WHERE profile_id = ${profileId} AND id = ${id}`)

      const proposals = (conversationId: string) =>
        proposalRows(sql`
          SELECT ${proposalColumns} FROM inbox_extraction_proposals p
          WHERE p.conversation_id = ${conversationId} ORDER BY p.created_at, p.identifier_type, p.value, p.id`)

      const proposal = (profileId: string, id: string, lock: boolean) =>
        oneProposal(sql`
          SELECT ${proposalColumns} FROM inbox_extraction_proposals p
          WHERE p.profile_id = ${profileId} AND p.id = ${id} ${lock ? sql`FOR UPDATE` : sql``}`)

      const decideProposal = (id: string, status: "approved" | "rejected", customerId: string | null) =>
        Effect.flatMap(
          proposalRows(sql`
            UPDATE inbox_extraction_proposals p SET status = ${status}, customer_id = ${customerId}::uuid, decided_at = now()
            WHERE p.id = ${id}
            RETURNING ${proposalColumns}`),
          (rows) => (rows[0] === undefined ? Effect.die("UPDATE RETURNING answered no row") : Effect.succeed(rows[0]))
        )

      const claimBackfill = (profileId: string, connectionId: string, seconds: number) =>
        Effect.map(
          decodeRows(BackfillRow)(sql`
            INSERT INTO inbox_backfills (connection_id, profile_id, backfilled_at) VALUES (${connectionId}, ${profileId}, now())
            ON CONFLICT (connection_id, profile_id) DO UPDATE SET backfilled_at = now()
              WHERE inbox_backfills.backfilled_at < now() - make_interval(secs => ${seconds})
            RETURNING true AS stale`),
          (rows) => rows.length > 0
        )

      return {
        ...atDatabaseBoundary({
          upsertConversation,
          insertMessages,
          insertProposals,
          list,
          find,
          messages,
          lastInbound,
          messageByProviderId,
          drafts,
          insertDraft,
          setLabels,
          setCustomer,
          proposals,
          proposal,
          decideProposal,
          claimBackfill
        }),
        transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => retryConflicts(orDatabaseUnavailable(sql.withTransaction(effect)))
      }
    })
  )
}
