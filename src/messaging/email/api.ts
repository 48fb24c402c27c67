/**
 * The connected mailbox over HTTP (routes.tsv Email; scope `email`; decision 0080): threads,
 * a thread, drafts, labels and search, proxied live to the mail provider. Addresses and message
 * text are personal data: every call lands in the PII access log.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import {
  CreateEmailDraft,
  EmailDraftCreated,
  EmailLabelList,
  EmailMessagePage,
  EmailThreadDetail,
  EmailThreadPage,
  SearchQuery,
  ThreadParam,
  ThreadsQuery
} from "../../../schema/email.ts"
import {
  AdplatformUnavailable,
  AuthRevoked,
  InvalidParameter,
  InvalidState,
  profileErrors,
  RateLimitExceeded,
  ValidationError,
  wireUnprocessable
} from "../../../schema/errors.ts"
import { policy, PROFILE_PRINCIPALS } from "../../http/policy.ts"

const errors = [
  ...profileErrors,
  InvalidParameter.wire,
  ValidationError.wire,
  wireUnprocessable,
  InvalidState.wire,
  AuthRevoked.wire,
  RateLimitExceeded.wire,
  AdplatformUnavailable.wire
] as const

const mailbox = (write: boolean) =>
  policy({ scopes: ["email"], auth: PROFILE_PRINCIPALS, grain: "profile", idempotency: write ? "optional" : "none", personData: true })

const failures =
  " 409 `invalid_state` (reason `email_connection_required`) without a mailbox connection; 403 `auth_revoked` with " +
  "`reconnect_required: true` and `provider`, `provider_status`, `provider_code`, `provider_message` when the mailbox's " +
  "grant is dead; 429 `rate_limit_exceeded` with `Retry-After` when the provider throttles; 502 `adplatform_unavailable` " +
  "(reason `provider_unavailable`) only when it cannot be reached."

export const EmailApi = HttpApiGroup.make("email")
  .add(
    HttpApiEndpoint.get("listThreads", "/email/threads", { query: ThreadsQuery, success: EmailThreadPage, error: errors })
      .annotate(OpenApi.Summary, "The mailbox's threads, most recently active first, read live from the provider")
      .annotate(OpenApi.Description, "`label` keeps the threads carrying that label id. Paged: `limit` 1 to 100, `cursor`." + failures)
      .annotateMerge(mailbox(false)),
    HttpApiEndpoint.get("getThread", "/email/threads/:threadId", { params: ThreadParam, success: EmailThreadDetail, error: errors })
      .annotate(OpenApi.Summary, "One thread with its messages, oldest first, read live from the provider")
      .annotate(OpenApi.Description, "A thread the connected mailbox does not hold is 404 `not_found`." + failures)
      .annotateMerge(mailbox(false)),
    HttpApiEndpoint.post("createDraft", "/email/drafts", { payload: CreateEmailDraft, success: EmailDraftCreated, error: errors })
      .annotate(OpenApi.Summary, "Creates a draft in the mailbox at the provider (nothing is sent)")
      .annotate(
        OpenApi.Description,
        "Body `{to[], subject, text, thread_id?}`; a `thread_id` the mailbox does not hold is 404. 201 with the provider's draft. " +
          "Optional `Idempotency-Key`." + failures
      )
      .annotateMerge(mailbox(true)),
    HttpApiEndpoint.get("listLabels", "/email/labels", { success: EmailLabelList, error: errors })
      .annotate(OpenApi.Summary, "The mailbox's labels (system and its own), read live from the provider")
      .annotate(OpenApi.Description, "Each `{id, name, type}` with `type` `system` or `user`." + failures)
      .annotateMerge(mailbox(false)),
    HttpApiEndpoint.get("searchEmail", "/email/search", { query: SearchQuery, success: EmailMessagePage, error: errors })
      .annotate(OpenApi.Summary, "Messages holding every word of `q`, newest first, searched at the provider")
      .annotate(OpenApi.Description, "`q` is required (blank is 400). Words match the subject, text, sender or recipients, case-insensitively. Paged: `limit`, `cursor`." + failures)
      .annotateMerge(mailbox(false))
  )
  .prefix("/api/v1")
