/**
 * Every provider port with what it needs (the endpoints, one shared HTTP client, so one set of
 * per-connection buckets), for the domains that call providers. AppConfig comes from below.
 */
import { Layer } from "effect"
import { AdPlatformAdapter } from "./adplatform/live.ts"
import { CalendarProviderAdapter } from "./calendar/live.ts"
import { CardGatewayAdapter } from "./cardgw/live.ts"
import { ChatAppAAdapter } from "./chat-app-a/live.ts"
import { CommerceAdapter } from "./commerce/live.ts"
import { CrmAdapter } from "./crm/live.ts"
import { EmailAdapter } from "./email/live.ts"
import { ProviderEndpoints } from "./endpoints.ts"
import { ProviderHttp } from "./http.ts"
import { PageMessengerAdapter, ShortVideoMessagingAdapter, SocialDmAdapter } from "./messaging/live.ts"
import { ProviderOAuthAdapter } from "./oauth/live.ts"

export const ProvidersLayer = Layer.mergeAll(
  ProviderOAuthAdapter,
  AdPlatformAdapter,
  CrmAdapter,
  CommerceAdapter,
  CardGatewayAdapter,
  ChatAppAAdapter,
  SocialDmAdapter,
  PageMessengerAdapter,
  ShortVideoMessagingAdapter,
  EmailAdapter,
  CalendarProviderAdapter
).pipe(
  Layer.provideMerge(ProviderHttp.layer),
  Layer.provideMerge(ProviderEndpoints.layer)
)
