/**
 * Installers of the tracker (decision 0034), pure: the tag manager's container export (one
 * Custom HTML tag holding the snippet, fired by a page-view trigger on every page) and the
 * commerce platform's custom web pixel (subscribes to `page_viewed` and `checkout_completed`
 * and posts them to the collector with the tracking key).
 */
import { literal, renderSnippet, type SnippetOptions } from "../tracker/snippet.ts"

const TAG_NAME = "svc tracker"
const TRIGGER_NAME = "svc tracker - All Pages"

/** The tag manager's export time format: `YYYY-MM-DD HH:MM:SS` (UTC). */
const exportTime = (now: Date) => now.toISOString().slice(0, 19).replace("T", " ")

/**
 * A container export (exportFormatVersion 2) to import into an existing container ("Merge"):
 * one Custom HTML tag with the snippet and one Page View trigger without filters (all pages).
 * Account and container ids are placeholders ("0"): the import keeps the target's own.
 */
export const tagManagerContainer = (options: SnippetOptions, now: Date): Record<string, unknown> => {
  const fingerprint = String(now.getTime())
  const ids = { accountId: "0", containerId: "0" }
  const html = `<script>\n${renderSnippet(options)}</script>`
  return {
    exportFormatVersion: 2,
    exportTime: exportTime(now),
    containerVersion: {
      path: "accounts/0/containers/0/versions/0",
      ...ids,
      containerVersionId: "0",
      container: {
        path: "accounts/0/containers/0",
        ...ids,
        name: TAG_NAME,
        publicId: "GTM-XXXXXXX",
        usageContext: ["WEB"],
        fingerprint,
        tagManagerUrl: ""
      },
      tag: [
        {
          ...ids,
          tagId: "1",
          name: TAG_NAME,
          type: "html",
          parameter: [
            { type: "TEMPLATE", key: "html", value: html },
            { type: "BOOLEAN", key: "supportDocumentWrite", value: "false" }
          ],
          fingerprint,
          firingTriggerId: ["2"],
          tagFiringOption: "ONCE_PER_LOAD",
          monitoringMetadata: { type: "MAP" },
          consentSettings: { consentStatus: "NOT_SET" }
        }
      ],
      trigger: [
        {
          ...ids,
          triggerId: "2",
          name: TRIGGER_NAME,
          type: "PAGEVIEW",
          fingerprint
        }
      ],
      fingerprint,
      tagManagerUrl: ""
    }
  }
}

export interface PixelOptions {
  readonly collectorUrl: string
  readonly trackingKey: string
  readonly captureClickIds: boolean
  readonly respectDoNotTrack: boolean
}

/**
 * The commerce platform's custom web pixel. The platform runs it in a sandbox with its own
 * `analytics` (event bus) and `browser` (async cookie and storage access) objects; it has no
 * access to the page, and its requests carry no page origin (`Origin: null` or none), so the
 * profile must set `allow_server_side` for the collector to accept them.
 */
export const commercePixel = (options: PixelOptions): string => `/* svc tracker: custom web pixel for the commerce platform.
   Paste into the store admin: Settings > Customer events > Add custom pixel, then Save and Connect.
   It posts only to ${options.collectorUrl.replaceAll("*/", "")}.
   The platform's pixel sandbox sends no page origin: turn on allow_server_side in the tracking
   settings (PATCH /api/v1/tracking/settings), or the collector refuses these events. */
var SVC = {
  url: ${literal(options.collectorUrl)},
  key: ${literal(options.trackingKey)},
  clickIds: ${literal(options.captureClickIds)},
  dnt: ${literal(options.respectDoNotTrack)}
};
var SVC_TAGS = ["utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "utm_id"];
var SVC_CLICK_IDS = ["gclid", "gbraid", "wbraid", "msclkid", "fbclid", "ttclid"];
var SVC_ID = /^[A-Za-z0-9_-]{8,64}$/;
var SVC_GLOBAL = typeof self !== "undefined" ? self : {};

function svcClean(value) {
  var v = String(value || "").replace(/[^A-Za-z0-9_-]/g, "").slice(0, 64);
  return v.length >= 8 ? v : null;
}
function svcUid() {
  var c = SVC_GLOBAL.crypto, b = new Uint8Array(16), s = "", i;
  if (c && c.randomUUID) return c.randomUUID().replace(/-/g, "");
  if (c && c.getRandomValues) c.getRandomValues(b); else for (i = 0; i < 16; i++) b[i] = Math.floor(Math.random() * 256);
  for (i = 0; i < 16; i++) s += (b[i] + 256).toString(16).slice(1);
  return s;
}
function svcDoNotTrack() {
  var n = SVC_GLOBAL.navigator || {};
  return SVC.dnt && (n.doNotTrack === "1" || n.doNotTrack === "yes" || n.globalPrivacyControl === true);
}
function svcLandingParams(href) {
  var out = {}, found = false, keys = SVC.clickIds ? SVC_TAGS.concat(SVC_CLICK_IDS) : SVC_TAGS, q, i, v;
  try { q = new URL(href).searchParams; } catch (e) { return null; }
  for (i = 0; i < keys.length; i++) {
    v = q.get(keys[i]);
    if (v) { out[keys[i]] = v.slice(0, 512); found = true; }
  }
  return found ? out : null;
}
function svcHost(href) { try { return new URL(href).hostname; } catch (e) { return ""; } }
/* The site's own tracker cookie when the snippet also runs there, else the platform's client id. */
function svcAnonymousId(event) {
  return Promise.resolve(browser.cookie.get("svc_aid")).then(function (value) {
    if (value && SVC_ID.test(value)) return value;
    return svcClean(event.clientId) || svcUid();
  }, function () { return svcClean(event.clientId) || svcUid(); });
}
function svcLanding(href, referrer) {
  return Promise.resolve(browser.sessionStorage.getItem("svc_land")).then(function (raw) {
    var land = null, params = svcLandingParams(href);
    try { land = JSON.parse(raw || "null"); } catch (e) { land = null; }
    if (params || !land) {
      land = { a: params, r: referrer && svcHost(referrer) !== svcHost(href) ? referrer : null };
      browser.sessionStorage.setItem("svc_land", JSON.stringify(land));
    }
    return land;
  }, function () { return { a: svcLandingParams(href), r: null }; });
}
function svcSend(event, type, properties) {
  if (svcDoNotTrack()) return;
  var doc = (event.context && event.context.document) || {};
  var href = doc.location && doc.location.href;
  if (!href) return;
  var referrer = doc.referrer || null;
  Promise.all([svcAnonymousId(event), svcLanding(href, referrer)]).then(function (values) {
    var land = values[1] || {};
    var body = { tracking_key: SVC.key, anonymous_id: values[0], type: type, url: href, referrer: referrer };
    var eventId = svcClean(event.id);
    if (eventId) body.event_id = eventId;
    if (land.a) body.attribution = land.a;
    if (land.r) body.landing_referrer = land.r;
    if (properties) body.properties = properties;
    return fetch(SVC.url, {
      method: "POST",
      body: JSON.stringify(body),
      keepalive: true,
      credentials: "omit",
      headers: { "content-type": "text/plain" }
    });
  }).catch(function () {});
}

analytics.subscribe("page_viewed", function (event) {
  svcSend(event, "page_view", null);
});
analytics.subscribe("checkout_completed", function (event) {
  var checkout = (event.data && event.data.checkout) || {};
  var total = checkout.totalPrice || {};
  var order = checkout.order || {};
  svcSend(event, "checkout_completed", {
    order_id: order.id ? String(order.id) : null,
    value: total.amount === undefined ? null : total.amount,
    currency: total.currencyCode || checkout.currencyCode || null
  });
});
`
