/**
 * The public-host rule (decision 0077): a subscription URL's host is resolved, every address it
 * resolves to must be public (not private, loopback, link-local, CGNAT, ULA, metadata, reserved,
 * multicast), and the request then connects to the address that was checked (no second look-up),
 * never following a redirect. `SVC_WEBHOOK_ALLOW_HOSTS` (host names or CIDRs) lets chosen
 * addresses through for local development only. The classifier itself is ./public-address.ts,
 * shared with the template media check; the request is src/platform/outbound-http.ts's, with
 * this rule as its `publicOnly` option (webhook deliveries).
 */
import { Data, Duration, Effect } from "effect"
import { lookup } from "node:dns/promises"
import { Resolver } from "node:dns/promises"
import { isIP } from "node:net"
import { classifyAddress, v4Number, v6Groups } from "./public-address.ts"

/** `SVC_WEBHOOK_ALLOW_HOSTS`: host names (exact) and CIDRs let through the rule (local development only). */
export interface AllowList {
  readonly hosts: ReadonlyArray<string>
  readonly cidrs: ReadonlyArray<{ readonly family: 4 | 6; readonly bits: number; readonly base: ReadonlyArray<number> }>
}

const bitsOf = (family: 4 | 6, address: string): ReadonlyArray<number> | undefined => {
  if (family === 4) {
    const value = v4Number(address)
    return value === undefined ? undefined : [value >>> 16, value & 0xffff]
  }
  return v6Groups(address)
}

export const parseAllowList = (entries: ReadonlyArray<string>): AllowList => {
  const hosts: Array<string> = []
  const cidrs: Array<AllowList["cidrs"][number]> = []
  for (const raw of entries) {
    const entry = raw.trim().toLowerCase()
    if (entry === "") continue
    const [address = "", prefix] = entry.split("/")
    const family = isIP(address)
    if (family === 4 || family === 6) {
      const base = bitsOf(family, address)
      const max = family === 4 ? 32 : 128
      const bits = prefix === undefined ? max : Number(prefix)
      if (base !== undefined && Number.isInteger(bits) && bits >= 0 && bits <= max) cidrs.push({ family, bits, base })
    } else {
      hosts.push(entry.replace(/\.$/, ""))
    }
  }
  return { hosts, cidrs }
}

const inCidr = (cidr: AllowList["cidrs"][number], groups: ReadonlyArray<number>) => {
  let remaining = cidr.bits
  for (let index = 0; index < cidr.base.length && remaining > 0; index++) {
    const take = Math.min(16, remaining)
    const mask = (0xffff << (16 - take)) & 0xffff
    if (((groups[index] ?? 0) & mask) !== ((cidr.base[index] ?? 0) & mask)) return false
    remaining -= take
  }
  return true
}

export const isAllowed = (allow: AllowList, host: string, address: string): boolean => {
  if (allow.hosts.includes(host.toLowerCase().replace(/\.$/, ""))) return true
  const family = isIP(address)
  if (family !== 4 && family !== 6) return false
  const groups = bitsOf(family, address)
  return groups !== undefined && allow.cidrs.some((cidr) => cidr.family === family && inCidr(cidr, groups))
}

/** Why a URL is not a deliverable target (`reason` is the error's machine-readable reason). */
export class TargetRefused extends Data.TaggedError("TargetRefused")<{
  readonly reason: "url_invalid" | "url_scheme" | "host_unresolvable" | "host_not_public"
  readonly message: string
}> {}

export interface CheckedTarget {
  readonly url: URL
  /** The address the request connects to: the one that was checked. */
  readonly address: string
}

const DNS_TIMEOUT_MS = 5_000

/** Every address `host` resolves to (A and AAAA), through `servers` when given, else the system's resolver. */
const resolveAll = (host: string, servers: ReadonlyArray<string>) =>
  Effect.tryPromise({
    try: async (): Promise<Resolved> => {
      if (servers.length === 0) return lookup(host, { all: true, verbatim: true })
      const resolver = new Resolver({ timeout: DNS_TIMEOUT_MS / 2, tries: 2 })
      resolver.setServers([...servers])
      const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)])
      return [
        ...(v4.status === "fulfilled" ? v4.value.map((address) => ({ address })) : []),
        ...(v6.status === "fulfilled" ? v6.value.map((address) => ({ address })) : [])
      ]
    },
    catch: () => new TargetRefused({ reason: "host_unresolvable", message: `The host ${host} does not resolve` })
  }).pipe(
    Effect.timeoutOrElse({
      duration: Duration.millis(DNS_TIMEOUT_MS),
      orElse: () => Effect.fail(new TargetRefused({ reason: "host_unresolvable", message: `The host ${host} did not resolve in time` }))
    })
  )

type Resolved = ReadonlyArray<{ readonly address: string }>

/**
 * A short-lived memory of look-ups for the delivery worker: a host's addresses are reused for at
 * most `seconds` (kept below common DNS TTLs), only successful answers are kept, and every attempt
 * still classifies the addresses and connects to the one it checked.
 */
export interface ResolveCache {
  readonly get: (host: string) => Resolved | undefined
  readonly set: (host: string, addresses: Resolved) => void
}

export const resolveCache = (seconds: number, now: () => number = Date.now): ResolveCache => {
  const entries = new Map<string, { readonly until: number; readonly addresses: Resolved }>()
  return {
    get: (host) => {
      const entry = entries.get(host)
      if (entry === undefined) return undefined
      if (entry.until > now()) return entry.addresses
      entries.delete(host)
      return undefined
    },
    set: (host, addresses) => {
      // Bounded: a flood of distinct hosts starts it afresh rather than growing it.
      if (entries.size >= 10_000) entries.clear()
      entries.set(host, { until: now() + seconds * 1000, addresses })
    }
  }
}

/**
 * Checks `raw` against the rule and answers the address to connect to. Every resolved address
 * must pass (a host answering one public and one private address is refused: the attacker
 * controls which one a later look-up would pick).
 */
export const checkTarget = (raw: string, allow: AllowList, dnsServers: ReadonlyArray<string>, cache?: ResolveCache) =>
  Effect.gen(function*() {
    const url = URL.canParse(raw) ? new URL(raw) : undefined
    if (url === undefined || (url.protocol !== "https:" && url.protocol !== "http:")) {
      return yield* new TargetRefused({ reason: "url_invalid", message: "`url` is not an absolute http(s) URL" })
    }
    if (url.username !== "" || url.password !== "") {
      return yield* new TargetRefused({ reason: "url_invalid", message: "`url` must not carry credentials" })
    }
    const host = url.hostname.replace(/^\[|\]$/g, "")
    const literal = isIP(host)
    const cached = literal === 4 || literal === 6 ? undefined : cache?.get(host)
    const resolved = literal === 4 || literal === 6
      ? [{ address: host }]
      : cached ?? (yield* Effect.tap(resolveAll(host, dnsServers), (addresses) =>
        Effect.sync(() => {
          if (addresses.length > 0) cache?.set(host, addresses)
        })))
    if (resolved.length === 0) {
      return yield* new TargetRefused({ reason: "host_unresolvable", message: `The host ${host} does not resolve` })
    }
    for (const { address } of resolved) {
      const kind = classifyAddress(address)
      if (kind !== "public" && !isAllowed(allow, host, address)) {
        return yield* new TargetRefused({
          reason: "host_not_public",
          message: `The host ${host} resolves to a ${kind.replace("_", "-")} address; webhook targets must be public hosts`
        })
      }
    }
    // Plain http only for a target the development allow-list lets through.
    if (url.protocol !== "https:" && !(url.protocol === "http:" && resolved.every(({ address }) => isAllowed(allow, host, address)))) {
      return yield* new TargetRefused({ reason: "url_scheme", message: "`url` must be an https URL" })
    }
    return { url, address: resolved[0]?.address ?? host } satisfies CheckedTarget
  })
