/**
 * The providers this deployment connects to. A provider is named by its kind (decision 0055):
 * `/api/v1/connections/{provider}/handoff`, `/hooks/{provider}` and `/sandbox/{provider}/` all
 * take one of these names; any other name is an unknown provider (404).
 */
import { Schema } from "effect"

export const PROVIDER_KINDS = [
  "adplatform",
  "crm",
  "commerce",
  "cardgw",
  "chat_app_a",
  "social_dm",
  "page_messenger",
  "short_video_messaging",
  "email",
  "calendar"
] as const

export const ProviderKind = Schema.Literals(PROVIDER_KINDS)
export type ProviderKind = typeof ProviderKind.Type

export const isProviderKind = (name: string): name is ProviderKind =>
  (PROVIDER_KINDS as ReadonlyArray<string>).includes(name)
