/**
 * The simulated CRM: portals (accounts), each with pipelines of stages (labels in English and
 * Spanish) and deals moving through them, each deal with its contact (email, phone and the
 * CRM's own contact id). Seeded deterministically; `PATCH _state` moves a deal as a person
 * dragging it in the CRM's board would, and pushes `deal.stage_changed` to subscribers.
 */
import { randomUUID } from "node:crypto"
import { Result, Schema } from "effect"
import {
  type Arrived,
  isoAt,
  keysetPage,
  listSince,
  ownedOne,
  type Page,
  SEED_EPOCH_MS,
  seededPerson,
  seededRandom,
  seedOf,
  type WorldPush,
  worldPush,
  WorldRefusal
} from "../world-kit.ts"

export interface CrmAccount {
  readonly id: string
  readonly name: string
  readonly currency: string
  readonly timezone: string
}

/** `won` and `lost` close a deal; the service suggests an outcome per stage from it. */
export type CrmStageKind = "open" | "won" | "lost"

export interface CrmStage {
  readonly id: string
  readonly label: { readonly en: string; readonly es: string }
  readonly position: number
  readonly kind: CrmStageKind
}

export interface CrmPipeline {
  readonly id: string
  readonly account_id: string
  readonly label: { readonly en: string; readonly es: string }
  readonly stages: ReadonlyArray<CrmStage>
}

export interface CrmContact {
  readonly id: string
  readonly email: string | null
  readonly phone: string | null
  readonly first_name: string | null
  readonly last_name: string | null
}

export interface CrmDeal {
  readonly id: string
  readonly account_id: string
  readonly pipeline_id: string
  readonly stage_id: string
  readonly name: string
  /** Integer minor units of `currency`. */
  readonly amount_minor: number
  readonly currency: string
  readonly contact: CrmContact
  readonly created_at: string
  readonly updated_at: string
}

const ACCOUNTS: ReadonlyArray<CrmAccount> = [
  { id: "crm_portal_1001", name: "Sandbox CRM portal", currency: "EUR", timezone: "Europe/Madrid" },
  { id: "crm_portal_1002", name: "Sandbox CRM second portal", currency: "USD", timezone: "America/New_York" }
]

const PIPELINE_TEMPLATES: ReadonlyArray<{
  readonly key: string
  readonly label: { readonly en: string; readonly es: string }
  readonly stages: ReadonlyArray<{ readonly key: string; readonly en: string; readonly es: string; readonly kind: CrmStageKind }>
}> = [
  {
    key: "sales",
    label: { en: "Sales", es: "Ventas" },
    stages: [
      { key: "new", en: "New lead", es: "Nuevo contacto", kind: "open" },
      { key: "qualified", en: "Qualified", es: "Cualificado", kind: "open" },
      { key: "proposal", en: "Proposal sent", es: "Propuesta enviada", kind: "open" },
      { key: "won", en: "Closed won", es: "Ganado", kind: "won" },
      { key: "lost", en: "Closed lost", es: "Perdido", kind: "lost" }
    ]
  },
  {
    key: "appointments",
    label: { en: "Appointments", es: "Citas" },
    stages: [
      { key: "booked", en: "Appointment booked", es: "Cita reservada", kind: "open" },
      { key: "attended", en: "Attended", es: "Asistió", kind: "open" },
      { key: "paid", en: "Paid", es: "Pagado", kind: "won" },
      { key: "no_show", en: "No show", es: "No asistió", kind: "lost" }
    ]
  }
]

export const CRM_SEEDED_DEALS_PER_ACCOUNT = 40

const DealMove = Schema.Struct({ id: Schema.String, stage_id: Schema.String })
const DealArrival = Schema.Struct({
  kind: Schema.Literal("deal"),
  account_id: Schema.optionalKey(Schema.String),
  pipeline_id: Schema.optionalKey(Schema.String),
  stage_id: Schema.optionalKey(Schema.String),
  name: Schema.optionalKey(Schema.String),
  amount_minor: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))),
  currency: Schema.optionalKey(Schema.String),
  contact: Schema.optionalKey(Schema.Struct({
    id: Schema.optionalKey(Schema.String),
    email: Schema.optionalKey(Schema.NullOr(Schema.String)),
    phone: Schema.optionalKey(Schema.NullOr(Schema.String)),
    first_name: Schema.optionalKey(Schema.NullOr(Schema.String)),
    last_name: Schema.optionalKey(Schema.NullOr(Schema.String))
  }))
})

export class CrmWorld {
  readonly accounts: ReadonlyArray<CrmAccount> = ACCOUNTS
  private readonly pipelines: Array<CrmPipeline> = []
  private readonly deals = new Map<string, CrmDeal>()

  private readonly now: () => number

  constructor(now: () => number = Date.now) {
    this.now = now
    for (const account of ACCOUNTS) {
      const random = seededRandom(seedOf(account.id))
      const suffix = account.id.slice("crm_portal_".length)
      for (const template of PIPELINE_TEMPLATES) {
        this.pipelines.push({
          id: `pipe_${suffix}_${template.key}`,
          account_id: account.id,
          label: template.label,
          stages: template.stages.map((stage, position) => ({
            id: `stage_${suffix}_${template.key}_${stage.key}`,
            label: { en: stage.en, es: stage.es },
            position,
            kind: stage.kind
          }))
        })
      }
      const accountPipelines = this.pipelines.filter((pipeline) => pipeline.account_id === account.id)
      for (let n = 1; n <= CRM_SEEDED_DEALS_PER_ACCOUNT; n++) {
        const pipeline = random.pick(accountPipelines)
        const stage = random.pick(pipeline.stages)
        const person = seededPerson(random, n, "crm.example")
        const createdMs = SEED_EPOCH_MS - random.int(5, 90) * 86_400_000 - random.int(0, 86_399) * 1000
        const updatedMs = createdMs + random.int(0, 4 * 86_400) * 1000
        const id = `deal_${suffix}_${String(n).padStart(4, "0")}`
        this.deals.set(id, {
          id,
          account_id: account.id,
          pipeline_id: pipeline.id,
          stage_id: stage.id,
          name: `${person.first_name} ${person.last_name}: ${pipeline.label.en.toLowerCase()}`,
          amount_minor: random.int(20, 2_000) * 100,
          currency: account.currency,
          contact: { id: `contact_${suffix}_${String(n).padStart(4, "0")}`, ...person },
          created_at: isoAt(createdMs),
          updated_at: isoAt(updatedMs)
        })
      }
    }
  }

  state() {
    return {
      accounts: this.accounts,
      pipelines: this.pipelines,
      deals: [...this.deals.values()].sort((a, b) => (a.id < b.id ? -1 : 1))
    }
  }

  // --- the provider's API -----------------------------------------------------------------

  listPipelines(accountId: string, query: { readonly limit?: number; readonly after?: string }): Page<CrmPipeline> | WorldRefusal {
    return keysetPage(this.pipelines.filter((pipeline) => pipeline.account_id === accountId), (p) => p.id, query)
  }

  /** Deals of the account updated at or after `updated_since`, oldest change first. */
  listDeals(
    accountId: string,
    query: { readonly limit?: number; readonly after?: string; readonly updated_since?: string }
  ): Page<CrmDeal> | WorldRefusal {
    return listSince(this.deals.values(), {
      owned: (deal) => deal.account_id === accountId,
      filter: "updated_since",
      since: query.updated_since,
      at: (deal) => deal.updated_at
    }, query)
  }

  getDeal(accountId: string, id: string): CrmDeal | WorldRefusal {
    return ownedOne(this.deals.get(id), (deal) => deal.account_id === accountId, "deal", id)
  }

  /** The API's write: moves a deal to another stage of its pipeline (pushes `deal.stage_changed`). */
  updateDeal(accountId: string, id: string, body: unknown): { deal: CrmDeal; pushes: Array<WorldPush> } | WorldRefusal {
    const found = this.getDeal(accountId, id)
    if (found instanceof WorldRefusal) return found
    const decoded = Schema.decodeUnknownResult(Schema.Struct({ stage_id: Schema.String }))(body)
    if (Result.isFailure(decoded)) return new WorldRefusal(400, "invalid_parameter", "stage_id is required")
    return this.move(found, decoded.success.stage_id)
  }

  // --- test controls ----------------------------------------------------------------------

  /** `{objects: [{id: <deal id>, stage_id}]}`: each deal moves and `deal.stage_changed` is pushed. */
  patchObjects(objects: ReadonlyArray<unknown>): Array<WorldPush> | WorldRefusal {
    const moves: Array<{ readonly deal: CrmDeal; readonly stageId: string }> = []
    for (const object of objects) {
      const decoded = Schema.decodeUnknownResult(DealMove)(object)
      if (Result.isFailure(decoded)) {
        return new WorldRefusal(400, "invalid_parameter", "objects[] must be {id: <deal id>, stage_id}")
      }
      const deal = this.deals.get(decoded.success.id)
      if (!deal) return new WorldRefusal(404, "not_found", `no deal ${decoded.success.id}`)
      moves.push({ deal, stageId: decoded.success.stage_id })
    }
    // Checked first, applied after: a bad object changes nothing.
    for (const { deal, stageId } of moves) {
      if (!this.stageOf(deal.pipeline_id, stageId)) {
        return new WorldRefusal(400, "invalid_parameter", `stage ${stageId} is not in pipeline ${deal.pipeline_id}`)
      }
    }
    const pushes: Array<WorldPush> = []
    for (const { deal, stageId } of moves) {
      const moved = this.move(this.deals.get(deal.id)!, stageId)
      if (!(moved instanceof WorldRefusal)) pushes.push(...moved.pushes)
    }
    return pushes
  }

  /** `{arrive: {kind: "deal", ...}}`: a deal created in the CRM (pushes `deal.created`). */
  arrive(arrival: unknown): Arrived | WorldRefusal {
    const decoded = Schema.decodeUnknownResult(DealArrival)(arrival)
    if (Result.isFailure(decoded)) {
      return new WorldRefusal(400, "invalid_parameter", "arrive must be {kind: \"deal\", account_id?, pipeline_id?, stage_id?, name?, amount_minor?, currency?, contact?}")
    }
    const input = decoded.success
    const account = ACCOUNTS.find((candidate) => candidate.id === (input.account_id ?? ACCOUNTS[0]!.id))
    if (!account) return new WorldRefusal(404, "not_found", `no account ${input.account_id}`)
    const pipeline = this.pipelines.find((candidate) =>
      candidate.account_id === account.id && (input.pipeline_id === undefined || candidate.id === input.pipeline_id)
    )
    if (!pipeline) return new WorldRefusal(404, "not_found", `no pipeline ${input.pipeline_id} in ${account.id}`)
    const stage = input.stage_id === undefined ? pipeline.stages[0] : this.stageOf(pipeline.id, input.stage_id)
    if (!stage) return new WorldRefusal(400, "invalid_parameter", `stage ${input.stage_id} is not in pipeline ${pipeline.id}`)
    const at = isoAt(this.now())
    const token = randomUUID().replaceAll("-", "").slice(0, 12)
    const deal: CrmDeal = {
      id: `deal_${token}`,
      account_id: account.id,
      pipeline_id: pipeline.id,
      stage_id: stage.id,
      name: input.name ?? "New deal",
      amount_minor: input.amount_minor ?? 0,
      currency: input.currency ?? account.currency,
      contact: {
        id: input.contact?.id ?? `contact_${token}`,
        email: input.contact?.email ?? null,
        phone: input.contact?.phone ?? null,
        first_name: input.contact?.first_name ?? null,
        last_name: input.contact?.last_name ?? null
      },
      created_at: at,
      updated_at: at
    }
    this.deals.set(deal.id, deal)
    return { reply: { deal }, pushes: [this.push(deal, "deal.created", { object: deal })] }
  }

  private stageOf(pipelineId: string, stageId: string): CrmStage | undefined {
    return this.pipelines.find((pipeline) => pipeline.id === pipelineId)?.stages.find((stage) => stage.id === stageId)
  }

  private move(deal: CrmDeal, stageId: string): { deal: CrmDeal; pushes: Array<WorldPush> } | WorldRefusal {
    if (!this.stageOf(deal.pipeline_id, stageId)) {
      return new WorldRefusal(400, "invalid_parameter", `stage ${stageId} is not in pipeline ${deal.pipeline_id}`)
    }
    if (deal.stage_id === stageId) return { deal, pushes: [] }
    const moved: CrmDeal = { ...deal, stage_id: stageId, updated_at: isoAt(Math.max(this.now(), Date.parse(deal.updated_at) + 1)) }
    this.deals.set(moved.id, moved)
    return {
      deal: moved,
      pushes: [this.push(moved, "deal.stage_changed", { object: moved, previous_stage_id: deal.stage_id })]
    }
  }

  private push(deal: CrmDeal, type: string, data: Readonly<Record<string, unknown>>): WorldPush {
    return worldPush(deal.account_id, type, this.now(), data)
  }

}
