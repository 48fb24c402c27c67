/**
 * The agent surface's protocol (decision 0103): Model Context Protocol over JSON-RPC 2.0 as the
 * Streamable HTTP transport carries it. `initialize`, `notifications/initialized`, `ping`,
 * `tools/list`, `tools/call`; tools are ./tools.ts. Stateless: the `Mcp-Session-Id` issued at
 * `initialize` carries its protocol revision and a digest binding it to the token, so any runner
 * checks it without storage.
 */
import { createHash, randomBytes } from "node:crypto"
import { Context, Effect, Layer, Option, Schema } from "effect"
import {
  type DatabaseUnavailable,
  EntitlementRequired,
  InsufficientScope,
  InternalError,
  NotFound,
  type RateLimitExceeded,
  statusOfFailure,
  toEnvelope,
  ValidationError
} from "../../schema/errors.ts"
import { formatContractIssues } from "../../schema/issue-format.ts"
import { MCP_PROTOCOL_VERSIONS, type McpProtocolVersion } from "../../schema/mcp.ts"
import { scopesOfMembership } from "../../schema/members.ts"
import { isUuid } from "../../schema/common.ts"
import { CredentialStore, type PrincipalShape } from "../kernel/principal.ts"
import { AnalyticsService } from "../analytics/overview/service.ts"
import { CampaignsService } from "../analytics/campaigns/service.ts"
import { Calibrations } from "../analytics/calibration.ts"
import { Definitions } from "../attribution/definitions/service.ts"
import { CustomersService } from "../identity/customers/service.ts"
import { EventsService } from "../ingestion/events/outcomes/service.ts"
import { ExportPipeline } from "../exports/pipeline/service.ts"
import { ExperimentReads } from "../experiments/service.ts"
import { ConversionSyncWiring } from "../exports/wiring/service.ts"
import { AdActions } from "../ads/actions/service.ts"
import { Recommendations } from "../ads/recommendations/service.ts"
import { Workspaces } from "../accounts/workspaces/service.ts"
import { CurrentRequestId } from "../platform/request-id.ts"
import { digestsEqual } from "../platform/secrets.ts"
import { VERSION } from "../platform/version.ts"
import { McpRepo } from "./repo.ts"
import { makeTools, type McpTool, toolScopeRefusal } from "./tools.ts"

export type UserTokenPrincipal = PrincipalShape & { readonly kind: "user_token" }

/** What the transport hands over: the raw body and the two MCP headers. */
export interface McpRequest {
  readonly body: string
  readonly sessionId: string | undefined
  readonly protocolVersion: string | undefined
}

/** The HTTP answer: a status, a JSON body (none for 202) and the session id to set at `initialize`. */
export interface McpAnswer {
  readonly status: number
  readonly body?: unknown
  readonly sessionId?: string
}

/** JSON-RPC error codes (JSON-RPC 2.0, section 5.1) and the one MCP uses for an unknown session. */
export const RpcCode = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  sessionNotFound: -32001
} as const

type Id = string | number

interface RpcRequest {
  readonly id: Id | undefined
  readonly method: string
  readonly params: Record<string, unknown>
}

/** A batch element or single message as read: a request (or notification), a client's response, or not a message. */
type Read =
  | { readonly _tag: "Request"; readonly request: RpcRequest }
  | { readonly _tag: "ClientResponse" }
  | { readonly _tag: "Invalid"; readonly id: Id | null; readonly message: string }

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The published `id` schema's integers are the safe ones; a larger number would not survive a round trip anyway. */
const isId = (u: unknown): u is Id => typeof u === "string" || (typeof u === "number" && Number.isSafeInteger(u))

const readMessage = (u: unknown): Read => {
  if (!isRecord(u)) return { _tag: "Invalid", id: null, message: "A JSON-RPC message is a JSON object." }
  const id = "id" in u ? u["id"] : undefined
  const echoId = isId(id) ? id : null
  if (u["jsonrpc"] !== "2.0") return { _tag: "Invalid", id: echoId, message: "jsonrpc must be \"2.0\"." }
  if (!("method" in u)) {
    // A client's answer to a server request: this server sends none, so it is accepted and ignored.
    if (isId(id) && ("result" in u || "error" in u)) return { _tag: "ClientResponse" }
    return { _tag: "Invalid", id: echoId, message: "method is missing." }
  }
  if (typeof u["method"] !== "string") return { _tag: "Invalid", id: echoId, message: "method must be a string." }
  if (id !== undefined && !isId(id)) {
    return { _tag: "Invalid", id: null, message: "id must be a string or a safe integer (MCP forbids null)." }
  }
  const params = u["params"]
  if (params !== undefined && !isRecord(params)) return { _tag: "Invalid", id: echoId, message: "params must be an object." }
  return { _tag: "Request", request: { id, method: u["method"], params: params ?? {} } }
}

const rpcError = (id: Id | null, code: number, message: string, data?: unknown) => ({
  jsonrpc: "2.0" as const,
  id,
  error: data === undefined ? { code, message } : { code, message, data }
})

const rpcResult = (id: Id, result: Record<string, unknown>) => ({ jsonrpc: "2.0" as const, id, result })

type RpcResponse = ReturnType<typeof rpcError> | ReturnType<typeof rpcResult>

/** A JSON-RPC failure of a whole request (before any method runs). */
const refuse = (status: number, code: number, message: string, id: Id | null = null): McpAnswer => ({
  status,
  body: rpcError(id, code, message)
})

const isSupported = (version: string): version is McpProtocolVersion =>
  MCP_PROTOCOL_VERSIONS.some((supported) => supported === version)

const sessionDigest = (tokenId: string, version: string, nonce: string) =>
  createHash("sha256").update(`mcp-session\u0000${tokenId}\u0000${version}\u0000${nonce}`, "utf8").digest("hex").slice(0, 32)

/** `<revision>.<nonce>.<digest>`: visible ASCII, as the transport requires. */
const issueSession = (tokenId: string, version: McpProtocolVersion) => {
  const nonce = randomBytes(16).toString("base64url")
  return `${version}.${nonce}.${sessionDigest(tokenId, version, nonce)}`
}

/** The revision a session id was issued for, when it was issued to this token; undefined otherwise. */
const sessionVersion = (tokenId: string, sessionId: string): McpProtocolVersion | undefined => {
  const [version, nonce, digest, ...rest] = sessionId.split(".")
  if (version === undefined || nonce === undefined || digest === undefined || rest.length > 0) return undefined
  if (!isSupported(version)) return undefined
  return digestsEqual(digest, sessionDigest(tokenId, version, nonce)) ? version : undefined
}

/** A catalogued error's envelope (the same body its HTTP route answers); anything else is `internal_error`. */
const envelopeOf = (failure: unknown, requestId: string) => {
  if (
    statusOfFailure(failure) !== 500 && isRecord(failure) && typeof failure["_tag"] === "string" &&
    typeof failure["message"] === "string"
  ) {
    return toEnvelope({ ...failure, _tag: failure["_tag"], message: failure["message"] }, requestId)
  }
  return toEnvelope(new InternalError({ message: "The tool failed unexpectedly. Report the request_id." }), requestId)
}

/** The `tools/call` result of a refused or failed call: `isError`, the envelope as text and as structured content. */
const toolError = (failure: unknown, requestId: string) => {
  const envelope = envelopeOf(failure, requestId)
  return { content: [{ type: "text", text: JSON.stringify(envelope) }], structuredContent: envelope, isError: true }
}

const toolResult = (value: unknown) => {
  const structured = isRecord(value) ? value : { data: value }
  return { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured, isError: false }
}

/** A tool's `inputSchema`: the JSON Schema of its Effect schema's encoded side, definitions inlined under `$defs`. */
const inputSchemaOf = (tool: McpTool) => {
  const document = Schema.toJsonSchemaDocument(tool.input, { onExcessProperty: "error" })
  const definitions = Object.keys(document.definitions).length > 0 ? { $defs: document.definitions } : {}
  return { ...document.schema, ...definitions }
}

const validationError = (issue: Schema.SchemaError) => {
  const issues = formatContractIssues(issue.issue).issues
  const message = issues.length === 0
    ? "arguments: invalid"
    : issues.slice(0, 5).map((one) =>
      [
        "arguments",
        ...(one.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment))
      ].join(".") + `: ${one.message}`
    ).join("; ")
  return new ValidationError({ message })
}

const INSTRUCTIONS =
  "Marketing attribution reads and a few writes over the same API as /api/v1. Call list_profiles first: every other " +
  "tool except list_workspaces takes a profile_id. A refused or failed call answers isError with the API's error envelope."

export class McpServer extends Context.Service<McpServer, {
  /**
   * Answers one POST body. `meter` takes the request's units from the token's per-minute
   * allowance once the body is read (a `tools/call` costs what its HTTP operation costs).
   */
  readonly handle: (
    principal: UserTokenPrincipal,
    request: McpRequest,
    meter: (units: number) => Effect.Effect<void, RateLimitExceeded>
  ) => Effect.Effect<McpAnswer, RateLimitExceeded | DatabaseUnavailable>
  readonly tools: ReadonlyArray<McpTool>
}>()("svc/McpServer") {
  static readonly layer = Layer.effect(McpServer)(
    Effect.gen(function*() {
      const store = yield* CredentialStore
      const repo = yield* McpRepo
      const tools = makeTools({
        analytics: yield* AnalyticsService,
        campaigns: yield* CampaignsService,
        events: yield* EventsService,
        customers: yield* CustomersService,
        recommendations: yield* Recommendations,
        definitions: yield* Definitions,
        wiring: yield* ConversionSyncWiring,
        exports: yield* ExportPipeline,
        workspaces: yield* Workspaces,
        experiments: yield* ExperimentReads,
        calibrations: yield* Calibrations,
        repo
      })
      const byName = new Map(tools.map((tool) => [tool.name, tool]))
      const catalogue = tools.map((tool) => ({
        tool,
        listing: {
          name: tool.name,
          title: tool.title,
          description: tool.description,
          inputSchema: inputSchemaOf(tool),
          annotations: {
            title: tool.title,
            readOnlyHint: !tool.write,
            destructiveHint: false,
            idempotentHint: true,
            openWorldHint: false
          }
        }
      }))
      /**
       * What `tools/list` shows this token: the tools its grant lets it call, by the rule
       * `tools/call` enforces. A profile where the person's membership is narrower still refuses.
       */
      const listedFor = (principal: UserTokenPrincipal) =>
        catalogue.filter(({ tool }) => toolScopeRefusal(tool, principal.scopes) === undefined).map(({ listing }) => listing)

      /** The profile a call names, as the person reaches it, with the scopes the token holds there. */
      const onProfile = Effect.fn("Mcp.onProfile")(function*(principal: UserTokenPrincipal, tool: McpTool, profileId: string) {
        if (!isUuid(profileId)) return yield* new NotFound({ message: "No such profile." })
        const found = yield* store.membership(principal.userId, profileId.toLowerCase())
        if (Option.isNone(found)) return yield* new NotFound({ message: "No such profile." })
        const { membership, profile } = found.value
        // Read now rather than through the credential cache: switching writeback off stops agents at once.
        if (tool.write && !(yield* repo.writebackEnabled(profile.workspaceId))) {
          return yield* new InsufficientScope({
            message: "This workspace does not let MCP user tokens write (mcp_writeback_enabled is off in its MCP settings).",
            reason: "mcp_writeback_disabled"
          })
        }
        if (tool.entitlement && !profile.attributionEnabled) {
          return yield* new EntitlementRequired({
            message: "The attribution add-on (svc_attribution) is off for this profile; the provisioning app turns it on.",
            reason: "entitlement_required:svc_attribution"
          })
        }
        const allowed: ReadonlyArray<string> = scopesOfMembership(membership)
        const intersected = principal.scopes.filter((scope) => allowed.includes(scope))
        // pii_mode `redacted` (the default): personal data never reaches an agent, whatever the grant.
        const scopes = intersected.includes("customers:read") && (yield* repo.piiMode(profile.workspaceId)) === "redacted"
          ? intersected.filter((scope) => scope !== "customers:read")
          : intersected
        const refused = toolScopeRefusal(tool, scopes, {
          grant: principal.scopes,
          membership: allowed,
          workspaceRole: membership.workspaceRole
        })
        if (refused !== undefined) return yield* refused
        return { principal: { ...principal, profile, scopes }, profile }
      })

      const callTool = Effect.fn("Mcp.callTool")(function*(principal: UserTokenPrincipal, tool: McpTool, args: unknown) {
        const requestId = yield* CurrentRequestId
        const decoded = yield* Effect.result(
          Schema.decodeUnknownEffect(tool.input)(args ?? {}, { onExcessProperty: "error" })
        )
        if (decoded._tag === "Failure") return toolError(validationError(decoded.failure), requestId)
        const run = tool.grain === "person"
          ? tool.run(args ?? {}, { principal })
          : Effect.flatMap(
            onProfile(principal, tool, isRecord(args) && typeof args["profile_id"] === "string" ? args["profile_id"] : ""),
            (call) => tool.run(args, call)
          )
        const outcome = yield* Effect.result(tool.grain === "person" && tool.scopes.length > 0
          ? Effect.flatMap(
            Effect.suspend(() => {
              const refused = toolScopeRefusal(tool, principal.scopes)
              return refused === undefined ? Effect.void : Effect.fail(refused)
            }),
            () => run
          )
          : run)
        if (outcome._tag === "Failure") {
          if (statusOfFailure(outcome.failure) === 500) yield* Effect.logWarning("MCP tool failed", tool.name, outcome.failure)
          return toolError(outcome.failure, requestId)
        }
        return toolResult(outcome.success)
      })

      const answer = Effect.fn("Mcp.answer")(function*(
        principal: UserTokenPrincipal,
        request: RpcRequest,
        version: McpProtocolVersion
      ): Effect.fn.Return<RpcResponse | undefined> {
        const { id, method, params } = request
        if (id === undefined) return undefined // a notification: nothing to answer
        switch (method) {
          case "initialize":
            return rpcResult(id, {
              protocolVersion: version,
              capabilities: { tools: { listChanged: false } },
              serverInfo: { name: "attribution-service", title: "Attribution Service", version: VERSION },
              instructions: INSTRUCTIONS
            })
          case "ping":
            return rpcResult(id, {})
          case "tools/list":
            return rpcResult(id, { tools: listedFor(principal) })
          case "tools/call": {
            const name = params["name"]
            if (typeof name !== "string") return rpcError(id, RpcCode.invalidParams, "params.name must be a tool name.")
            const tool = byName.get(name)
            if (tool === undefined) return rpcError(id, RpcCode.invalidParams, `Unknown tool: ${name}.`)
            const result = yield* callTool(principal, tool, params["arguments"])
            return rpcResult(id, result)
          }
          default:
            return rpcError(id, RpcCode.methodNotFound, `Method not found: ${method}.`)
        }
      })

      const handle = Effect.fn("Mcp.handle")(function*(
        principal: UserTokenPrincipal,
        request: McpRequest,
        meter: (units: number) => Effect.Effect<void, RateLimitExceeded>
      ) {
        // JSON.parse is the one throwing call; its failure is the JSON-RPC parse error.
        const text = request.body
        const parseResult = yield* Effect.result(Effect.try({ try: (): unknown => JSON.parse(text), catch: () => "unparsable" }))
        if (parseResult._tag === "Failure") {
          yield* meter(1)
          return refuse(400, RpcCode.parseError, "Parse error: the body is not valid JSON.")
        }
        const parsed = parseResult.success
        const batch = Array.isArray(parsed)
        const messages: ReadonlyArray<unknown> = Array.isArray(parsed) ? parsed : [parsed]
        const reads = messages.map(readMessage)
        const requests = reads.flatMap((read) => (read._tag === "Request" ? [read.request] : []))
        const units = Math.max(1, requests.reduce((sum, one) => {
          const name = one.params["name"]
          const tool = one.method === "tools/call" && typeof name === "string" ? byName.get(name) : undefined
          return sum + (tool?.cost ?? 1)
        }, 0))
        yield* meter(units)
        if (batch && messages.length === 0) return refuse(400, RpcCode.invalidRequest, "An empty batch is not a request.")
        if (!batch && reads[0]?._tag === "Invalid") return refuse(400, RpcCode.invalidRequest, reads[0].message, reads[0].id)

        const initialize = requests.find((one) => one.method === "initialize")
        if (initialize !== undefined) {
          if (batch) return refuse(400, RpcCode.invalidRequest, "initialize must be sent alone, not in a batch.")
          if (initialize.id === undefined) return refuse(400, RpcCode.invalidRequest, "initialize is a request: it needs an id.")
          const asked = initialize.params["protocolVersion"]
          if (typeof asked !== "string") {
            return refuse(400, RpcCode.invalidParams, "params.protocolVersion must name a protocol revision.", initialize.id)
          }
          // The client's revision when this server speaks it; otherwise the newest this server speaks.
          const version = isSupported(asked) ? asked : MCP_PROTOCOL_VERSIONS[0]
          const response = yield* answer(principal, initialize, version)
          return { status: 200, body: response, sessionId: issueSession(principal.tokenId, version) }
        }

        // Every message after initialize belongs to the session it opened.
        if (request.sessionId === undefined || request.sessionId === "") {
          return refuse(400, RpcCode.invalidRequest, "Mcp-Session-Id is required: send the id initialize answered with.")
        }
        const sessionRevision = sessionVersion(principal.tokenId, request.sessionId)
        if (sessionRevision === undefined) {
          return refuse(404, RpcCode.sessionNotFound, "Unknown session: initialize again for a new Mcp-Session-Id.")
        }
        if (request.protocolVersion !== undefined && !isSupported(request.protocolVersion)) {
          return refuse(
            400,
            RpcCode.invalidRequest,
            `Unsupported MCP-Protocol-Version ${request.protocolVersion}: this server speaks ${MCP_PROTOCOL_VERSIONS.join(", ")}.`
          )
        }
        const version = request.protocolVersion !== undefined && isSupported(request.protocolVersion)
          ? request.protocolVersion
          : sessionRevision
        if (batch && version !== "2025-03-26") {
          return refuse(400, RpcCode.invalidRequest, `Batches are not part of protocol revision ${version}: send one message per request.`)
        }

        const responses: Array<RpcResponse> = []
        for (const read of reads) {
          if (read._tag === "Invalid") responses.push(rpcError(read.id, RpcCode.invalidRequest, read.message))
          if (read._tag !== "Request") continue
          const response = yield* answer(principal, read.request, version)
          if (response !== undefined) responses.push(response)
        }
        if (responses.length === 0) return { status: 202 }
        return { status: 200, body: batch ? responses : responses[0] }
      })

      return { handle, tools }
    })
  ).pipe(
    Layer.provide([
      McpRepo.layer,
      AnalyticsService.layer,
      CampaignsService.layer,
      EventsService.layer,
      CustomersService.layer,
      Recommendations.layer.pipe(Layer.provide(AdActions.layer)),
      Definitions.layer,
      ConversionSyncWiring.layer,
      ExportPipeline.layer,
      Workspaces.layer,
      ExperimentReads.layer
    ])
  )
}
