/**
 * Error responses of the published document. HttpApi lists one `ErrorEnvelope` member per error
 * class an endpoint declares (an `anyOf` of identical `$ref`s, the class descriptions joined
 * with " | "); here each such response becomes one `$ref` to `ErrorEnvelope`, a description
 * listing the codes it stands for, and one example per code: the envelope exactly as the
 * service sends it (api-concepts.md, errors). The examples live once in `components.examples`
 * and are referenced, so the document does not repeat them per operation.
 */
import type { OpenApi } from "effect/http-api"
import type { JsonSchema } from "effect/JsonSchema"
import { catalogue, type HttpCode } from "../../../schema/errors.ts"
import { isNode } from "./synthesize.ts"

const ENVELOPE_REF = "#/components/schemas/ErrorEnvelope"
const BASE_URL = "http://localhost:8080"

interface ErrorExample {
  readonly message: string
  readonly reason?: string
  readonly retry_after_seconds?: number
  readonly consent?: { readonly version: string; readonly text_hashes: Readonly<Record<string, string>> }
  readonly conflicting_destination_id?: string
  readonly reconnect_required?: boolean
  readonly provider?: string
  readonly provider_status?: number
  readonly provider_code?: string
  readonly provider_message?: string
}

/** What the service says for each code, taken from the places that raise it. */
const examples: Readonly<Record<HttpCode, ErrorExample>> = {
  unauthorized: { message: "Missing, invalid, expired or revoked credential." },
  insufficient_scope: { message: "This credential lacks the scope analytics:read.", reason: "missing_scope:analytics:read" },
  api_key_required: { message: "Erasure is requested with an API key of the profile, not a session or token." },
  rate_limit_exceeded: { message: "Rate limit of 60 requests per minute exceeded.", retry_after_seconds: 12 },
  invalid_parameter: { message: "query.limit: Expected a value between 1 and 200, got 500", reason: "invalid_parameter:limit" },
  invalid_date_range: { message: "The range is 400 days; at most 366.", reason: "invalid_date_range" },
  invalid_request: { message: "A user token must name the profile: add ?profile_id=<uuid>." },
  validation_error: { message: "body.event_name: Expected a string with a length of at least 1, got \"\"" },
  not_found: { message: "No such profile." },
  invalid_state: { message: "This proposal is already merged.", reason: "proposal_not_pending" },
  entitlement_required: {
    message: "The attribution add-on (svc_attribution) is off for this profile; the provisioning app turns it on.",
    reason: "entitlement_required:svc_attribution"
  },
  healthcare_scope_forbidden: {
    message: "analytics_pii cannot be granted on a healthcare-family profile; ask for analytics.",
    reason: "healthcare_family_profile"
  },
  service_unavailable: {
    message: "The service is stopping: send new requests to another instance.",
    reason: "shutting_down",
    retry_after_seconds: 1
  },
  database_unavailable: {
    message: "The database is unreachable. Retry the same request shortly.",
    reason: "database_unreachable",
    retry_after_seconds: 2
  },
  link_tokens_disabled: { message: "Link tokens are off on this deployment: it has no token secret (SVC_LINK_TOKEN_SECRET)." },
  internal_error: { message: "Internal server error. Report the request_id to support." },
  consent_required: {
    message: "Consent is missing: accept the current text and send its version and hash.",
    consent: {
      version: "2026-09-23.duplicate-swap.v1",
      text_hashes: {
        en: "3f1c9a7e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a",
        es: "8b0d1f3a5c7e9b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e1f3c"
      }
    }
  },
  idempotency_key_conflict: { message: "This Idempotency-Key was already used with a different request on this route." },
  idempotency_key_in_flight: { message: "The first request with this Idempotency-Key is still running; retry with backoff." },
  adplatform_connection_required: { message: "The profile has no usable ad-platform connection.", reason: "no_usable_connection" },
  adplatform_write_permission_missing: {
    message: "The ad-platform connection lacks the manage-advertisements grant. Reconnect it.",
    reconnect_required: true
  },
  budget_change_out_of_bounds: {
    message: "The new budget must be within +/-50 % of the live budget 40.00 (20.00 to 60.00).",
    reason: "outside_half_band"
  },
  adset_not_editable: { message: "The ad set is archived and cannot be edited.", reason: "archived" },
  campaign_not_editable: { message: "The campaign has no budget of its own: its ad sets hold the budgets.", reason: "no_campaign_budget" },
  campaign_not_found: { message: "No campaign of this profile has this id." },
  campaign_not_pausable: { message: "The campaign is already paused.", reason: "already_paused" },
  campaign_not_resumable: { message: "The campaign is archived and cannot be resumed.", reason: "archived" },
  platform_safe_required: { message: "The profile's privacy mode is not platform_safe: set it in the conversion-sync catalog first." },
  platform_safe_audiences_disabled: {
    message: "Audiences are disabled on this Platform-Safe profile: enable them with platform_safe_audiences in the conversion-sync catalog."
  },
  clean_dataset_has_live_ad_sets: {
    message: "Ad sets still deliver on the Clean Dataset (as_1001_1_1); confirm with confirm_live_ad_sets: true."
  },
  destination_conflict: {
    message: "Another live destination already sends this lane to this dataset; nothing was written.",
    conflicting_destination_id: "6c1b2a3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
  },
  event_not_found: { message: "No event was recorded under this idempotency_key." },
  event_already_exported: { message: "A conversion export exists for this event, so it can no longer be retracted." },
  event_linked_to_conversation: { message: "A conversation recorded this event as its lead, so it can no longer be retracted." },
  customer_not_found: { message: "No customer of this profile has this customer_key." },
  conversion_not_found: { message: "No live conversion has this id or idempotency key in this profile." },
  erasure_not_found: { message: "No erasure receipt of this profile has this id." },
  unknown_ad: { message: "Not an ad of this profile's synced ad structure: 120210000000999." },
  unknown_answer_key: { message: "body.answer_key: \"radio_ad\" is not in the vocabulary." },
  unknown_customer_ref: {
    message: "No customer has this external_ref. Send email or phone with it to create the customer. Nothing was stored."
  },
  account_connected_elsewhere: { message: "The account act_1001 is connected on another profile of this workspace." },
  chat_app_a_connection_required: { message: "Connect the business chat account first (chat_app_a)." },
  social_dm_connection_required: { message: "Connect the social direct-message account first (social_dm)." },
  social_dm_login_required: { message: "The social account is connected through the business login; reconnect it through the social login." },
  feature_retired: { message: "This operation is retired." },
  insights_enabling: {
    message: "Template analytics were off for this business account and are being switched on; ask again later.",
    retry_after_seconds: 60
  },
  insights_unsupported: {
    message: "This business account's type does not allow template analytics.",
    provider: "chat_app_a",
    provider_status: 400,
    provider_code: "unsupported_account_type",
    provider_message: "Template analytics are not available for this account type."
  },
  template_not_found: { message: "The business account has no template named \"spring_offer\"." },
  adplatform_unavailable: { message: "The ad platform is unreachable; retry.", provider: "adplatform" },
  invalid_content: { message: "header_media: the URL answered 404." },
  payload_too_large: { message: "The request body is larger than the limit of 1048576 bytes." },
  account_suspended: { message: "The mailbox provider suspended this account." },
  mailbox_disabled: { message: "The mailbox is disabled at the provider." },
  auth_revoked: {
    message: "The mailbox's grant was revoked: reconnect it through POST /api/v1/connections/email/handoff.",
    reconnect_required: true,
    provider: "email",
    provider_status: 401,
    provider_code: "invalid_token",
    provider_message: "The grant was revoked."
  },
  quota_exceeded: { message: "The mailbox provider's sending quota is exhausted; retry later.", retry_after_seconds: 3600 },
  recipient_rejected: { message: "The provider refused the recipient ana.lopez@example.com." }
}

/** `validation_error` as a 422 (the cases the specification names). */
const unprocessableExample: ErrorExample = {
  message: "body.consent.accepted_at: Expected a time at most 5 minutes ahead of now"
}

/** The envelope the service sends for `code` answered with `status`. */
export const errorEnvelopeExample = (code: HttpCode, status: number) => {
  const fields = code === "validation_error" && status === 422 ? unprocessableExample : examples[code]
  const { message, ...optional } = fields
  return {
    error: {
      code,
      message,
      status,
      request_id: "req_5b0d6c2e8f1a4c3e9d7b2a1f0c8e6d4b",
      docs_url: `${BASE_URL}/docs/errors#${code}`,
      ...optional
    }
  }
}

interface Row {
  readonly code: HttpCode
  readonly description: string
}

const isHttpCode = (code: string): code is HttpCode => code in examples

/** Catalogue rows by `status|description`: how a generated response's description names its codes. */
const rowsByText = new Map<string, Row>(
  catalogue.flatMap((entry) => {
    if (entry.kind !== "http" || entry.status === null || !isHttpCode(entry.code)) return []
    const row: Row = { code: entry.code, description: entry.description }
    const rows: Array<[string, Row]> = [[`${entry.status}|${entry.description}`, row]]
    // `validation_error` is also declared as a 422 (`wireUnprocessable`), with the same description.
    if (entry.code === "validation_error") rows.push([`422|${entry.description}`, row])
    return rows
  })
)

const isEnvelopeRef = (member: unknown) => isNode(member) && member["$ref"] === ENVELOPE_REF

/** Whether the schema is `ErrorEnvelope`, alone or as an `anyOf` of nothing else. */
const isEnvelopeSchema = (schema: unknown): boolean => {
  if (!isNode(schema)) return false
  if (isEnvelopeRef(schema)) return true
  const members = schema["anyOf"]
  return Array.isArray(members) && members.length > 0 && members.every(isEnvelopeRef)
}

/** An `anyOf` without repeated members (HttpApi lists `ErrorEnvelope` once per error class). */
const withoutRepeats = (schema: JsonSchema): JsonSchema => {
  const anyOf = schema["anyOf"]
  if (!Array.isArray(anyOf)) return schema
  const seen = new Set<string>()
  const members = anyOf.filter((member) => {
    const key = JSON.stringify(member)
    return seen.has(key) ? false : (seen.add(key), true)
  })
  const [only] = members
  return members.length === 1 && isNode(only) ? { ...only } : { ...schema, anyOf: members }
}

interface Codes {
  readonly rows: ReadonlyArray<Row>
  /** Description parts that are not catalogue errors (an HTML page, a JSON-RPC transport error). */
  readonly others: ReadonlyArray<string>
}

const codesOf = (status: string, response: OpenApi.OpenApiSpecResponse): Codes => {
  const rows: Array<Row> = []
  const others: Array<string> = []
  for (const text of response.description.split(" | ")) {
    const row = rowsByText.get(`${status}|${text}`)
    if (row === undefined) others.push(text)
    else rows.push(row)
  }
  return { rows, others }
}

/** Whether the response is only catalogue errors: one JSON media type, the envelope. */
const onlyEnvelope = (response: OpenApi.OpenApiSpecResponse, codes: Codes): boolean => {
  const content = response.content ?? {}
  return codes.others.length === 0 && codes.rows.length > 0 && Object.keys(content).length === 1 &&
    isEnvelopeSchema(content["application/json"]?.schema)
}

interface Example {
  readonly summary: string
  readonly value: unknown
}

const byKey = <A>(entries: Map<string, A>): Record<string, A> =>
  Object.fromEntries([...entries.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))

const codeList = (rows: ReadonlyArray<Row>): string => {
  const codes = rows.map((row) => `\`${row.code}\``)
  return codes.length === 1 ? codes[0]! : `${codes.slice(0, -1).join(", ")} or ${codes[codes.length - 1]!}`
}

/**
 * Rewrites error responses and collects what they reference: each distinct answer (a status
 * and its codes) once in `components.responses`, each code's example once in
 * `components.examples`. Deterministic: the components are sorted by key.
 */
export class ErrorResponses {
  readonly #examples = new Map<string, Example>()
  readonly #responses = new Map<string, OpenApi.OpenApiSpecResponse>()

  /** The example references of these codes (each example kept once, in `components.examples`). */
  #examplesOf(rows: ReadonlyArray<Row>, status: string): Record<string, { readonly $ref: string }> {
    const examples: Record<string, { readonly $ref: string }> = {}
    for (const row of rows) {
      const exampleKey = `${row.code}_${status}`
      this.#examples.set(exampleKey, { summary: `${row.code} (${status})`, value: errorEnvelopeExample(row.code, Number(status)) })
      examples[row.code] = { $ref: `#/components/examples/${exampleKey}` }
    }
    return examples
  }

  /**
   * An answer of catalogue errors only: a reference to the shared response. One that also
   * answers in another form (an HTML page, a JSON-RPC error): kept inline, its repeated members
   * dropped and the envelope's examples added.
   */
  response(status: string, response: OpenApi.OpenApiSpecResponse): OpenApi.OpenApiSpecResponse {
    const codes = codesOf(status, response)
    const { rows } = codes
    if (rows.length === 0) return response
    const listed = rows.length === 1
      ? `\`${rows[0]!.code}\`: ${rows[0]!.description}`
      : rows.map((row) => `- \`${row.code}\`: ${row.description}`).join("\n")
    if (!onlyEnvelope(response, codes)) {
      const content: OpenApi.OpenApiSpecContent = {}
      for (const [type, media] of Object.entries(response.content ?? {})) {
        const schema = withoutRepeats(media.schema)
        const carriesEnvelope = type === "application/json" &&
          (isEnvelopeRef(schema) || (isNode(schema) && Array.isArray(schema["anyOf"]) && schema["anyOf"].some(isEnvelopeRef)))
        // Built apart: the generated media type has no `examples` field, OpenAPI 3.1's has.
        const next = carriesEnvelope ? { ...media, schema, examples: this.#examplesOf(rows, status) } : { ...media, schema }
        content[type] = next
      }
      return { ...response, description: [...codes.others, listed].join("\n\n"), content }
    }
    const key = `Error_${status}.${rows.map((row) => row.code).join(".")}`
    if (!this.#responses.has(key)) {
      // Built apart: the generated media type has no `examples` field, OpenAPI 3.1's has.
      const media = { schema: { $ref: ENVELOPE_REF }, examples: this.#examplesOf(rows, status) }
      this.#responses.set(key, { description: listed, content: { "application/json": media } })
    }
    // A Reference Object; OpenAPI 3.1 lets its `description` stand beside the `$ref`.
    const reference = { $ref: `#/components/responses/${key}`, description: codeList(rows) }
    return reference
  }

  /** The shared error examples, by key. */
  examples(): Record<string, Example> {
    return byKey(this.#examples)
  }

  /** The shared error responses, by key. */
  responses(): Record<string, OpenApi.OpenApiSpecResponse> {
    return byKey(this.#responses)
  }
}
