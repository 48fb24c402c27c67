/**
 * Every provider port with what it needs (the endpoints, one shared HTTP client, so one set of
 * per-connection buckets), for the domains that call providers. AppConfig comes from below.
 */
import { Layer } from "effect"
import { AdPlatformLive } from "./adplatform/live.ts"
import { CalendarProviderLive } from "./calendar/live.ts"
import { CardGatewayLive } from "./cardgw/live.ts"
import { ChatAppALive } from "./chat-app-a/live.ts"
import { CommerceLive } from "./commerce/live.ts"
import { CrmLive } from "./crm/live.ts"
import { EmailLive } from "./email/live.ts"
import { ProviderEndpoints } from "./endpoints.ts"
import { ProviderHttp } from "./http.ts"
import { PageMessengerLive, ShortVideoMessagingLive, SocialDmLive } from "./messaging/live.ts"
import { ProviderOAuthLive } from "./oauth/live.ts"

export const ProvidersLive = Layer.mergeAll(
  ProviderOAuthLive,
  AdPlatformLive,
  CrmLive,
  CommerceLive,
  CardGatewayLive,
  ChatAppALive,
  SocialDmLive,
  PageMessengerLive,
  ShortVideoMessagingLive,
  EmailLive,
  CalendarProviderLive
).pipe(
  Layer.provideMerge(ProviderHttp.layer),
  Layer.provideMerge(ProviderEndpoints.layer)
)
