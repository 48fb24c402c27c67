/**
 * The unified inbox over HTTP (routes.tsv Inbox; decision 0079): `conversations:read` reads,
 * `conversations:write` replies, drafts, labels, links a customer and decides proposals. All of it
 * is personal data: every call lands in the PII access log; reads are refused on a
 * healthcare-family profile.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  AccountSuspended,
  AdplatformUnavailable,
  AuthRevoked,
  CustomerNotFound,
  InvalidState,
  MailboxDisabled,
  profileErrors,
  QuotaExceeded,
  RateLimitExceeded,
  RecipientRejected,
  ValidationError,
  wireUnprocessable
} from "../../../schema/errors.ts"
import {
  ConversationBody,
  ConversationDetail,
  ConversationPage,
  ConversationParam,
  ConversationsQuery,
  DecideBody,
  DraftBody,
  ExtractionProposalBody,
  ExtractionProposalList,
  InboxDraftCreated,
  InboxMessageCreated,
  LabelsBody,
  LinkCustomerBody,
  ProposalParam,
  ReplyBody
} from "../../../schema/inbox.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const read = policy({ scopes: ["conversations:read"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: "none", personData: true })
const write = (idempotency: "optional" | "none") =>
  policy({ scopes: ["conversations:write"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency, personData: true })

const readErrors = [...profileErrors, ValidationError.wire] as const
const writeErrors = [...profileErrors, ValidationError.wire, InvalidState.wire] as const
const sendErrors = [
  ...writeErrors,
  wireUnprocessable,
  RateLimitExceeded.wire,
  AdplatformUnavailable.wire,
  AccountSuspended.wire,
  MailboxDisabled.wire,
  AuthRevoked.wire,
  QuotaExceeded.wire,
  RecipientRejected.wire
] as const

const sendFailures =
  " 409 `invalid_state` with reason `<channel>_connection_required` when the channel is not connected, `reconnect_required` " +
  "when its grant is dead (email: 403 `auth_revoked` with `reconnect_required: true`); a mailbox refusal is 403 " +
  "`account_suspended` or `mailbox_disabled`, 429 `quota_exceeded` or 422 `recipient_rejected`, each with `provider`, " +
  "`provider_status`, `provider_code`, `provider_message`; a chat platform's refusal (no message from the person, outside " +
  "its 24-hour window) is 422 `validation_error` with the platform's code as `reason`; 429 `rate_limit_exceeded` when it " +
  "throttles; only an unreachable provider is 502 `adplatform_unavailable`."

export const InboxApi = HttpApiGroup.make("inbox")
  .add(
    HttpApiEndpoint.get("listConversations", "/conversations", { query: ConversationsQuery, success: ConversationPage, error: readErrors })
      .annotate(OpenApi.Summary, "Conversations of every connected chat channel and the mailbox, most recent activity first")
      .annotate(
        OpenApi.Description,
        "Read from the service's copy, fed by the providers' pushes and refreshed from each connected channel when stale. " +
          "`channel` and `label` filter; keyset paged (`limit` 1 to 100, `cursor`). Each carries the linked `customer_key` and " +
          "the count of pending extraction proposals. A healthcare-family profile is refused with 403 `insufficient_scope`."
      )
      .annotateMerge(read),
    HttpApiEndpoint.get("getConversation", "/conversations/:conversationId", {
      params: ConversationParam,
      success: ConversationDetail,
      error: readErrors
    })
      .annotate(OpenApi.Summary, "One conversation with its newest 200 messages (oldest first) and its drafts")
      .annotate(OpenApi.Description, "Another profile's or an unknown id is 404 `not_found`.")
      .annotateMerge(read),
    HttpApiEndpoint.post("replyConversation", "/conversations/:conversationId/reply", {
      params: ConversationParam,
      payload: ReplyBody,
      success: InboxMessageCreated,
      error: sendErrors
    })
      .annotate(OpenApi.Summary, "Replies in the conversation through its channel's provider; answers the recorded message")
      .annotate(
        OpenApi.Description,
        "Body `{text}`. Email replies in the thread (`Re:` subject, `In-Reply-To` the last inbound message). Optional " +
          "`Idempotency-Key` (24-hour replay): a retry with the key sends nothing twice." + sendFailures
      )
      .annotateMerge(write("optional")),
    HttpApiEndpoint.post("draftConversation", "/conversations/:conversationId/drafts", {
      params: ConversationParam,
      payload: DraftBody,
      success: InboxDraftCreated,
      error: sendErrors
    })
      .annotate(OpenApi.Summary, "Saves a reply draft (an email one is also created in the mailbox); nothing is sent")
      .annotate(OpenApi.Description, "Body `{text}`. Optional `Idempotency-Key`." + sendFailures)
      .annotateMerge(write("optional")),
    HttpApiEndpoint.put("setConversationLabels", "/conversations/:conversationId/labels", {
      params: ConversationParam,
      payload: LabelsBody,
      success: ConversationBody,
      error: writeErrors
    })
      .annotate(OpenApi.Summary, "Replaces the conversation's inbox labels")
      .annotate(OpenApi.Description, "Body `{labels}`: up to 20, each 1 to 50 letters, digits, spaces or `_ . : -`; duplicates collapse; `[]` clears. The inbox's own labels, not the provider's.")
      .annotateMerge(write("none")),
    HttpApiEndpoint.put("linkConversationCustomer", "/conversations/:conversationId/customer", {
      params: ConversationParam,
      payload: LinkCustomerBody,
      success: ConversationBody,
      error: [...writeErrors, CustomerNotFound.wire]
    })
      .annotate(OpenApi.Summary, "Links the conversation to a customer by `customer_key`")
      .annotate(OpenApi.Description, "Body `{customer_key}`; an unknown, erased or other profile's customer is 404 `customer_not_found`. Linking again replaces the link.")
      .annotateMerge(write("none")),
    HttpApiEndpoint.delete("unlinkConversationCustomer", "/conversations/:conversationId/customer", {
      params: ConversationParam,
      success: ConversationBody,
      error: writeErrors
    })
      .annotate(OpenApi.Summary, "Unlinks the conversation's customer")
      .annotate(OpenApi.Description, "Answers the conversation with `customer_linked: false`; with nothing linked it is answered unchanged. Approved identifiers stay with the customer.")
      .annotateMerge(write("none")),
    HttpApiEndpoint.get("listExtractionProposals", "/conversations/:conversationId/extraction-proposals", {
      params: ConversationParam,
      success: ExtractionProposalList,
      error: readErrors
    })
      .annotate(OpenApi.Summary, "Email addresses and phone numbers found in the conversation's inbound messages, proposed as identifiers")
      .annotate(OpenApi.Description, "Each once per conversation, normalised (lower-cased email, E.164 phone), with `status` `pending`, `approved` or `rejected`; oldest first, within one message email addresses before phone numbers.")
      .annotateMerge(read),
    HttpApiEndpoint.post("decideExtractionProposal", "/conversations/extraction-proposals/:proposalId/decide", {
      params: ProposalParam,
      payload: DecideBody,
      success: ExtractionProposalBody,
      error: writeErrors
    })
      .annotate(OpenApi.Summary, "Approves (attaches the identifier to the linked customer) or rejects (nothing) a proposal")
      .annotate(
        OpenApi.Description,
        "Body `{decision: approve | reject}`. Approving needs a linked customer (else 409 `invalid_state`, reason " +
          "`customer_not_linked`). The same decision again answers the proposal unchanged; the other one is 409 " +
          "(reason `proposal_decided`). Another profile's or an unknown id is 404."
      )
      .annotateMerge(write("none"))
  )
  .prefix("/api/v1")
