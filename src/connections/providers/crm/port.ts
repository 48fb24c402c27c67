/**
 * The CRM as the service needs it: pipelines with their stages (labels in English and Spanish,
 * and whether a stage wins or loses the deal), deals changed since a time (the sync's cursor),
 * one deal, and moving a deal to another stage. Lists are streams of pages (never held whole);
 * amounts are integer minor units of the deal's currency.
 */
import type { Effect, Stream } from "effect"
import { Context, Schema } from "effect"
import type { ProviderError } from "../errors.ts"
import type { ProviderSession } from "../oauth/port.ts"

const Label = Schema.Struct({ en: Schema.String, es: Schema.String })

export const CrmStage = Schema.Struct({
  id: Schema.String,
  label: Label,
  /** Order on the board, from 0. */
  position: Schema.Int,
  /** `won` and `lost` close a deal. */
  kind: Schema.Literals(["open", "won", "lost"])
})
export type CrmStage = typeof CrmStage.Type

export const CrmPipeline = Schema.Struct({
  id: Schema.String,
  label: Label,
  stages: Schema.Array(CrmStage)
})
export type CrmPipeline = typeof CrmPipeline.Type

export const CrmContact = Schema.Struct({
  /** The CRM's own contact id (an identifier the service resolves people by). */
  id: Schema.String,
  email: Schema.NullOr(Schema.String),
  phone: Schema.NullOr(Schema.String),
  first_name: Schema.NullOr(Schema.String),
  last_name: Schema.NullOr(Schema.String)
})
export type CrmContact = typeof CrmContact.Type

export const CrmDeal = Schema.Struct({
  id: Schema.String,
  pipeline_id: Schema.String,
  stage_id: Schema.String,
  name: Schema.String,
  amount_minor: Schema.Int,
  currency: Schema.String,
  contact: CrmContact,
  created_at: Schema.String,
  updated_at: Schema.String
})
export type CrmDeal = typeof CrmDeal.Type

export class Crm extends Context.Service<Crm, {
  readonly pipelines: (session: ProviderSession) => Stream.Stream<CrmPipeline, ProviderError>
  /** Deals changed at or after `updatedSince` (every deal without it), oldest change first. */
  readonly deals: (
    session: ProviderSession,
    options?: { readonly updatedSince?: Date | undefined }
  ) => Stream.Stream<CrmDeal, ProviderError>
  readonly getDeal: (session: ProviderSession, id: string) => Effect.Effect<CrmDeal, ProviderError>
  /** Moves a deal to another stage of its pipeline (a write: needs the grant's write scope). */
  readonly moveDeal: (session: ProviderSession, id: string, stageId: string) => Effect.Effect<CrmDeal, ProviderError>
}>()("svc/Crm") {}
