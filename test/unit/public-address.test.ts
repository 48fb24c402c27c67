/**
 * The one address classifier (src/platform/public-address.ts) over IPv4 and IPv6, IPv4-mapped,
 * IPv4-compatible, NAT64 and 6to4 judged by their IPv4 address; and both of its callers (the
 * webhook public-host rule, decision 0077, and the template media check, decision 0093) giving
 * the same answer for every case.
 */
import { assert, describe, it } from "@effect/vitest"
import { isPrivateAddress } from "../../src/chat-surfaces/templates/media.ts"
import { classifyAddress, isPublicAddress } from "../../src/platform/public-address.ts"
import { checkTarget, parseAllowList } from "../../src/webhooks/delivery/public-host.ts"
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
  ["3fff::1", "public"],
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

const NOT_ADDRESSES = ["", "localhost", "example.com", "256.1.1.1", "1.2.3", "::ffff:999.0.0.1", "1::2::3", "[]", "01.02.03.004x"]

describe("public-address classifier", () => {
  it("IPv4: every non-public range is named, public addresses pass", () => {
    for (const [address, expected] of V4) assert.strictEqual(classifyAddress(address), expected, address)
  })

  it("IPv6, IPv4-mapped, IPv4-compatible, NAT64 and 6to4: the embedded IPv4 address decides", () => {
    for (const [address, expected] of V6) assert.strictEqual(classifyAddress(address), expected, address)
  })

  it("anything that is not an IP address is never public", () => {
    for (const text of NOT_ADDRESSES) {
      assert.strictEqual(classifyAddress(text), "reserved", text)
      assert.isFalse(isPublicAddress(text), text)
    }
  })

  it("the template media check refuses exactly the non-public addresses", () => {
    for (const [address, expected] of [...V4, ...V6]) {
      if (address.startsWith("[")) continue
      assert.strictEqual(isPrivateAddress(address), expected !== "public", address)
    }
    for (const text of NOT_ADDRESSES) assert.isTrue(isPrivateAddress(text), text)
  })

  it.effect("the webhook rule refuses exactly the non-public address literals (https, no allow-list)", () =>
    Effect.gen(function*() {
      for (const [address, expected] of [...V4, ...V6]) {
        // A zone index cannot be written in a URL host.
        if (address.includes("%") || address.startsWith("[")) continue
        const host = address.includes(":") ? `[${address}]` : address
        const exit = yield* Effect.exit(checkTarget(`https://${host}/hook`, parseAllowList([]), []))
        assert.strictEqual(Exit.isSuccess(exit), expected === "public", address)
      }
    }))
})
