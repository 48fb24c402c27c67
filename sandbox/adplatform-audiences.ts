/**
 * The ad platform's custom audiences (issue 20 part 5, decision 0100), kept apart from
 * adplatform.ts: a customer-list audience on an ad account, the full replace of its members in
 * sessions of ordered batches (the real platform's `usersreplace`: the new membership takes
 * effect on the last batch; a batch re-sent with its session and sequence replaces itself),
 * deleting an audience, and a lookalike of a customer list (refused under 100 matched members,
 * as on the real platform). Every row is validated (64 lowercase hex or "" per schema field).
 * `_state.custom_audiences` shows each audience with its members.
 */
import { type ApiContext, bodyFields, invalid, isSandboxReply, notFound, ok, refuse, type SandboxReply, type SandboxRoute } from "./kind.ts"

/** Field names a customer list accepts (the real platform's schema keys). */
export const AUDIENCE_FIELDS = ["EMAIL", "PHONE", "FN", "LN", "COUNTRY", "EXTERN_ID"] as const
/** Matched members a lookalike's source needs at least. */
export const LOOKALIKE_MIN_SOURCE = 100
const MAX_BATCH_ROWS = 10_000
const HASH = /^[0-9a-f]{64}$/

interface Audience {
  readonly id: string
  readonly account_id: string
  readonly subtype: "CUSTOM" | "LOOKALIKE"
  readonly name: string
  schema: ReadonlyArray<string>
  members: ReadonlyArray<ReadonlyArray<string>>
  deleted: boolean
  replaces: number
  readonly origin_audience_id: string | null
  readonly lookalike_spec: { readonly ratio: number; readonly country: string } | null
  /** The open replace session, its batches by sequence. */
  pending: { readonly session_id: number; readonly schema: ReadonlyArray<string>; readonly batches: Map<number, ReadonlyArray<ReadonlyArray<string>>> } | null
}

interface WorldLike {
  readonly accounts: ReadonlyArray<{ readonly id: string }>
}

interface Extra {
  readonly audiences: Map<string, Audience>
  next: number
}

const extras = new WeakMap<object, Extra>()
const extraOf = (world: object): Extra => {
  let found = extras.get(world)
  if (found === undefined) {
    found = { audiences: new Map(), next: 1 }
    extras.set(world, found)
  }
  return found
}

type Ctx = ApiContext

type Route = SandboxRoute<WorldLike>

const audienceOf = (world: WorldLike, ctx: Ctx): Audience | undefined => {
  const found = extraOf(world).audiences.get(ctx.params["id"] ?? "")
  return found === undefined || found.deleted || !ctx.reaches(found.account_id) ? undefined : found
}

const wire = (a: Audience) => ({
  id: a.id,
  account_id: a.account_id,
  subtype: a.subtype,
  name: a.name,
  approximate_count: a.members.length,
  ...(a.lookalike_spec === null ? {} : { origin_audience_id: a.origin_audience_id, lookalike_spec: a.lookalike_spec })
})

const createCustom = (world: WorldLike, ctx: Ctx, accountId: string, fields: Readonly<Record<string, unknown>>): SandboxReply => {
  const name = fields["name"]
  if (typeof name !== "string" || name.length === 0 || name.length > 200) return invalid("name must be 1 to 200 characters")
  if (fields["customer_file_source"] !== undefined && typeof fields["customer_file_source"] !== "string") {
    return invalid("customer_file_source must be a string")
  }
  const extra = extraOf(world)
  const audience: Audience = {
    id: `ca_${accountId.slice(4)}_${extra.next++}`,
    account_id: accountId,
    subtype: "CUSTOM",
    name,
    schema: [],
    members: [],
    deleted: false,
    replaces: 0,
    origin_audience_id: null,
    lookalike_spec: null,
    pending: null
  }
  extra.audiences.set(audience.id, audience)
  ctx.countWrite()
  return ok({ id: audience.id }, 201)
}

const createLookalike = (world: WorldLike, ctx: Ctx, accountId: string, fields: Readonly<Record<string, unknown>>): SandboxReply => {
  const name = fields["name"]
  if (typeof name !== "string" || name.length === 0 || name.length > 200) return invalid("name must be 1 to 200 characters")
  const originId = fields["origin_audience_id"]
  const origin = typeof originId === "string" ? extraOf(world).audiences.get(originId) : undefined
  if (origin === undefined || origin.deleted || origin.account_id !== accountId || origin.subtype !== "CUSTOM") {
    return invalid("origin_audience_id must be a customer-list audience of the account")
  }
  const spec = bodyFields(fields["lookalike_spec"])
  const ratio = spec["ratio"]
  const country = spec["country"]
  if (typeof ratio !== "number" || !(ratio >= 0.01 && ratio <= 0.2)) return invalid("lookalike_spec.ratio must be from 0.01 to 0.20")
  if (typeof country !== "string" || !/^[A-Z]{2}$/.test(country)) return invalid("lookalike_spec.country must be an ISO 3166-1 alpha-2 code in capitals")
  if (origin.members.length < LOOKALIKE_MIN_SOURCE) {
    return refuse(400, "lookalike_source_too_small", `the source audience needs at least ${LOOKALIKE_MIN_SOURCE} matched people`)
  }
  const extra = extraOf(world)
  const audience: Audience = {
    id: `ca_${accountId.slice(4)}_${extra.next++}`,
    account_id: accountId,
    subtype: "LOOKALIKE",
    name,
    schema: [],
    members: [],
    deleted: false,
    replaces: 0,
    origin_audience_id: origin.id,
    lookalike_spec: { ratio, country },
    pending: null
  }
  extra.audiences.set(audience.id, audience)
  ctx.countWrite()
  return ok({ id: audience.id }, 201)
}

/** A batch's schema and rows, or the refusal. */
const batchOf = (payload: Readonly<Record<string, unknown>>): { schema: ReadonlyArray<string>; data: ReadonlyArray<ReadonlyArray<string>> } | SandboxReply => {
  const schema = payload["schema"]
  if (
    !Array.isArray(schema) || schema.length === 0 ||
    !schema.every((f: unknown) => typeof f === "string" && AUDIENCE_FIELDS.some((known) => known === f)) ||
    new Set(schema).size !== schema.length
  ) {
    return invalid(`payload.schema must list distinct fields of ${AUDIENCE_FIELDS.join(", ")}`)
  }
  const data = payload["data"]
  if (!Array.isArray(data) || data.length > MAX_BATCH_ROWS) return invalid(`payload.data must be an array of at most ${MAX_BATCH_ROWS} rows`)
  const rows: Array<ReadonlyArray<string>> = []
  for (const row of data) {
    if (!Array.isArray(row) || row.length !== schema.length) return invalid("each row of payload.data has one value per schema field")
    const values: Array<string> = []
    for (const value of row) {
      if (typeof value !== "string" || (value !== "" && !HASH.test(value))) {
        return invalid("each value is the SHA-256 of the normalised field (64 lowercase hex characters), or \"\"")
      }
      values.push(value)
    }
    if (values.every((v) => v === "")) return invalid("a row has at least one value")
    rows.push(values)
  }
  return { schema: schema.filter((f: unknown): f is string => typeof f === "string"), data: rows }
}

const usersReplace = (world: WorldLike, ctx: Ctx): SandboxReply => {
  const audience = audienceOf(world, ctx)
  if (audience === undefined) return notFound(`custom audience ${ctx.params["id"]}`)
  const missing = ctx.requireWrite()
  if (missing !== undefined) return missing
  if (audience.subtype !== "CUSTOM") return invalid("only a customer-list audience takes users")
  const fields = bodyFields(ctx.body)
  const session = bodyFields(fields["session"])
  const sessionId = session["session_id"]
  const seq = session["batch_seq"]
  const last = session["last_batch_flag"]
  if (typeof sessionId !== "number" || !Number.isSafeInteger(sessionId) || sessionId <= 0) return invalid("session.session_id must be a positive integer")
  if (typeof seq !== "number" || !Number.isInteger(seq) || seq < 1) return invalid("session.batch_seq must be 1, 2, ...")
  if (typeof last !== "boolean") return invalid("session.last_batch_flag must be a boolean")
  const batch = batchOf(bodyFields(fields["payload"]))
  if (isSandboxReply(batch)) return batch
  // A new session id starts a new replace (what an earlier, unfinished one staged is dropped).
  if (audience.pending === null || audience.pending.session_id !== sessionId) {
    if (seq !== 1) return refuse(400, "replace_session_unknown", `session ${sessionId} is not open: start it with batch_seq 1`)
    audience.pending = { session_id: sessionId, schema: batch.schema, batches: new Map() }
  }
  const pending = audience.pending
  if (pending.schema.join(",") !== batch.schema.join(",")) return invalid("every batch of a session has the same schema")
  if (seq > pending.batches.size + 1) return invalid(`batch_seq ${seq} skips a batch: next is ${pending.batches.size + 1}`)
  pending.batches.set(seq, batch.data)
  if (last) {
    const members = new Map<string, ReadonlyArray<string>>()
    for (const rows of [...pending.batches.entries()].sort((a, b) => a[0] - b[0]).map(([, r]) => r)) {
      for (const row of rows) members.set(row.join("|"), row)
    }
    audience.schema = pending.schema
    audience.members = [...members.values()]
    audience.replaces++
    audience.pending = null
  }
  ctx.countWrite()
  return ok({ account_id: audience.account_id, session_id: sessionId, num_received: batch.data.length, num_invalid_entries: 0 })
}

export const audienceRoutes: ReadonlyArray<Route> = [
  {
    // Creates a customer-list (`subtype: CUSTOM`) or lookalike (`subtype: LOOKALIKE`) audience.
    method: "POST",
    path: "/v1/accounts/:account/customaudiences",
    handler: (world, ctx) => {
      const accountId = ctx.params["account"] ?? ""
      if (!world.accounts.some((a) => a.id === accountId) || !ctx.reaches(accountId)) return notFound(`ad account ${accountId}`)
      const missing = ctx.requireWrite()
      if (missing !== undefined) return missing
      const fields = bodyFields(ctx.body)
      switch (fields["subtype"]) {
        case "CUSTOM":
          return createCustom(world, ctx, accountId, fields)
        case "LOOKALIKE":
          return createLookalike(world, ctx, accountId, fields)
        default:
          return invalid("subtype must be CUSTOM or LOOKALIKE")
      }
    }
  },
  {
    method: "GET",
    path: "/v1/customaudiences/:id",
    handler: (world, ctx) => {
      const audience = audienceOf(world, ctx)
      return audience === undefined ? notFound(`custom audience ${ctx.params["id"]}`) : ok(wire(audience))
    }
  },
  { method: "POST", path: "/v1/customaudiences/:id/usersreplace", handler: usersReplace },
  {
    method: "DELETE",
    path: "/v1/customaudiences/:id",
    handler: (world, ctx) => {
      const audience = audienceOf(world, ctx)
      if (audience === undefined) return notFound(`custom audience ${ctx.params["id"]}`)
      const missing = ctx.requireWrite()
      if (missing !== undefined) return missing
      audience.deleted = true
      ctx.countWrite()
      return ok({ success: true })
    }
  }
]

/** `_state.custom_audiences`: every audience ever created, deleted ones flagged, with its members. */
export const audiencesState = (world: object) =>
  [...extraOf(world).audiences.values()].map((a) => ({
    ...wire(a),
    deleted: a.deleted,
    schema: a.schema,
    members: a.members,
    replaces: a.replaces
  }))
