/**
 * DNS look-ups for custom-domain verification (decision 0034): `node:dns/promises`' Resolver,
 * asking the servers of `SVC_DNS_SERVERS` (default: the system's), two tries and at most 3 s per
 * question. A name without the record is an empty answer, not an error; anything else the
 * resolver reports (timeout, refused, server failure) is a `DnsLookupFailed` with its code.
 */
import { Resolver } from "node:dns/promises"
import { Context, Data, Duration, Effect, Layer } from "effect"
import { AppConfig } from "../../../platform/config.ts"

/** How long one question may take before the verdict is `failed` (timeout). */
export const DNS_TIMEOUT_MS = 3_000

/** The resolver could not answer (the record's presence is unknown). */
export class DnsLookupFailed extends Data.TaggedError("DnsLookupFailed")<{
  /** The resolver's code: `ETIMEOUT`, `ECONNREFUSED`, `ESERVFAIL`, `EREFUSED`, ... */
  readonly code: string
  /** The name asked about. */
  readonly question: string
  readonly type: "CNAME" | "TXT"
}> {
  override get message() {
    return `${this.type} ${this.question}: ${this.code}`
  }
}

/** Codes that mean "this name has no such record" (NXDOMAIN, NOERROR without data). */
const ABSENT = new Set(["ENODATA", "ENOTFOUND"])

const codeOf = (error: unknown): string => {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string") return error.code
  return "EUNKNOWN"
}

export class DnsResolver extends Context.Service<DnsResolver, {
  /** The CNAME targets of `name` (lower-case, without the trailing dot); empty when it has none. */
  readonly cname: (name: string) => Effect.Effect<ReadonlyArray<string>, DnsLookupFailed>
  /** The TXT records of `name`, each record's strings joined; empty when it has none. */
  readonly txt: (name: string) => Effect.Effect<ReadonlyArray<string>, DnsLookupFailed>
}>()("svc/DnsResolver") {
  static readonly layer = Layer.effect(DnsResolver)(
    Effect.gen(function*() {
      const config = yield* AppConfig
      const servers = config.dnsServers ?? []

      /** One question on a resolver of its own, so an interrupted look-up cancels only itself. */
      const ask = <A>(type: "CNAME" | "TXT", name: string, question: (resolver: Resolver) => Promise<A>) =>
        Effect.suspend(() => {
          // Two tries (a lost UDP datagram is retried); the timeout below bounds the question as a whole.
          const resolver = new Resolver({ timeout: DNS_TIMEOUT_MS / 2, tries: 2 })
          if (servers.length > 0) resolver.setServers([...servers])
          return Effect.tryPromise({
            try: () => question(resolver),
            catch: (error) => codeOf(error)
          }).pipe(
            Effect.timeoutOrElse({
              duration: Duration.millis(DNS_TIMEOUT_MS),
              orElse: () => Effect.fail("ETIMEOUT")
            }),
            Effect.onInterrupt(() => Effect.sync(() => resolver.cancel())),
            Effect.map((answer): A | undefined => answer),
            Effect.catch((code) =>
              ABSENT.has(code) ? Effect.succeed(undefined) : Effect.fail(new DnsLookupFailed({ code, question: name, type }))
            ),
            Effect.withSpan("DnsResolver.lookup", { attributes: { "dns.type": type } })
          )
        })

      const cname = (name: string) =>
        Effect.map(
          ask("CNAME", name, (resolver) => resolver.resolveCname(name)),
          (targets) => (targets ?? []).map((target) => target.toLowerCase().replace(/\.$/, ""))
        )

      const txt = (name: string) =>
        Effect.map(
          ask("TXT", name, (resolver) => resolver.resolveTxt(name)),
          (records) => (records ?? []).map((chunks) => chunks.join(""))
        )

      return { cname, txt }
    })
  )
}
