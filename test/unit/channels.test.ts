/** Channel, source and medium classification of web touches: the documented rules as a table (decision 0031). */
import { assert, describe, it } from "@effect/vitest"
import {
  CHANNELS,
  type ChannelInput,
  type Classification,
  classify,
  clickIdOf,
  hostKind,
  isSameSite
} from "../../src/ingestion/tracking/tracker/channels.ts"

const PAGE = "shop.example.com"

interface Case {
  readonly name: string
  readonly input: Omit<ChannelInput, "pageHost"> & { readonly pageHost?: string }
  readonly expected: Classification
}

const cases: ReadonlyArray<Case> = [
  // 1. Click ids decide first.
  {
    name: "gclid alone: paid search from google, cpc",
    input: { clickIdKind: "gclid" },
    expected: { channel: "paid_search", source: "google", medium: "cpc" }
  },
  {
    name: "gbraid and wbraid: paid search",
    input: { clickIdKind: "gbraid" },
    expected: { channel: "paid_search", source: "google", medium: "cpc" }
  },
  {
    name: "wbraid: paid search",
    input: { clickIdKind: "wbraid" },
    expected: { channel: "paid_search", source: "google", medium: "cpc" }
  },
  {
    name: "msclkid: paid search from bing",
    input: { clickIdKind: "msclkid" },
    expected: { channel: "paid_search", source: "bing", medium: "cpc" }
  },
  {
    name: "fbclid: paid social from facebook",
    input: { clickIdKind: "fbclid", referrerHost: "l.facebook.com" },
    expected: { channel: "paid_social", source: "facebook", medium: "paid_social" }
  },
  {
    name: "ttclid: paid social from tiktok",
    input: { clickIdKind: "ttclid" },
    expected: { channel: "paid_social", source: "tiktok", medium: "paid_social" }
  },
  {
    name: "a click id keeps the link's own UTM source and medium",
    input: { clickIdKind: "gclid", utmSource: "Google", utmMedium: "CPC" },
    expected: { channel: "paid_search", source: "google", medium: "cpc" }
  },
  {
    name: "a click id beats an email medium",
    input: { clickIdKind: "fbclid", utmMedium: "email" },
    expected: { channel: "paid_social", source: "facebook", medium: "email" }
  },
  // 2. UTM tags.
  {
    name: "cpc with a search source: paid search",
    input: { utmSource: "google", utmMedium: "cpc" },
    expected: { channel: "paid_search", source: "google", medium: "cpc" }
  },
  {
    name: "ppc with an unknown source: paid search",
    input: { utmSource: "adnetwork", utmMedium: "ppc" },
    expected: { channel: "paid_search", source: "adnetwork", medium: "ppc" }
  },
  {
    name: "paid_search medium: paid search",
    input: { utmSource: "bing", utmMedium: "paid_search" },
    expected: { channel: "paid_search", source: "bing", medium: "paid_search" }
  },
  {
    name: "cpc with a social source: paid social",
    input: { utmSource: "facebook", utmMedium: "cpc" },
    expected: { channel: "paid_social", source: "facebook", medium: "cpc" }
  },
  {
    name: "paid_social medium: paid social whatever the source",
    input: { utmSource: "partner", utmMedium: "paid_social" },
    expected: { channel: "paid_social", source: "partner", medium: "paid_social" }
  },
  {
    name: "cpm with a social source: paid social",
    input: { utmSource: "instagram", utmMedium: "cpm" },
    expected: { channel: "paid_social", source: "instagram", medium: "cpm" }
  },
  {
    name: "cpm with a search source: paid search",
    input: { utmSource: "google", utmMedium: "cpm" },
    expected: { channel: "paid_search", source: "google", medium: "cpm" }
  },
  {
    name: "cpm with an unknown source and no referrer: referral (a tagged link came from somewhere)",
    input: { utmSource: "adnet", utmMedium: "cpm" },
    expected: { channel: "referral", source: "adnet", medium: "cpm" }
  },
  {
    name: "cpm with an unknown source and a search referrer: the referrer decides",
    input: { utmSource: "adnet", utmMedium: "cpm", referrerHost: "www.google.com" },
    expected: { channel: "organic_search", source: "adnet", medium: "cpm" }
  },
  {
    name: "email medium: email",
    input: { utmSource: "newsletter_2026_11", utmMedium: "Email " },
    expected: { channel: "email", source: "newsletter_2026_11", medium: "email" }
  },
  {
    name: "newsletter source without a medium: email",
    input: { utmSource: "newsletter" },
    expected: { channel: "email", source: "newsletter", medium: "email" }
  },
  {
    name: "sms medium: messaging",
    input: { utmSource: "crm", utmMedium: "sms" },
    expected: { channel: "messaging", source: "crm", medium: "sms" }
  },
  {
    name: "whatsapp source without a medium: messaging",
    input: { utmSource: "whatsapp" },
    expected: { channel: "messaging", source: "whatsapp", medium: "messaging" }
  },
  {
    name: "social medium: organic social",
    input: { utmSource: "linkedin", utmMedium: "social" },
    expected: { channel: "organic_social", source: "linkedin", medium: "social" }
  },
  {
    name: "organic medium with a social source: organic social",
    input: { utmSource: "facebook", utmMedium: "organic" },
    expected: { channel: "organic_social", source: "facebook", medium: "organic" }
  },
  {
    name: "organic medium otherwise: organic search",
    input: { utmSource: "google", utmMedium: "organic" },
    expected: { channel: "organic_search", source: "google", medium: "organic" }
  },
  {
    name: "a social source alone: organic social",
    input: { utmSource: "m.facebook.com" },
    expected: { channel: "organic_social", source: "m.facebook.com", medium: "social" }
  },
  {
    name: "affiliate medium: referral",
    input: { utmSource: "blog", utmMedium: "affiliate" },
    expected: { channel: "referral", source: "blog", medium: "affiliate" }
  },
  // 3. Referrers.
  {
    name: "google referrer: organic search",
    input: { referrerHost: "www.google.com" },
    expected: { channel: "organic_search", source: "google", medium: "organic" }
  },
  {
    name: "a country google: organic search",
    input: { referrerHost: "www.google.co.uk" },
    expected: { channel: "organic_search", source: "google", medium: "organic" }
  },
  {
    name: "the search app's android referrer: organic search",
    input: { referrerHost: "com.google.android.googlequicksearchbox" },
    expected: { channel: "organic_search", source: "google", medium: "organic" }
  },
  {
    name: "duckduckgo: organic search",
    input: { referrerHost: "duckduckgo.com" },
    expected: { channel: "organic_search", source: "duckduckgo", medium: "organic" }
  },
  {
    name: "a google product that is not search: referral",
    input: { referrerHost: "docs.google.com" },
    expected: { channel: "referral", source: "docs.google.com", medium: "referral" }
  },
  {
    name: "webmail under a search domain: email",
    input: { referrerHost: "mail.google.com" },
    expected: { channel: "email", source: "gmail", medium: "email" }
  },
  {
    name: "facebook link shim: organic social",
    input: { referrerHost: "l.facebook.com" },
    expected: { channel: "organic_social", source: "facebook", medium: "social" }
  },
  {
    name: "t.co: organic social",
    input: { referrerHost: "t.co" },
    expected: { channel: "organic_social", source: "twitter", medium: "social" }
  },
  {
    name: "wa.me: messaging",
    input: { referrerHost: "wa.me" },
    expected: { channel: "messaging", source: "whatsapp", medium: "messaging" }
  },
  {
    name: "m.me: messaging",
    input: { referrerHost: "m.me" },
    expected: { channel: "messaging", source: "messenger", medium: "messaging" }
  },
  {
    name: "any other site: referral, source is its host without www",
    input: { referrerHost: "www.blog.example.org" },
    expected: { channel: "referral", source: "blog.example.org", medium: "referral" }
  },
  // 4. Direct.
  {
    name: "nothing at all: direct",
    input: {},
    expected: { channel: "direct", source: "(direct)", medium: "(none)" }
  },
  {
    name: "a same-site referrer: direct",
    input: { referrerHost: "shop.example.com" },
    expected: { channel: "direct", source: "(direct)", medium: "(none)" }
  },
  {
    name: "a sibling subdomain of the same site: direct",
    input: { referrerHost: "www.example.com" },
    expected: { channel: "direct", source: "(direct)", medium: "(none)" }
  },
  {
    name: "empty UTM values count as absent",
    input: { utmSource: "  ", utmMedium: "" },
    expected: { channel: "direct", source: "(direct)", medium: "(none)" }
  }
]

describe("classify", () => {
  for (const testCase of cases) {
    it(testCase.name, () => {
      assert.deepStrictEqual(classify({ pageHost: PAGE, ...testCase.input }), testCase.expected)
    })
  }

  it("every case's channel is one of the eight the attribution models know, and the table covers all eight", () => {
    for (const testCase of cases) assert.include(CHANNELS, testCase.expected.channel)
    const covered = new Set(cases.map((testCase) => testCase.expected.channel))
    assert.deepStrictEqual([...covered].sort(), [...CHANNELS].sort(), "the table covers every channel")
  })

  it("is deterministic and does not depend on letter case", () => {
    const a = classify({ pageHost: "Shop.Example.com", utmSource: "GOOGLE", utmMedium: "CpC", referrerHost: "WWW.GOOGLE.COM" })
    const b = classify({ pageHost: "shop.example.com", utmSource: "google", utmMedium: "cpc", referrerHost: "www.google.com" })
    assert.deepStrictEqual(a, b)
  })
})

describe("helpers", () => {
  it("clickIdOf picks the first kind in the documented order and trims the value", () => {
    const params = new URLSearchParams("fbclid=F1&gclid=%20G1%20&utm_source=x")
    assert.deepStrictEqual(clickIdOf(params), { kind: "gclid", value: "G1" })
    assert.strictEqual(clickIdOf(new URLSearchParams("gclid=&utm_source=x")), undefined)
    assert.deepStrictEqual(clickIdOf(new URLSearchParams("ttclid=T")), { kind: "ttclid", value: "T" })
  })

  it("isSameSite: www and subdomains of one site, never two unrelated sites", () => {
    assert.isTrue(isSameSite("www.example.com", "example.com"))
    assert.isTrue(isSameSite("shop.example.com", "www.example.com"))
    assert.isFalse(isSameSite("example.com", "example.org"))
    assert.isFalse(isSameSite("notexample.com", "example.com"))
  })

  it("hostKind knows webmail before search", () => {
    assert.deepStrictEqual(hostKind("mail.google.com"), { kind: "webmail", label: "gmail" })
    assert.deepStrictEqual(hostKind("www.google.de"), { kind: "search", label: "google" })
    assert.strictEqual(hostKind("example.com"), undefined)
  })
})
