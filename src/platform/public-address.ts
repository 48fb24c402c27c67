/**
 * The one address classifier for outbound fetches to user-supplied hosts (webhook targets,
 * decision 0077; template media, decision 0093): an IP address is `public` or names the range
 * that makes it unreachable for us. Refused: unspecified, loopback, RFC 1918 private, link-local,
 * CGNAT, ULA, site-local, metadata, multicast and broadcast, documentation and the other reserved
 * ranges. IPv4-mapped, IPv4-compatible, NAT64 and 6to4 addresses are judged by the IPv4 address
 * they carry. Anything that is not an IP address is `reserved` (never public).
 *
 * Checked against IANA's IPv4 and IPv6 special-purpose address registries: every range they mark
 * not globally reachable is refused. Stricter than the registries, whole blocks are refused where
 * they carve out a few anycast or identifier addresses (192.0.0.9 and .10 in 192.0.0.0/24;
 * 2001:1::1-3, 2001:3::/32, 2001:4:112::/48 and ORCHIDv2 in 2001::/23): none is a place to
 * deliver to. The AS112 and AMT blocks (192.31.196.0/24, 192.52.193.0/24, 192.175.48.0/24,
 * 2620:4f:8000::/48) are ordinary routed unicast and stay public.
 */
import { isIP } from "node:net"

export type AddressClass =
  | "public"
  | "unspecified"
  | "loopback"
  | "private"
  | "link_local"
  | "metadata"
  | "cgnat"
  | "ula"
  | "multicast"
  | "reserved"

/** An IPv4 address as a 32-bit unsigned number, or undefined. */
export const v4Number = (address: string): number | undefined => {
  const parts = address.split(".")
  if (parts.length !== 4) return undefined
  let value = 0
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return undefined
    const byte = Number(part)
    if (byte > 255) return undefined
    value = value * 256 + byte
  }
  return value
}

/** An IPv6 address as 8 16-bit groups (an embedded dotted IPv4 tail included), or undefined. */
export const v6Groups = (address: string): ReadonlyArray<number> | undefined => {
  let text = address.toLowerCase().replace(/^\[|\]$/g, "").replace(/%.*$/, "")
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted !== null) {
    const v4 = v4Number(dotted[1] ?? "")
    if (v4 === undefined) return undefined
    text = text.slice(0, dotted.index) + `${Math.floor(v4 / 65536).toString(16)}:${(v4 % 65536).toString(16)}`
  }
  const halves = text.split("::")
  if (halves.length > 2) return undefined
  const head = halves[0] === "" ? [] : (halves[0] ?? "").split(":")
  const tail = halves.length === 2 ? (halves[1] === "" ? [] : (halves[1] ?? "").split(":")) : []
  const missing = 8 - head.length - tail.length
  if (halves.length === 1 ? missing !== 0 : missing < 1) return undefined
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...tail]
  if (groups.some((group) => !/^[0-9a-f]{1,4}$/.test(group))) return undefined
  return groups.map((group) => parseInt(group, 16))
}

const inV4 = (value: number, base: string, bits: number) => {
  const start = v4Number(base) ?? 0
  const size = 2 ** (32 - bits)
  return value >= start && value < start + size
}

export const classifyV4 = (address: string): AddressClass => {
  const value = v4Number(address)
  if (value === undefined) return "reserved"
  if (value === (v4Number("169.254.169.254") ?? 0) || value === (v4Number("100.100.100.200") ?? 0)) return "metadata"
  if (inV4(value, "0.0.0.0", 8)) return "unspecified"
  if (inV4(value, "127.0.0.0", 8)) return "loopback"
  if (inV4(value, "10.0.0.0", 8) || inV4(value, "172.16.0.0", 12) || inV4(value, "192.168.0.0", 16)) return "private"
  if (inV4(value, "169.254.0.0", 16)) return "link_local"
  if (inV4(value, "100.64.0.0", 10)) return "cgnat"
  if (inV4(value, "224.0.0.0", 4)) return "multicast"
  // IETF protocol assignments, the three documentation networks, the deprecated 6to4 relay
  // anycast (RFC 7526: whoever answers there is nobody in particular), benchmarking, and 240/4
  // with the limited broadcast address 255.255.255.255.
  if (
    inV4(value, "192.0.0.0", 24) || inV4(value, "192.0.2.0", 24) || inV4(value, "192.88.99.0", 24) ||
    inV4(value, "198.18.0.0", 15) || inV4(value, "198.51.100.0", 24) || inV4(value, "203.0.113.0", 24) ||
    inV4(value, "240.0.0.0", 4)
  ) return "reserved"
  return "public"
}

const v4OfGroups = (high: number, low: number) =>
  `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`

export const classifyV6 = (address: string): AddressClass => {
  const groups = v6Groups(address)
  if (groups === undefined) return "reserved"
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = groups
  const zeroHead = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0
  // IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::a.b.c.d): the IPv4 address decides.
  if (zeroHead && g5 === 0xffff) return classifyV4(v4OfGroups(g6, g7))
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return classifyV4(v4OfGroups(g6, g7))
  if (zeroHead && g5 === 0 && g6 === 0 && g7 === 0) return "unspecified"
  if (zeroHead && g5 === 0 && g6 === 0 && g7 === 1) return "loopback"
  if (zeroHead && g5 === 0) return classifyV4(v4OfGroups(g6, g7))
  // The AWS instance metadata service's IPv6 address (inside the ULA range, named for clarity).
  if (g0 === 0xfd00 && g1 === 0x0ec2 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0 && g6 === 0 && g7 === 0x254) return "metadata"
  if ((g0 & 0xfe00) === 0xfc00) return "ula"
  if ((g0 & 0xffc0) === 0xfe80) return "link_local"
  // Site-local (deprecated, still private).
  if ((g0 & 0xffc0) === 0xfec0) return "private"
  if ((g0 & 0xff00) === 0xff00) return "multicast"
  // The two documentation prefixes, 2001:db8::/32 and 3fff::/20 (RFC 9637).
  if ((g0 === 0x2001 && g1 === 0x0db8) || (g0 === 0x3fff && g1 < 0x1000)) return "reserved"
  // 6to4 embeds an IPv4 address: it decides.
  if (g0 === 0x2002) return classifyV4(v4OfGroups(g1, g2))
  // Teredo and the rest of 2001::/23 are special-purpose.
  if (g0 === 0x2001 && g1 < 0x0200) return "reserved"
  // Only global unicast (2000::/3) is routable on the internet; this also refuses the local-use
  // NAT64 prefix 64:ff9b:1::/48, discard-only 100::/64 and the SRv6 SIDs of 5f00::/16.
  if ((g0 & 0xe000) !== 0x2000) return "reserved"
  return "public"
}

/** The class of an IPv4 or IPv6 address (IPv6 in brackets accepted); a non-address is `reserved`. */
export const classifyAddress = (address: string): AddressClass => {
  const family = isIP(address.replace(/^\[|\]$/g, ""))
  return family === 4 ? classifyV4(address) : family === 6 ? classifyV6(address) : "reserved"
}

/** Whether an outbound fetch to a user-supplied host may connect to `address`. */
export const isPublicAddress = (address: string): boolean => classifyAddress(address) === "public"
