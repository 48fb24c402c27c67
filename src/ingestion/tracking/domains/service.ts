/**
 * First-party collector domains (decision 0034). A profile registers a hostname and creates two
 * DNS records: a CNAME to the service's collector host and a TXT `_svc-verify.<hostname>` with
 * the domain's token. `verify` asks DNS now and stores the verdict; a verified domain is active:
 * the snippet posts to `https://<hostname>/t/collect` and the collector accepts that host.
 */
import { isIP } from "node:net"
import { Context, Effect, Layer, Option, Result } from "effect"
import { isUuid } from "../../../../schema/common.ts"
import { type DatabaseUnavailable, InvalidState, NotFound, ValidationError } from "../../../../schema/errors.ts"
import type { CustomDomain } from "../../../../schema/tracking.ts"
import { AuditLog } from "../../../kernel/audit/repo.ts"
import { randomBase62 } from "../../../kernel/credentials/tokens.ts"
import type { PrincipalShape, ProfileContext } from "../../../kernel/principal.ts"
import { AppConfig } from "../../../platform/config.ts"
import { CollectorHosts } from "./collector-hosts.ts"
import { DnsResolver } from "./dns.ts"
import { type DomainRow, type DomainVerdict, TrackingDomainsRepo } from "./repo.ts"

/** Custom domains a profile may hold. */
export const MAX_DOMAINS_PER_PROFILE = 10

/** The TXT record's name: `_svc-verify.<hostname>`. */
export const verificationName = (hostname: string) => `_svc-verify.${hostname}`

/** Top-level names that are never public DNS (RFC 2606, 6761, 6762, 7686, and common private ones). */
const PRIVATE_TLDS = new Set([
  "localhost", "local", "internal", "test", "invalid", "example", "onion", "arpa", "alt",
  "lan", "home", "corp", "intranet", "private", "localdomain"
])
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/
const TOP_LABEL = /^([a-z]{2,63}|xn--[a-z0-9-]{1,59})$/

/**
 * A hostname as stored (lower-case ASCII, IDNs in punycode, no trailing dot), or why it is not a
 * public DNS name this service can serve: IP addresses, single labels, private top-level names,
 * and the service's own host (or a name under it) are refused.
 */
export const normalizeHostname = (raw: string, serviceHost: string): Result.Result<string, string> => {
  const value = raw.trim().replace(/\.$/, "")
  if (value === "") return Result.fail("Expected a hostname such as t.shop.example.com")
  if (/[/:@?#\s]/.test(value)) return Result.fail("A hostname only: no scheme, port, path or spaces")
  if (isIP(value) !== 0) return Result.fail("An IP address is not a DNS name: use a hostname")
  if (!URL.canParse(`http://${value}`)) return Result.fail("Not a valid hostname")
  const hostname = new URL(`http://${value}`).hostname.toLowerCase()
  if (isIP(hostname) !== 0 || hostname.startsWith("[")) return Result.fail("An IP address is not a DNS name: use a hostname")
  const labels = hostname.split(".")
  const top = labels[labels.length - 1] ?? ""
  if (hostname.length > 253 || labels.length < 2 || !labels.every((label) => LABEL.test(label)) || !TOP_LABEL.test(top)) {
    return Result.fail("Not a valid public DNS name (letters, digits and hyphens in dot-separated labels)")
  }
  if (PRIVATE_TLDS.has(top)) return Result.fail(`.${top} names are not public DNS`)
  const own = serviceHost.toLowerCase()
  if (hostname === own || hostname.endsWith(`.${own}`)) {
    return Result.fail("The service's own host cannot be a custom tracking domain")
  }
  return Result.succeed(hostname)
}

const noSuchDomain = () => new NotFound({ message: "No such tracking domain." })

export class TrackingDomains extends Context.Service<TrackingDomains, {
  readonly list: (profile: ProfileContext) => Effect.Effect<ReadonlyArray<CustomDomain>, DatabaseUnavailable>
  readonly register: (
    actor: PrincipalShape,
    profile: ProfileContext,
    hostname: string
  ) => Effect.Effect<{ readonly domain: CustomDomain; readonly created: boolean }, ValidationError | InvalidState | DatabaseUnavailable>
  readonly remove: (
    actor: PrincipalShape,
    profile: ProfileContext,
    id: string
  ) => Effect.Effect<{ readonly id: string; readonly hostname: string }, NotFound | DatabaseUnavailable>
  /** Asks DNS now and stores the verdict. */
  readonly verify: (actor: PrincipalShape, profile: ProfileContext, id: string) => Effect.Effect<CustomDomain, NotFound | DatabaseUnavailable>
}>()("svc/TrackingDomains") {
  static readonly layer = Layer.effect(TrackingDomains)(
    Effect.gen(function*() {
      const repo = yield* TrackingDomainsRepo
      const dns = yield* DnsResolver
      const hosts = yield* CollectorHosts
      const audit = yield* AuditLog
      const config = yield* AppConfig
      const collectorHost = new URL(config.baseUrl).hostname.toLowerCase()

      const render = (row: DomainRow): CustomDomain => ({
        id: row.id,
        profile_id: row.profile_id,
        hostname: row.hostname,
        status: row.status,
        active: row.verified_at !== null,
        dns_records: [
          { type: "CNAME", name: row.hostname, value: collectorHost },
          { type: "TXT", name: verificationName(row.hostname), value: row.verify_token }
        ],
        missing: row.missing,
        error: row.error,
        created_at: row.created_at,
        checked_at: row.checked_at,
        verified_at: row.verified_at
      })

      const list = Effect.fn("TrackingDomains.list")(function*(profile: ProfileContext) {
        return (yield* repo.list(profile.profileId)).map(render)
      })

      const register = Effect.fn("TrackingDomains.register")(function*(
        actor: PrincipalShape,
        profile: ProfileContext,
        raw: string
      ) {
        const normalized = normalizeHostname(raw, collectorHost)
        if (Result.isFailure(normalized)) return yield* new ValidationError({ message: `body.hostname: ${normalized.failure}` })
        const hostname = normalized.success
        const existing = (yield* repo.list(profile.profileId)).find((row) => row.hostname === hostname)
        if (existing !== undefined) return { domain: render(existing), created: false }
        if ((yield* repo.count(profile.profileId)) >= MAX_DOMAINS_PER_PROFILE) {
          return yield* new InvalidState({
            message: `A profile holds at most ${MAX_DOMAINS_PER_PROFILE} tracking domains: remove one first.`
          })
        }
        const registration = yield* repo.register(profile.profileId, hostname, `svc-verify=${randomBase62(32)}`)
        if (registration._tag === "TakenElsewhere") {
          return yield* new InvalidState({ message: "This hostname is registered as a tracking domain of another profile." })
        }
        if (registration.created) {
          yield* audit.record({
            actor,
            action: "tracking_domain.created",
            targetKind: "tracking_domain",
            targetId: registration.row.id,
            workspaceId: profile.workspaceId,
            profileId: profile.profileId,
            details: { hostname }
          })
          yield* hosts.forget
        }
        return { domain: render(registration.row), created: registration.created }
      })

      const remove = Effect.fn("TrackingDomains.remove")(function*(actor: PrincipalShape, profile: ProfileContext, id: string) {
        if (!isUuid(id)) return yield* noSuchDomain()
        const removed = yield* repo.remove(profile.profileId, id.toLowerCase())
        if (Option.isNone(removed)) return yield* noSuchDomain()
        yield* audit.record({
          actor,
          action: "tracking_domain.removed",
          targetKind: "tracking_domain",
          targetId: removed.value.id,
          workspaceId: profile.workspaceId,
          profileId: profile.profileId,
          details: { hostname: removed.value.hostname, was_active: removed.value.verified_at !== null }
        })
        yield* hosts.forget
        return { id: removed.value.id, hostname: removed.value.hostname }
      })

      /** Both records, asked at once; a resolver failure on either makes the verdict `failed`. */
      const check = (row: DomainRow) =>
        Effect.gen(function*() {
          const txtName = verificationName(row.hostname)
          const [cname, txt] = yield* Effect.all([Effect.result(dns.cname(row.hostname)), Effect.result(dns.txt(txtName))], {
            concurrency: 2
          })
          const failures = [cname, txt].flatMap((answer) => Result.isFailure(answer) ? [answer.failure.message] : [])
          if (Result.isFailure(cname) || Result.isFailure(txt)) {
            return { status: "failed", error: failures.join("; ") } satisfies DomainVerdict
          }
          const missing = [
            ...(cname.success.includes(collectorHost)
              ? []
              : [{ type: "CNAME" as const, name: row.hostname, expected: collectorHost, found: cname.success }]),
            ...(txt.success.includes(row.verify_token)
              ? []
              : [{ type: "TXT" as const, name: txtName, expected: row.verify_token, found: txt.success.slice(0, 10) }])
          ]
          return missing.length === 0
            ? { status: "verified" } satisfies DomainVerdict
            : { status: "pending", missing } satisfies DomainVerdict
        })

      const verify = Effect.fn("TrackingDomains.verify")(function*(actor: PrincipalShape, profile: ProfileContext, id: string) {
        if (!isUuid(id)) return yield* noSuchDomain()
        const found = yield* repo.find(profile.profileId, id.toLowerCase())
        if (Option.isNone(found)) return yield* noSuchDomain()
        const verdict = yield* check(found.value)
        const saved = yield* repo.saveVerdict(profile.profileId, found.value.id, verdict)
        // Removed while DNS was asked.
        if (Option.isNone(saved)) return yield* noSuchDomain()
        const wasActive = found.value.verified_at !== null
        const isActive = saved.value.verified_at !== null
        yield* audit.record({
          actor,
          action: "tracking_domain.checked",
          targetKind: "tracking_domain",
          targetId: saved.value.id,
          workspaceId: profile.workspaceId,
          profileId: profile.profileId,
          details: { hostname: saved.value.hostname, status: verdict.status, was_active: wasActive, active: isActive }
        })
        if (wasActive !== isActive) yield* hosts.forget
        return render(saved.value)
      })

      return { list, register, remove, verify }
    })
  ).pipe(Layer.provide([TrackingDomainsRepo.layer, DnsResolver.layer, CollectorHosts.layer, AuditLog.layer]))
}
