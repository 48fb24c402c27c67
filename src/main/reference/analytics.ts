/** Analytics, campaigns and insights reads. */
import type { GroupDocs } from "./types.ts"

const platformId = "The ad platform's own id of the campaign (ad set or ad with `level`)."

export const analyticsDocs: GroupDocs = {
  "campaigns.conversions": { description: "The conversions `model` credits to one campaign, newest first, each with `outcome_event_id` and `is_first_payment`; refunds excluded. `limit` 1 to 200 (default 50); a page may hold fewer.", parameters: { id: "The campaign's ad platform id (`platform_id`)." } },
  "campaigns.fatigueRisk": { description: "Ads at risk of creative fatigue. No model serves yet: `model.status` is `withheld` and `ads` is empty (learned values read `{value, status, reason}`)." },
  "campaigns.ad": { parameters: { id: platformId } },
  "insights.adPeople": { description: "Distinct people with an ad-tagged touch per month, day or ad (`group_by`), split by origin (partner import, conversation ad referral, website visit, other), beside the messaging conversations the ad platform reports. Counts only, no personal data." },
  "insights.adIds": { description: "Campaign, ad set and ad ids that touches carry but the synced ad structure does not know (typos, deleted ads, another account), with counts. Counts only." },
  "insights.refreshUtm": { description: "Scans the last 30 days of web touches for UTM health (8 to 12 seconds). Within 10 minutes of the last scan it answers the stored summary with `refreshed: false`. 6 scans per hour per key (429 with `Retry-After` beyond)." },
  "insights.touches": { description: "The profile's touches, newest first, projected: channel, source, medium, campaign, ad set, ad and click-id kind, never click-id values, visitor ids or URLs." },
  "insights.realtime": { description: "Live visitors: distinct anonymous ids with a touch in the last 5 minutes, and the count per minute over the last 30. Needs `realtime:read`." }
}
