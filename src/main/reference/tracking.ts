/** The web tracker: keys, settings, installers, collector domains, verification, collector. */
import type { GroupDocs } from "./types.ts"

const snippet = `(function(){var k="svc_tk_8Jd3Kf6Lg9Mh2Nb5",u="http://localhost:8080/t/collect";/* ... */})();`
const domainId = "The collector domain's id."

export const trackingDocs: GroupDocs = {
  "tracking.listTrackingKeys": { description: "The profile's active tracking keys (`svc_tk_...`): public values that go in the page, accepted by the collector only from allowed origins." },
  "tracking.revokeTrackingKey": { description: "Revokes a tracking key: the collector refuses it at once. Revoking again answers the revoked key.", parameters: { id: "The tracking key's id." } },
  "tracking.getTrackingSettings": { description: "`allowed_origins` (where the collector accepts the key from), click-id capture, the cookie domain and whether Do-Not-Track is respected." },
  "tracking.getTrackingSnippet": { response: snippet },
  "trackingSetup.commercePixelInstaller": { response: snippet },
  "trackingSetup.listCustomDomains": { description: "Each first-party collector domain with the CNAME and TXT records to create and its verdict (`pending`, `verified`, `failed`)." },
  "trackingSetup.removeCustomDomain": { description: "Removes the domain; the snippet goes back to the service's own collector at once.", parameters: { id: domainId } },
  "trackingSetup.verifyCustomDomain": { parameters: { id: domainId } },
  "trackingSetup.getInstallVerification": { description: "The latest install-verification attempt: `waiting`, `verified` (a tracker event from an allowed origin arrived) or `expired` after 30 minutes; `data: null` when none was started." },
  "trackingSetup.startInstallVerification": { description: "Starts an attempt: load a page carrying the snippet within 30 minutes and it becomes `verified`. A running attempt is answered rather than a second one." },
  "trackingSetup.getTrackingOps": { description: "Collector diagnostics: touches in the last 24 hours and 7 days, drops by reason (bots, Do-Not-Track, origin), the last event and the collector's lag." },
  "trackingSetup.getTrackingOrigin": { description: "Where the tracker sends events: the collector URL the snippet uses, the custom domains and their state, the allowed origins." },
  "trackingSetup.getTrackingQuality": { description: "Tracking health over the last `days`: shares of touches with UTM tags, click ids, direct, unclassified and identified; drop rates.", parameters: { days: "Days to look back (default 30)." } },
  "collector.trackerScript": { response: snippet }
}
