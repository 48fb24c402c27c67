/** Between the seeded worlds (world-kit.ts) and the sandbox core's replies (kind.ts). */
import { type ApiContext, notFound, ok, type PushContext, refuse, type SandboxReply } from "./kind.ts"
import { type Arrived, type WorldPush, WorldRefusal } from "./world-kit.ts"

/** A world's answer as the provider's reply: its refusal as the error body, anything else as 200. */
export const reply = (answer: unknown): SandboxReply =>
  answer instanceof WorldRefusal ? refuse(answer.status, answer.code, answer.message) : ok(answer)

/** `?limit` and `?after` of a list request. */
export const pageQuery = (query: URLSearchParams) => {
  const limit = query.get("limit")
  const after = query.get("after")
  return {
    ...(limit === null ? {} : { limit: Number(limit) }),
    ...(after === null ? {} : { after })
  }
}

/** A query filter, absent when not given. */
export const filter = (query: URLSearchParams, name: string) => {
  const value = query.get(name)
  return value === null ? {} : { [name]: value }
}

/** Queues a world's pushes with the core (signed and posted to the account's subscribers). */
export const pushAll = (ctx: PushContext, pushes: ReadonlyArray<WorldPush>) => {
  for (const push of pushes) ctx.push(push.accountId, push.body)
}

/** The reply of a test control that applied and pushed. */
export const applied = (ctx: PushContext, answer: ReadonlyArray<WorldPush> | WorldRefusal): SandboxReply | undefined => {
  if (answer instanceof WorldRefusal) return reply(answer)
  pushAll(ctx, answer)
  return undefined
}

/** A route on `/v1/accounts/:account/...`: runs when the grant reaches the account, else 404 as for an unknown one. */
export const onAccount = <W>(run: (world: W, accountId: string, ctx: ApiContext) => SandboxReply) =>
(world: W, ctx: ApiContext): SandboxReply => {
  const accountId = ctx.params["account"] ?? ""
  return ctx.reaches(accountId) ? run(world, accountId, ctx) : notFound(`account ${accountId}`)
}

/** The reply to an arrival: 201 with what arrived, its pushes queued; or the world's refusal. */
export const arrived = (ctx: PushContext, answer: Arrived | WorldRefusal): SandboxReply => {
  if (answer instanceof WorldRefusal) return reply(answer)
  pushAll(ctx, answer.pushes)
  return ok(answer.reply, 201)
}
