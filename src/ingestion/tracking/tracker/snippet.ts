/**
 * The first-party tracker script (decision 0031), as a string template. Dependency-free ES5
 * that runs in any browser; it makes exactly one kind of request, a POST to the service's own
 * collector. The ad platform's pixel loader is appended only when the snippet is requested
 * with `?bundle=adplatform_pixel`, and it is then the only third-party request.
 *
 * What it does:
 * - an anonymous id in the first-party cookie `svc_aid` (2 years, SameSite=Lax, Secure on https,
 *   optional Domain), mirrored in localStorage and read from there when cookies are blocked;
 * - a session id in sessionStorage, renewed after 30 minutes without an event;
 * - the session's landing parameters (utm_* and, unless turned off, the click ids gclid, gbraid,
 *   wbraid, msclkid, fbclid, ttclid) and its external referrer, sent with every event so a later
 *   page of the visit keeps its channel;
 * - a `page_view` on load and on every SPA navigation (history.pushState, replaceState when the
 *   path changes, popstate);
 * - `navigator.sendBeacon` (a text/plain body: no CORS pre-flight), `fetch` with `keepalive`
 *   as the fallback; no cookie is sent to the collector;
 * - a customer link token (decision 0037) from the landing URL's `svc_lt` parameter: kept for the
 *   visit in sessionStorage, sent with each of its events as `link_token`, and removed from the
 *   address bar (so a copied or bookmarked URL does not carry it);
 * - `window.svc.track(type, properties)` for custom events;
 * - with `respect_do_not_track`, nothing at all from a browser that sends Do-Not-Track or Global
 *   Privacy Control.
 */

export interface SnippetOptions {
  /** Absolute URL of the collector (`{base_url}/t/collect`). */
  readonly collectorUrl: string
  readonly trackingKey: string
  readonly cookieDomain: string | null
  readonly captureClickIds: boolean
  readonly respectDoNotTrack: boolean
  /** Append the ad platform's pixel loader for this pixel id. */
  readonly adplatformPixelId?: string | undefined
}

/** The ad platform's public pixel loader: the bundle's only third-party request. */
export const ADPLATFORM_PIXEL_LOADER_URL = "https://connect.facebook.net/en_US/fbevents.js"

/** A value as a JavaScript literal that is also safe inside an inline `<script>` element. */
export const literal = (value: unknown): string =>
  JSON.stringify(value)
    .replaceAll("<", "\\u003c")
    .replaceAll("\u2028", "\\u2028")
    .replaceAll("\u2029", "\\u2029")

const tracker = (options: SnippetOptions): string => `/* svc tracker: first-party, posts only to ${options.collectorUrl.replaceAll("*/", "")} */
(function (w, d) {
  "use strict";
  if (w.svc && w.svc.loaded) return;
  var C = {
    url: ${literal(options.collectorUrl)},
    key: ${literal(options.trackingKey)},
    cookieDomain: ${literal(options.cookieDomain)},
    clickIds: ${literal(options.captureClickIds)},
    dnt: ${literal(options.respectDoNotTrack)}
  };
  var n = w.navigator || {};
  if (C.dnt && (n.doNotTrack === "1" || n.doNotTrack === "yes" || w.doNotTrack === "1" || n.msDoNotTrack === "1" || n.globalPrivacyControl === true)) return;
  var AID = "svc_aid", SID = "svc_sid", LAND = "svc_land", TWO_YEARS = 63072000, SESSION_MS = 1800000;
  var TAGS = ["utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "utm_id"];
  var CLICK_IDS = ["gclid", "gbraid", "wbraid", "msclkid", "fbclid", "ttclid"];
  var ID = /^[A-Za-z0-9_-]{8,64}$/;
  var LT = "svc_lt", LTK = "svc_ltk", TOKEN = /^[A-Za-z0-9_-]{16,256}$/;

  function uid() {
    var c = w.crypto;
    if (c && c.randomUUID) return c.randomUUID();
    var b = new Uint8Array(16), s = "", i;
    if (c && c.getRandomValues) c.getRandomValues(b); else for (i = 0; i < 16; i++) b[i] = Math.floor(Math.random() * 256);
    for (i = 0; i < 16; i++) s += (b[i] + 256).toString(16).slice(1);
    return s;
  }
  function get(storage, k) { try { return w[storage].getItem(k); } catch (e) { return null; } }
  function put(storage, k, v) { try { w[storage].setItem(k, v); } catch (e) {} }
  function drop(storage, k) { try { w[storage].removeItem(k); } catch (e) {} }
  function readCookie(name) {
    var parts = ("; " + d.cookie).split("; " + name + "=");
    return parts.length > 1 ? decodeURIComponent(parts.pop().split(";")[0]) : null;
  }
  function writeCookie(name, value) {
    var c = name + "=" + encodeURIComponent(value) + "; Max-Age=" + TWO_YEARS + "; Path=/; SameSite=Lax";
    if (C.cookieDomain) c += "; Domain=" + C.cookieDomain;
    if (w.location.protocol === "https:") c += "; Secure";
    try { d.cookie = c; } catch (e) {}
  }
  function anonymousId() {
    var id = readCookie(AID);
    if (!id || !ID.test(id)) id = get("localStorage", AID);
    if (!id || !ID.test(id)) id = uid();
    writeCookie(AID, id);
    put("localStorage", AID, id);
    return id;
  }
  function landingParams(href) {
    var out = {}, found = false, keys = C.clickIds ? TAGS.concat(CLICK_IDS) : TAGS, q, i, v;
    try { q = new URL(href).searchParams; } catch (e) { return null; }
    for (i = 0; i < keys.length; i++) {
      v = q.get(keys[i]);
      if (v) { out[keys[i]] = v.slice(0, 512); found = true; }
    }
    return found ? out : null;
  }
  function host(href) { try { return new URL(href).hostname; } catch (e) { return ""; } }
  function session(now) {
    var s = null, raw = get("sessionStorage", SID);
    try { s = raw ? JSON.parse(raw) : null; } catch (e) { s = null; }
    var fresh = !s || typeof s.id !== "string" || !ID.test(s.id) || typeof s.at !== "number" || now - s.at > SESSION_MS;
    var params = landingParams(w.location.href);
    var ref = d.referrer && host(d.referrer) !== w.location.hostname ? d.referrer : null;
    if (fresh) s = { id: uid().replace(/-/g, ""), at: now };
    // A link token belongs to the visit it opened; a new visit without one forgets it.
    if (fresh) drop("sessionStorage", LTK);
    if (urlToken) { put("sessionStorage", LTK, urlToken); urlToken = null; }
    // A new visit, or a new campaign click within one, starts a new landing.
    if (fresh || params) put("sessionStorage", LAND, JSON.stringify({ a: params, r: ref }));
    s.at = now;
    put("sessionStorage", SID, JSON.stringify(s));
    return s.id;
  }
  function landing() {
    try { return JSON.parse(get("sessionStorage", LAND) || "null") || {}; } catch (e) { return {}; }
  }

  // The landing URL's link token, taken out of the address bar before anything else reads it.
  function takeLinkToken() {
    var u, t;
    try { u = new URL(w.location.href); t = u.searchParams.get(LT); } catch (e) { return null; }
    if (t === null) return null;
    u.searchParams.delete(LT);
    try { if (w.history && w.history.replaceState) w.history.replaceState(w.history.state, "", u.href); } catch (e) {}
    return TOKEN.test(t) ? t : null;
  }
  function linkToken() {
    var t = get("sessionStorage", LTK);
    return t && TOKEN.test(t) ? t : null;
  }

  var urlToken = takeLinkToken();
  var aid = anonymousId();
  var lastUrl = null;

  function send(type, properties, referrer) {
    var sid = session(new Date().getTime()), land = landing();
    var event = {
      tracking_key: C.key,
      anonymous_id: aid,
      session_id: sid,
      event_id: uid().replace(/-/g, ""),
      type: type,
      url: w.location.href,
      referrer: referrer || null
    };
    if (land.a) event.attribution = land.a;
    if (land.r) event.landing_referrer = land.r;
    var lt = linkToken();
    if (lt) event.link_token = lt;
    if (properties && typeof properties === "object") event.properties = properties;
    var body = JSON.stringify(event), sent = false;
    try { sent = !!(n.sendBeacon && n.sendBeacon(C.url, body)); } catch (e) { sent = false; }
    if (!sent && w.fetch) {
      try {
        w.fetch(C.url, { method: "POST", body: body, keepalive: true, credentials: "omit", mode: "no-cors", headers: { "content-type": "text/plain" } });
      } catch (e) {}
    }
  }
  function pageView(referrer) {
    var href = w.location.href;
    lastUrl = href;
    send("page_view", null, referrer);
  }
  function pathOf(href) { try { var u = new URL(href); return u.pathname + u.search; } catch (e) { return href; } }
  function onNavigate(pathOnly) {
    var previous = lastUrl;
    if (previous === null) return;
    var changed = pathOnly
      ? pathOf(previous).split("?")[0] !== pathOf(w.location.href).split("?")[0]
      : pathOf(previous) !== pathOf(w.location.href);
    if (changed) pageView(previous);
  }
  function wrap(name, pathOnly) {
    var original = w.history && w.history[name];
    if (typeof original !== "function") return;
    w.history[name] = function () {
      var result = original.apply(this, arguments);
      onNavigate(pathOnly);
      return result;
    };
  }
  wrap("pushState", false);
  wrap("replaceState", true);
  w.addEventListener("popstate", function () { onNavigate(false); });

  w.svc = {
    loaded: true,
    anonymousId: function () { return aid; },
    track: function (type, properties) { send(String(type), properties, null); }
  };
  pageView(d.referrer || null);
})(window, document);
`

/**
 * The ad platform's standard pixel loader: a queue function named as the platform's script
 * expects, then the platform's own script, loaded asynchronously, then `init` and a page view.
 */
const adplatformPixel = (pixelId: string): string => `
/* Ad platform pixel, included because this snippet was requested with ?bundle=adplatform_pixel.
   It loads the platform's script ${ADPLATFORM_PIXEL_LOADER_URL} and is the snippet's only third-party request. */
(function (w, d, src, pixelId) {
  if (w.fbq) return;
  var q = w.fbq = function () { q.callMethod ? q.callMethod.apply(q, arguments) : q.queue.push(arguments); };
  if (!w._fbq) w._fbq = q;
  q.push = q; q.loaded = true; q.version = "2.0"; q.queue = [];
  var s = d.createElement("script");
  s.async = true;
  s.src = src;
  var first = d.getElementsByTagName("script")[0];
  if (first && first.parentNode) first.parentNode.insertBefore(s, first); else d.head.appendChild(s);
  w.fbq("init", pixelId);
  w.fbq("track", "PageView");
})(window, document, ${literal(ADPLATFORM_PIXEL_LOADER_URL)}, ${literal(pixelId)});
`

export const renderSnippet = (options: SnippetOptions): string =>
  options.adplatformPixelId === undefined ? tracker(options) : tracker(options) + adplatformPixel(options.adplatformPixelId)
