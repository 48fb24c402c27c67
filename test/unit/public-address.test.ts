/**
 * The one address classifier (src/platform/public-address.ts) over IPv4 and IPv6, IPv4-mapped,
 * IPv4-compatible, NAT64 and 6to4 judged by their IPv4 address; and both of its callers (the
 * webhook public-host rule, decision 0077, and the template media check, decision 0093) giving
 * the same answer for every case.
 */
import { assert, describe, it } from "@effect/vitest"
import { isPrivateAddress } from "../../src/messaging/templates/media.ts"
import { classifyAddress, isPublicAddress } from "../../src/platform/public-address.ts"
import { checkTarget, parseAllowList } from "../../src/platform/public-host.ts"
import { Effect, Exit } from "effect"

const V4: ReadonlyArray<readonly [string, string]> = [
  ["8.8.8.8", "public"],
  ["93.184.216.34", "public"],
  ["1.1.1.1", "public"],
  ["0.0.0.0", "unspecified"],
  ["0.1.2.3", "unspecified"],
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["10.1.2.3", "private"],
  ["172.16.0.1", "private"],
  ["172.31.255.255", "private"],
  ["172.32.0.1", "public"],
  ["172.15.255.255", "public"],
  ["192.168.1.1", "private"],
  ["169.254.10.10", "link_local"],
  ["169.254.169.254", "metadata"],
  ["100.64.0.1", "cgnat"],
  ["100.127.255.255", "cgnat"],
  ["100.63.255.255", "public"],
  ["100.128.0.1", "public"],
  ["100.100.100.200", "metadata"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["255.255.255.255", "reserved"],
  ["240.0.0.1", "reserved"],
  ["192.0.0.8", "reserved"],
  ["192.0.2.10", "reserved"],
  ["198.51.100.7", "reserved"],
  ["203.0.113.9", "reserved"],
  ["198.18.0.1", "reserved"],
  ["198.19.255.255", "reserved"],
  ["198.20.0.1", "public"]
]

const V6: ReadonlyArray<readonly [string, string]> = [
  ["2606:4700:4700::1111", "public"],
  ["2a00:1450:4001:80b::200e", "public"],
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["fe80::1", "link_local"],
  ["fe80::1%eth0", "link_local"],
  ["fc00::1", "ula"],
  ["fd12:3456::1", "ula"],
  ["fd00:ec2::254", "metadata"],
  ["fec0::1", "private"],
  ["ff02::1", "multicast"],
  ["2001:db8::1", "reserved"],
  // Teredo and the rest of 2001::/23; outside 2000::/3.
  ["2001:0:4136:e378::1", "reserved"],
  ["3fff::1", "reserved"],
  ["4000::1", "reserved"],
  ["100::1", "reserved"],
  // IPv4-mapped, both notations.
  ["::ffff:127.0.0.1", "loopback"],
  ["::ffff:7f00:1", "loopback"],
  ["::ffff:10.0.0.1", "private"],
  ["::ffff:169.254.169.254", "metadata"],
  ["::ffff:100.64.0.1", "cgnat"],
  ["::ffff:192.0.2.1", "reserved"],
  ["::ffff:8.8.8.8", "public"],
  // IPv4-compatible (deprecated).
  ["::10.0.0.1", "private"],
  ["::8.8.8.8", "public"],
  // NAT64.
  ["64:ff9b::a9fe:a9fe", "metadata"],
  ["64:ff9b::127.0.0.1", "loopback"],
  ["64:ff9b::8.8.8.8", "public"],
  // 6to4: the IPv4 address in the second and third groups.
  ["2002:c0a8:0101::1", "private"],
  ["2002:7f00:0001::1", "loopback"],
  ["2002:0808:0808::1", "public"],
  ["[::1]", "loopback"]
]

/**
 * Every refused IPv4 range at its edges: the last address before it, its first and last, and the
 * first after it (IANA IPv4 special-purpose registry and the rest of the rule).
 */
const V4_BOUNDARIES: ReadonlyArray<readonly [string, string]> = [
  // 0.0.0.0/8 "this network"
  ["0.0.0.0", "unspecified"],
  ["0.255.255.255", "unspecified"],
  ["1.0.0.0", "public"],
  // 10.0.0.0/8
  ["9.255.255.255", "public"],
  ["10.0.0.0", "private"],
  ["10.255.255.255", "private"],
  ["11.0.0.0", "public"],
  // 100.64.0.0/10 shared address space
  ["100.63.255.255", "public"],
  ["100.64.0.0", "cgnat"],
  ["100.127.255.255", "cgnat"],
  ["100.128.0.0", "public"],
  // 127.0.0.0/8
  ["126.255.255.255", "public"],
  ["127.0.0.0", "loopback"],
  ["127.255.255.255", "loopback"],
  ["128.0.0.0", "public"],
  // 169.254.0.0/16
  ["169.253.255.255", "public"],
  ["169.254.0.0", "link_local"],
  ["169.254.255.255", "link_local"],
  ["169.255.0.0", "public"],
  // 172.16.0.0/12
  ["172.15.255.255", "public"],
  ["172.16.0.0", "private"],
  ["172.31.255.255", "private"],
  ["172.32.0.0", "public"],
  // 192.0.0.0/24 IETF protocol assignments (192.0.0.9 and .10 included: anycast, nothing to deliver to)
  ["191.255.255.255", "public"],
  ["192.0.0.0", "reserved"],
  ["192.0.0.9", "reserved"],
  ["192.0.0.255", "reserved"],
  ["192.0.1.0", "public"],
  // 192.0.2.0/24 TEST-NET-1
  ["192.0.1.255", "public"],
  ["192.0.2.0", "reserved"],
  ["192.0.2.255", "reserved"],
  ["192.0.3.0", "public"],
  // 192.31.196.0/24 (AS112) and 192.52.193.0/24 (AMT) are globally reachable
  ["192.31.196.1", "public"],
  ["192.52.193.1", "public"],
  // 192.88.99.0/24 deprecated 6to4 relay anycast
  ["192.88.98.255", "public"],
  ["192.88.99.0", "reserved"],
  ["192.88.99.1", "reserved"],
  ["192.88.99.255", "reserved"],
  ["192.88.100.0", "public"],
  // 192.168.0.0/16
  ["192.167.255.255", "public"],
  ["192.168.0.0", "private"],
  ["192.168.255.255", "private"],
  ["192.169.0.0", "public"],
  // 198.18.0.0/15 benchmarking
  ["198.17.255.255", "public"],
  ["198.18.0.0", "reserved"],
  ["198.19.255.255", "reserved"],
  ["198.20.0.0", "public"],
  // 198.51.100.0/24 TEST-NET-2
  ["198.51.99.255", "public"],
  ["198.51.100.0", "reserved"],
  ["198.51.100.255", "reserved"],
  ["198.51.101.0", "public"],
  // 203.0.113.0/24 TEST-NET-3
  ["203.0.112.255", "public"],
  ["203.0.113.0", "reserved"],
  ["203.0.113.255", "reserved"],
  ["203.0.114.0", "public"],
  // 224.0.0.0/4 multicast, then 240.0.0.0/4 reserved with 255.255.255.255 limited broadcast
  ["223.255.255.255", "public"],
  ["224.0.0.0", "multicast"],
  ["239.255.255.255", "multicast"],
  ["240.0.0.0", "reserved"],
  ["255.255.255.254", "reserved"],
  ["255.255.255.255", "reserved"]
]

/** Every refused IPv6 range at its edges (IANA IPv6 special-purpose registry and the rest of the rule). */
const V6_BOUNDARIES: ReadonlyArray<readonly [string, string]> = [
  // ::/128, ::1/128 and the rest of ::/96 (IPv4-compatible, judged by its IPv4 address)
  ["::", "unspecified"],
  ["::1", "loopback"],
  ["::2", "unspecified"],
  ["::ffff:ffff", "reserved"],
  // ::ffff:0:0/96 IPv4-mapped, and what is beside it
  ["::fffe:ffff:ffff", "reserved"],
  ["::ffff:0.0.0.0", "unspecified"],
  ["::ffff:192.88.99.1", "reserved"],
  ["::ffff:c058:6301", "reserved"],
  ["::ffff:255.255.255.255", "reserved"],
  ["::1:0:0:0", "reserved"],
  // 64:ff9b::/96 NAT64 (judged by its IPv4 address), 64:ff9b:1::/48 local-use NAT64 (never)
  ["64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"],
  ["64:ff9b::", "unspecified"],
  ["64:ff9b::192.88.99.1", "reserved"],
  ["64:ff9b::ffff:ffff", "reserved"],
  ["64:ff9b::1:0:0", "reserved"],
  ["64:ff9b:1::", "reserved"],
  ["64:ff9b:1::8.8.8.8", "reserved"],
  ["64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "reserved"],
  // 100::/64 discard-only, 5f00::/16 SRv6 SIDs: outside 2000::/3
  ["100::", "reserved"],
  ["100::ffff:ffff:ffff:ffff", "reserved"],
  ["5f00::1", "reserved"],
  // 2000::/3 global unicast
  ["1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"],
  ["2000::1", "public"],
  ["2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "public"],
  // 2001::/23 IETF protocol assignments (Teredo, benchmarking, ORCHID, the anycast exceptions too)
  ["2001::", "reserved"],
  ["2001:1::1", "reserved"],
  ["2001:2::1", "reserved"],
  ["2001:20::1", "reserved"],
  ["2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"],
  ["2001:200::", "public"],
  // 2001:db8::/32 documentation
  ["2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "public"],
  ["2001:db8::", "reserved"],
  ["2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"],
  ["2001:db9::", "public"],
  // 2002::/16 6to4: the IPv4 address in groups 2 and 3 decides
  ["2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "public"],
  ["2002::", "unspecified"],
  ["2002:c058:6301::1", "reserved"],
  ["2002:c058:6300::1", "reserved"],
  ["2002:c058:62ff::1", "public"],
  ["2002:c058:6400::1", "public"],
  ["2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"],
  ["2003::", "public"],
  // 2620:4f:8000::/48 (AS112) is globally reachable
  ["2620:4f:8000::1", "public"],
  // 3fff::/20 documentation (RFC 9637)
  ["3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "public"],
  ["3fff::", "reserved"],
  ["3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"],
  ["3fff:1000::", "public"],
  ["3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "public"],
  ["4000::", "reserved"],
  // fc00::/7 unique local
  ["fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"],
  ["fc00::", "ula"],
  ["fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ula"],
  ["fe00::", "reserved"],
  // fe80::/10 link-local, fec0::/10 site-local, ff00::/8 multicast
  ["fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "reserved"],
  ["fe80::", "link_local"],
  ["febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link_local"],
  ["fec0::", "private"],
  ["feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private"],
  ["ff00::", "multicast"],
  ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "multicast"]
]

/** An IPv4 address's four bytes as two hex groups (`c058:6301` for 192.88.99.1). */
const hexGroups = (v4: string) => {
  const [a = 0, b = 0, c = 0, d = 0] = v4.split(".").map(Number)
  return `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
}

const NOT_ADDRESSES = ["", "localhost", "example.com", "256.1.1.1", "1.2.3", "::ffff:999.0.0.1", "1::2::3", "[]", "01.02.03.004x"]

describe("public-address classifier", () => {
  it("IPv4: every non-public range is named, public addresses pass", () => {
    for (const [address, expected] of V4) assert.strictEqual(classifyAddress(address), expected, address)
  })

  it("IPv6, IPv4-mapped, IPv4-compatible, NAT64 and 6to4: the embedded IPv4 address decides", () => {
    for (const [address, expected] of V6) assert.strictEqual(classifyAddress(address), expected, address)
  })

  it("IPv4: each range's first and last address are refused, the addresses beside it are not", () => {
    for (const [address, expected] of V4_BOUNDARIES) assert.strictEqual(classifyAddress(address), expected, address)
  })

  it("IPv6: each range's first and last address are refused, the addresses beside it are not", () => {
    for (const [address, expected] of V6_BOUNDARIES) assert.strictEqual(classifyAddress(address), expected, address)
  })

  it("every IPv4 address, mapped, IPv4-compatible, NAT64 or inside 6to4 (any host part), is judged as itself", () => {
    for (const [v4, expected] of [...V4, ...V4_BOUNDARIES]) {
      const groups = hexGroups(v4)
      const forms = [`::ffff:${v4}`, `::ffff:${groups}`, `64:ff9b::${v4}`, `2002:${groups}::`, `2002:${groups}:ffff:ffff:ffff:ffff:ffff`]
      for (const embedded of forms) {
        assert.strictEqual(classifyAddress(embedded), expected, `${embedded} (${v4})`)
      }
      // IPv4-compatible ::a.b.c.d reads :: and ::1 as the IPv6 unspecified and loopback addresses.
      if (!v4.startsWith("0.0.0.")) assert.strictEqual(classifyAddress(`::${v4}`), expected, `::${v4}`)
    }
  })

  it("anything that is not an IP address is never public", () => {
    for (const text of NOT_ADDRESSES) {
      assert.strictEqual(classifyAddress(text), "reserved", text)
      assert.isFalse(isPublicAddress(text), text)
    }
  })

  it("the template media check refuses exactly the non-public addresses", () => {
    for (const [address, expected] of [...V4, ...V6, ...V4_BOUNDARIES, ...V6_BOUNDARIES]) {
      if (address.startsWith("[")) continue
      assert.strictEqual(isPrivateAddress(address), expected !== "public", address)
    }
    for (const text of NOT_ADDRESSES) assert.isTrue(isPrivateAddress(text), text)
  })

  it.effect("the webhook rule refuses exactly the non-public address literals (https, no allow-list)", () =>
    Effect.gen(function*() {
      for (const [address, expected] of [...V4, ...V6, ...V4_BOUNDARIES, ...V6_BOUNDARIES]) {
        // A zone index cannot be written in a URL host.
        if (address.includes("%") || address.startsWith("[")) continue
        const host = address.includes(":") ? `[${address}]` : address
        const exit = yield* Effect.exit(checkTarget(`https://${host}/hook`, parseAllowList([]), []))
        assert.strictEqual(Exit.isSuccess(exit), expected === "public", address)
      }
    }))
})
