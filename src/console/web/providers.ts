/**
 * Every provider kind a profile can connect, as the API names them (src/connections/providers/registry.ts,
 * whose PROVIDER_KINDS a unit test holds this list to; no operation lists them, and importing the
 * registry would bundle its schema library).
 */
export const PROVIDERS: ReadonlyArray<{ readonly kind: string; readonly label: string }> = [
  { kind: "adplatform", label: "Ad platform" },
  { kind: "commerce", label: "Commerce store" },
  { kind: "crm", label: "CRM" },
  { kind: "cardgw", label: "Card gateway" },
  { kind: "chat_app_a", label: "Business chat" },
  { kind: "social_dm", label: "Social direct messages" },
  { kind: "page_messenger", label: "Page messenger" },
  { kind: "short_video_messaging", label: "Short-video messaging" },
  { kind: "email", label: "Email" },
  { kind: "calendar", label: "Calendar" }
]
