/**
 * Channel, source and medium of a web touch: pure, deterministic rules (decision 0031).
 *
 * The first rule that applies decides:
 *
 * 1. **Click id** (when click ids are captured). `gclid`, `gbraid`, `wbraid`, `msclkid` → `paid_search`;
 *    `fbclid`, `ttclid` → `paid_social`. Source: `utm_source`, else the click id's platform; medium:
 *    `utm_medium`, else `cpc` / `paid_social`.
 * 2. **UTM tags** (`utm_medium`, then `utm_source`): see `byMedium` and `bySource` below. Email,
 *    messaging, paid search (cpc/ppc/... unless the source is a social network), paid social,
 *    generic paid mediums decided by the source, organic social, organic (search or social by
 *    source), referral. A tagged link that no rule places falls through to the referrer, and with no
 *    external referrer it is `referral` (a tagged link always came from somewhere).
 * 3. **External referrer**: webmail → `email`; chat-app hosts (wa.me, m.me, ...) → `messaging`; search
 *    engines → `organic_search`; social networks → `organic_social`; any other host → `referral`.
 * 4. Otherwise (no referrer, or a same-site referrer) → `direct`, source `(direct)`, medium `(none)`.
 *
 * Values are lower-cased and trimmed; source and medium are always non-empty strings.
 */
import { type Channel, CHANNELS } from "../../../attribution/models/types.ts"

export const CLICK_ID_KINDS = ["gclid", "gbraid", "wbraid", "msclkid", "fbclid", "ttclid"] as const
export type ClickIdKind = (typeof CLICK_ID_KINDS)[number]

export const UTM_KEYS = ["utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "utm_id"] as const
export type UtmKey = (typeof UTM_KEYS)[number]

/** The channels classification produces are the ones the credit models know. */
export { type Channel, CHANNELS }

export interface ChannelInput {
  readonly utmSource?: string | null | undefined
  readonly utmMedium?: string | null | undefined
  /** The click id kind found (already filtered by the profile's `capture_click_ids`). */
  readonly clickIdKind?: ClickIdKind | null | undefined
  /** Host of the page the event happened on. */
  readonly pageHost: string
  /** Host of the referrer, same-site or not; null when there was none. */
  readonly referrerHost?: string | null | undefined
}

export interface Classification {
  readonly channel: Channel
  readonly source: string
  readonly medium: string
}

const PAID_SEARCH_CLICK_IDS: ReadonlyArray<ClickIdKind> = ["gclid", "gbraid", "wbraid", "msclkid"]

/** The platform a click id belongs to: the source when the link carries no `utm_source`. */
const CLICK_ID_SOURCE: Record<ClickIdKind, string> = {
  gclid: "google",
  gbraid: "google",
  wbraid: "google",
  msclkid: "bing",
  fbclid: "facebook",
  ttclid: "tiktok"
}

/** The medium a channel reads when the link names none. */
const DEFAULT_MEDIUM: Record<Channel, string> = {
  paid_search: "cpc",
  paid_social: "paid_social",
  organic_search: "organic",
  organic_social: "social",
  referral: "referral",
  email: "email",
  messaging: "messaging",
  direct: "(none)"
}

type HostKind = "webmail" | "messaging" | "search" | "social"

interface HostRule {
  readonly kind: HostKind
  readonly label: string
  readonly test: (host: string) => boolean
}

/** `host` is `domain` or one of its subdomains. */
const under = (domain: string) => (host: string) => host === domain || host.endsWith(`.${domain}`)
const exactly = (...hosts: ReadonlyArray<string>) => (host: string) => hosts.includes(host)

/** Checked in order: webmail hosts sit under search-engine domains (mail.google.com). */
const HOST_RULES: ReadonlyArray<HostRule> = [
  { kind: "webmail", label: "gmail", test: exactly("mail.google.com") },
  {
    kind: "webmail",
    label: "outlook",
    test: exactly("outlook.live.com", "outlook.office.com", "outlook.office365.com")
  },
  { kind: "webmail", label: "yahoo_mail", test: under("mail.yahoo.com") },
  { kind: "webmail", label: "proton_mail", test: exactly("mail.proton.me", "mail.protonmail.com") },
  { kind: "webmail", label: "webmail", test: (host) => host.startsWith("webmail.") },
  { kind: "messaging", label: "whatsapp", test: (host) => under("wa.me")(host) || under("whatsapp.com")(host) },
  { kind: "messaging", label: "messenger", test: (host) => under("m.me")(host) || under("messenger.com")(host) },
  { kind: "messaging", label: "telegram", test: (host) => under("t.me")(host) || under("telegram.org")(host) },
  { kind: "messaging", label: "line", test: under("line.me") },
  { kind: "messaging", label: "viber", test: under("viber.com") },
  { kind: "messaging", label: "wechat", test: exactly("weixin.qq.com", "wx.qq.com") },
  { kind: "messaging", label: "signal", test: under("signal.me") },
  {
    kind: "search",
    label: "google",
    test: (host) =>
      /^(www\.)?google\.(com|[a-z]{2}|co\.[a-z]{2}|com\.[a-z]{2})$/.test(host) ||
      host === "com.google.android.googlequicksearchbox"
  },
  { kind: "search", label: "bing", test: under("bing.com") },
  { kind: "search", label: "duckduckgo", test: under("duckduckgo.com") },
  { kind: "search", label: "yahoo", test: (host) => under("search.yahoo.com")(host) || host === "search.yahoo.co.jp" },
  { kind: "search", label: "yandex", test: (host) => /^(www\.)?yandex\.[a-z.]+$/.test(host) || host === "ya.ru" },
  { kind: "search", label: "baidu", test: under("baidu.com") },
  { kind: "search", label: "ecosia", test: under("ecosia.org") },
  { kind: "search", label: "brave", test: exactly("search.brave.com") },
  { kind: "search", label: "startpage", test: under("startpage.com") },
  { kind: "search", label: "qwant", test: under("qwant.com") },
  { kind: "search", label: "naver", test: exactly("search.naver.com", "m.search.naver.com") },
  { kind: "search", label: "seznam", test: exactly("search.seznam.cz", "seznam.cz", "www.seznam.cz") },
  { kind: "social", label: "facebook", test: (host) => under("facebook.com")(host) || under("fb.com")(host) },
  { kind: "social", label: "instagram", test: under("instagram.com") },
  { kind: "social", label: "twitter", test: (host) => host === "t.co" || under("twitter.com")(host) || under("x.com")(host) },
  { kind: "social", label: "linkedin", test: (host) => under("linkedin.com")(host) || host === "lnkd.in" },
  { kind: "social", label: "tiktok", test: under("tiktok.com") },
  { kind: "social", label: "pinterest", test: (host) => /(^|\.)pinterest\.[a-z.]+$/.test(host) || host === "pin.it" },
  { kind: "social", label: "reddit", test: under("reddit.com") },
  { kind: "social", label: "youtube", test: (host) => under("youtube.com")(host) || host === "youtu.be" },
  { kind: "social", label: "threads", test: under("threads.net") },
  { kind: "social", label: "snapchat", test: under("snapchat.com") },
  { kind: "social", label: "vk", test: under("vk.com") },
  { kind: "social", label: "quora", test: under("quora.com") },
  { kind: "social", label: "tumblr", test: under("tumblr.com") },
  { kind: "social", label: "bluesky", test: under("bsky.app") },
  { kind: "social", label: "mastodon", test: under("mastodon.social") }
]

/** What a known host is, and the source label it carries. */
export const hostKind = (rawHost: string): { readonly kind: HostKind; readonly label: string } | undefined => {
  const host = normalizeHost(rawHost)
  for (const rule of HOST_RULES) if (rule.test(host)) return { kind: rule.kind, label: rule.label }
  return undefined
}

const normalizeHost = (host: string) => host.trim().toLowerCase().replace(/\.$/, "")

const withoutWww = (host: string) => host.startsWith("www.") ? host.slice(4) : host

/**
 * Same site: equal hosts once a leading `www.` is dropped, or one a subdomain of the other
 * (`shop.example.com` and `www.example.com`). An approximation of "same registrable domain"
 * that needs no public-suffix list; it never treats two unrelated sites as one.
 */
export const isSameSite = (pageHost: string, referrerHost: string): boolean => {
  const page = withoutWww(normalizeHost(pageHost))
  const referrer = withoutWww(normalizeHost(referrerHost))
  if (page === "" || referrer === "") return false
  return page === referrer || page.endsWith(`.${referrer}`) || referrer.endsWith(`.${page}`)
}

type SourceKind = "search" | "social" | "messaging" | "email"

/** Names seen in `utm_source` (besides host names, which are matched by `HOST_RULES`). */
const SOURCE_NAMES: Record<string, SourceKind> = {
  google: "search",
  bing: "search",
  microsoft: "search",
  yahoo: "search",
  duckduckgo: "search",
  baidu: "search",
  yandex: "search",
  ecosia: "search",
  naver: "search",
  brave: "search",
  facebook: "social",
  fb: "social",
  instagram: "social",
  ig: "social",
  meta: "social",
  tiktok: "social",
  twitter: "social",
  x: "social",
  linkedin: "social",
  pinterest: "social",
  snapchat: "social",
  reddit: "social",
  youtube: "social",
  threads: "social",
  whatsapp: "messaging",
  wa: "messaging",
  messenger: "messaging",
  telegram: "messaging",
  line: "messaging",
  wechat: "messaging",
  viber: "messaging",
  signal: "messaging",
  sms: "messaging",
  imessage: "messaging",
  kakaotalk: "messaging",
  email: "email",
  "e-mail": "email",
  newsletter: "email",
  mail: "email"
}

const sourceKind = (source: string): SourceKind | undefined => {
  const named = SOURCE_NAMES[source]
  if (named !== undefined) return named
  const byHost = hostKind(source)
  if (byHost === undefined) return undefined
  return byHost.kind === "webmail" ? "email" : byHost.kind
}

const EMAIL_MEDIUMS = new Set(["email", "e-mail", "e_mail", "newsletter", "mail"])
const MESSAGING_MEDIUMS = new Set(["messaging", "message", "chat", "sms", "whatsapp", "im", "dm"])
const PAID_SEARCH_MEDIUMS = new Set(["cpc", "ppc", "paid_search", "paidsearch", "paid-search", "sem", "search_ads"])
const PAID_SOCIAL_MEDIUMS = new Set([
  "paid_social",
  "paidsocial",
  "paid-social",
  "social_paid",
  "social-paid",
  "social_ads",
  "social-ads"
])
/** Paid, but neither search nor social by itself: the source decides. */
const GENERIC_PAID_MEDIUMS = new Set(["cpm", "cpv", "cpa", "paid", "ads", "ad", "display"])
const ORGANIC_SOCIAL_MEDIUMS = new Set([
  "social",
  "social_media",
  "social-media",
  "socialmedia",
  "social_network",
  "social-network",
  "sm",
  "organic_social",
  "organic-social"
])
const REFERRAL_MEDIUMS = new Set(["referral", "affiliate", "partner", "link"])

/** Rule 2a: the channel `utm_medium` names, given what the source is; undefined when it names none. */
const byMedium = (medium: string, kind: SourceKind | undefined): Channel | undefined => {
  if (EMAIL_MEDIUMS.has(medium)) return "email"
  if (MESSAGING_MEDIUMS.has(medium)) return "messaging"
  if (PAID_SEARCH_MEDIUMS.has(medium)) return kind === "social" ? "paid_social" : "paid_search"
  if (PAID_SOCIAL_MEDIUMS.has(medium)) return "paid_social"
  if (GENERIC_PAID_MEDIUMS.has(medium)) {
    return kind === "social" ? "paid_social" : kind === "search" ? "paid_search" : undefined
  }
  if (ORGANIC_SOCIAL_MEDIUMS.has(medium)) return "organic_social"
  if (medium === "organic") return kind === "social" ? "organic_social" : "organic_search"
  if (REFERRAL_MEDIUMS.has(medium)) return "referral"
  return undefined
}

/** Rule 2b: a source alone (no medium, or one no rule knows). */
const bySource = (kind: SourceKind | undefined): Channel | undefined => {
  switch (kind) {
    case "email":
      return "email"
    case "messaging":
      return "messaging"
    case "search":
      return "organic_search"
    case "social":
      return "organic_social"
    default:
      return undefined
  }
}

const HOST_CHANNEL: Record<HostKind, Channel> = {
  webmail: "email",
  messaging: "messaging",
  search: "organic_search",
  social: "organic_social"
}

/** A tag value as classified and stored: trimmed, lower-cased, at most 200 characters; empty is absent. */
export const normalizeTag = (value: string | null | undefined): string | undefined => {
  if (value === null || value === undefined) return undefined
  const normalized = value.trim().toLowerCase().slice(0, 200)
  return normalized === "" ? undefined : normalized
}

export const classify = (input: ChannelInput): Classification => {
  const utmSource = normalizeTag(input.utmSource)
  const utmMedium = normalizeTag(input.utmMedium)
  const referrerHost = input.referrerHost === null || input.referrerHost === undefined || input.referrerHost === ""
    ? undefined
    : normalizeHost(input.referrerHost)
  const external = referrerHost !== undefined && !isSameSite(input.pageHost, referrerHost) ? referrerHost : undefined
  const referrerKind = external === undefined ? undefined : hostKind(external)
  const referrerSource = external === undefined ? undefined : referrerKind?.label ?? withoutWww(external)

  const result = (channel: Channel, fallbackSource: string | undefined): Classification => ({
    channel,
    source: utmSource ?? fallbackSource ?? "(not set)",
    medium: utmMedium ?? DEFAULT_MEDIUM[channel]
  })

  // 1. Click ids.
  const click = input.clickIdKind ?? undefined
  if (click !== undefined) {
    return result(PAID_SEARCH_CLICK_IDS.includes(click) ? "paid_search" : "paid_social", CLICK_ID_SOURCE[click])
  }

  // 2. UTM tags.
  const tagged = utmSource !== undefined || utmMedium !== undefined
  if (tagged) {
    const kind = utmSource === undefined ? undefined : sourceKind(utmSource)
    const channel = (utmMedium === undefined ? undefined : byMedium(utmMedium, kind)) ?? bySource(kind)
    if (channel !== undefined) return result(channel, referrerSource)
  }

  // 3. External referrer.
  if (external !== undefined) {
    const channel = referrerKind === undefined ? "referral" : HOST_CHANNEL[referrerKind.kind]
    return result(channel, referrerSource)
  }
  if (tagged) return result("referral", undefined)

  // 4. Direct.
  return { channel: "direct", source: "(direct)", medium: "(none)" }
}

/** The click id a URL's query carries: the first of `CLICK_ID_KINDS` present with a value. */
export const clickIdOf = (
  params: { readonly get: (name: string) => string | null | undefined }
): { readonly kind: ClickIdKind; readonly value: string } | undefined => {
  for (const kind of CLICK_ID_KINDS) {
    const value = params.get(kind)?.trim()
    if (value !== undefined && value !== "") return { kind, value: value.slice(0, 512) }
  }
  return undefined
}
