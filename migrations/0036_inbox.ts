import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * The unified inbox (issue 21 part 7, decision 0079): the service's copy of the conversations of
 * the chat channels and the mailbox, fed by the providers' pushes and a backfill through the
 * ports, so one list can be ordered, labelled and linked across channels.
 *
 * - `inbox_conversations`: one per (profile, channel, provider conversation or mail thread); the
 *   person's id at the provider, the inbox's own labels, the linked customer.
 * - `inbox_messages`: each message once per conversation (by the provider's message id).
 * - `inbox_drafts`: replies drafted in the inbox (an email one also at the mailbox provider).
 * - `inbox_extraction_proposals`: an email address or phone number found in an inbound message,
 *   once per conversation, proposed as an identifier of the linked customer until decided.
 * - `inbox_backfills`: when each connection was last read back through its port (no foreign key:
 *   a profile's connections are deleted with it, and a stale row only makes one backfill early).
 * Replies go out on the channel's current connection, so a conversation names none.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE inbox_conversations (
      id uuid PRIMARY KEY,
      profile_id uuid NOT NULL REFERENCES profiles (id),
      channel text NOT NULL CHECK (channel IN ('chat_app_a', 'social_dm', 'page_messenger', 'short_video_messaging', 'email')),
      provider_conversation_id text NOT NULL,
      contact_id text NOT NULL,
      contact_name text,
      subject text,
      customer_id uuid REFERENCES customers (id),
      labels text[] NOT NULL DEFAULT '{}',
      last_message_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (profile_id, channel, provider_conversation_id)
    )`
  yield* sql`CREATE INDEX inbox_conversations_recent ON inbox_conversations (profile_id, last_message_at DESC, id DESC)`
  yield* sql`
    CREATE TABLE inbox_messages (
      id uuid PRIMARY KEY,
      conversation_id uuid NOT NULL REFERENCES inbox_conversations (id),
      profile_id uuid NOT NULL REFERENCES profiles (id),
      provider_message_id text NOT NULL,
      direction text NOT NULL CHECK (direction IN ('inbound', 'outbound')),
      sender text NOT NULL,
      body text,
      rfc822_message_id text,
      status text NOT NULL,
      sent_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (conversation_id, provider_message_id)
    )`
  yield* sql`CREATE INDEX inbox_messages_conversation ON inbox_messages (conversation_id, sent_at, id)`
  yield* sql`
    CREATE TABLE inbox_drafts (
      id uuid PRIMARY KEY,
      conversation_id uuid NOT NULL REFERENCES inbox_conversations (id),
      profile_id uuid NOT NULL REFERENCES profiles (id),
      body text NOT NULL,
      provider_draft_id text,
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  yield* sql`CREATE INDEX inbox_drafts_conversation ON inbox_drafts (conversation_id, created_at)`
  yield* sql`
    CREATE TABLE inbox_extraction_proposals (
      id uuid PRIMARY KEY,
      conversation_id uuid NOT NULL REFERENCES inbox_conversations (id),
      profile_id uuid NOT NULL REFERENCES profiles (id),
      message_id uuid NOT NULL REFERENCES inbox_messages (id),
      identifier_type text NOT NULL CHECK (identifier_type IN ('email', 'phone')),
      value text NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected')),
      customer_id uuid REFERENCES customers (id),
      decided_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (conversation_id, identifier_type, value)
    )`
  yield* sql`
    CREATE TABLE inbox_backfills (
      connection_id uuid PRIMARY KEY,
      backfilled_at timestamptz NOT NULL
    )`
})
