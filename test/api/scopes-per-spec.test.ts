/**
 * Every operation requires exactly the scopes the spec gives it (decision 0111).
 *
 * The spec's tables are parsed at test time, from the shared spec beside the repo:
 * - api-concepts.md "### Scopes": the scope names; the channel row ("send and manage messages ...
 *   on those channels (email: drafts, threads, labels, search)"); `X:read` rows that are a
 *   "read-only subset of `X`"; rows whose grant lists plain route words ("timeseries, breakdowns").
 * - api-endpoints.md tables: a row's Scope (or Tier) cell; a scope alone in parentheses in another
 *   cell ("(chat_app_a)", "(`tracking:write`)", "(scope `profiles:write`)") or opening it
 *   ("`creatives:write`; ..."); a scope in the section heading ("Ad actions (`campaigns:apply`, ...)");
 *   a section's "All need `a` or `b`" (each operation needs one of them); a row whose body starts
 *   with `channel` needs the named channel's scope.
 * - routes.tsv, only where no markdown rule speaks: its scope column on rows that are the spec's
 *   own or whose scope the spec names (inbox, email, calendar, commerce, exports, reports).
 * Each is compared with the published `x-scopes` / `x-scope-mode` / `x-scope-from` of
 * `/api/v1/openapi.json`, which must also be what the middleware enforces (the endpoint's `Policy`).
 * Then the one the issue was about runs through HTTP: a partner app's key holding only `email`
 * sends an email; without `email` it is 403 `insufficient_scope`.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Context, Effect } from "effect"
import { HttpApi } from "effect/http-api"
import { existsSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Api } from "../../src/main/api.ts"
import { Policy, PUBLIC } from "../../src/http/policy.ts"
import { call } from "../support/app.ts"
import { bearer, narrowKey } from "../support/channels.ts"
import { asApp, registerApp } from "../support/partner.ts"
import { runHandoff, serveAppOnOwnPort } from "../support/providers.ts"

const SPEC_DIR = fileURLToPath(new URL("../../../shared/spec/", import.meta.url))
const CONCEPTS = `${SPEC_DIR}api-concepts.md`
const ENDPOINTS = `${SPEC_DIR}api-endpoints.md`
const ROUTES = `${SPEC_DIR}routes.tsv`
const specPresent = existsSync(CONCEPTS) && existsSync(ENDPOINTS)

// --- The spec's scope tables ------------------------------------------------------------------

/** What the spec asks of one operation. */
type Requirement =
  | { readonly kind: "exact"; readonly scopes: ReadonlyArray<string>; readonly mode: "all" | "any"; readonly from: string }
  /** "All need `a` or `b`": exactly one of them. */
  | { readonly kind: "oneOf"; readonly scopes: ReadonlyArray<string>; readonly from: string }
  /** The scope the body's `channel` names, one of these. */
  | { readonly kind: "perChannel"; readonly scopes: ReadonlyArray<string>; readonly from: string }
  | { readonly kind: "none"; readonly from: string }

interface SpecRule {
  readonly methods: ReadonlyArray<string> | "any"
  /** A path with its parameters as `{}`, or a prefix (`/api/v1/email/threads`) matching it and one parameter below. */
  readonly path: string
  readonly requirement: Requirement
}

interface ConceptScopes {
  readonly known: ReadonlySet<string>
  readonly channels: ReadonlyArray<string>
  /** `chat_app_a:read` -> `chat_app_a`: a read-only subset the service may accept beside it on reads. */
  readonly readSubsetOf: ReadonlyMap<string, string>
  readonly wordRules: ReadonlyArray<SpecRule>
}

const cells = (line: string) => line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((cell) => cell.trim())
const ticked = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? "")
const norm = (path: string) => path.replace(/\{[^}]*\}/g, "{}").replace(/:[A-Za-z_]+/g, "{}")

const parseConcepts = (text: string): ConceptScopes => {
  const section = text.slice(text.indexOf("### Scopes"), text.indexOf("Default scopes of a new key"))
  const rows = section.split("\n").filter((line) => line.startsWith("| `")).map(cells)
  const known = new Set(rows.flatMap(([names = ""]) => ticked(names)))
  let channels: ReadonlyArray<string> = []
  const readSubsetOf = new Map<string, string>()
  const wordRules: Array<SpecRule> = []
  for (const [names = "", grants = ""] of rows) {
    const scopes = ticked(names)
    if (/send and manage messages/.test(grants)) channels = scopes
    const subset = /read-only subset of `([^`]+)`/.exec(grants)
    if (subset !== null && scopes.length === 1) readSubsetOf.set(scopes[0] ?? "", subset[1] ?? "")
    // "(email: drafts, threads, labels, search)": routes under /api/v1/email/ of that scope.
    for (const m of grants.matchAll(/\(([a-z_]+): ([a-z, ]+)\)/g)) {
      const owner = m[1] ?? ""
      if (!scopes.includes(owner)) continue
      for (const word of (m[2] ?? "").split(",").map((w) => w.trim())) {
        wordRules.push({ methods: "any", path: `/api/v1/${owner}/${word}`, requirement: { kind: "exact", scopes: [owner], mode: "all", from: `concepts: ${owner} (${word})` } })
      }
    }
    // A one-scope row listing plain words ("aggregated analytics, timeseries, breakdowns, ..."): /api/v1/<word>.
    if (scopes.length === 1) {
      for (const item of grants.replace(/\([^)]*\)/g, "").split(/[,;]/).map((w) => w.trim())) {
        if (/^[a-z]+$/.test(item) && !known.has(item)) {
          wordRules.push({ methods: ["GET"], path: `/api/v1/${item}`, requirement: { kind: "exact", scopes, mode: "all", from: `concepts: ${scopes[0]} (${item})` } })
        }
      }
    }
  }
  return { known, channels, readSubsetOf, wordRules }
}

/** The scopes named in a Scope or Tier cell: `a`, `a` or `b`, (`a`), `a`, entitlement-gated. */
const scopeCell = (cell: string, known: ReadonlySet<string>): Requirement | undefined => {
  if (cell === "none") return { kind: "none", from: "Scope: none" }
  const named = [...cell.matchAll(/[a-z_.]+(?::[a-z_]+)?/g)].map((m) => m[0]).filter((token) => known.has(token))
  if (named.length === 0) return undefined
  return { kind: "exact", scopes: named, mode: / or /.test(cell) ? "any" : "all", from: `Scope cell "${cell}"` }
}

/** A scope standing alone in parentheses, or opening the cell. */
const scopeInProse = (cell: string, known: ReadonlySet<string>): Requirement | undefined => {
  for (const m of cell.matchAll(/\((?:scope )?`?([a-z_.:]+)`?\)/g)) {
    const scope = m[1] ?? ""
    if (known.has(scope)) return { kind: "exact", scopes: [scope], mode: "all", from: `"${m[0]}"` }
  }
  const opening = /^`([a-z_.:]+)`;/.exec(cell)
  if (opening !== null && known.has(opening[1] ?? "")) return { kind: "exact", scopes: [opening[1] ?? ""], mode: "all", from: `"${opening[0]}"` }
  return undefined
}

const parseEndpoints = (text: string, concepts: ConceptScopes): ReadonlyArray<SpecRule> => {
  const rules: Array<SpecRule> = []
  let heading = ""
  let sectionAll: ReadonlyArray<string> = []
  let header: ReadonlyArray<string> = []
  for (const line of text.split("\n")) {
    if (line.startsWith("## ")) {
      heading = ""
      sectionAll = []
      header = []
      continue
    }
    if (line.startsWith("### ")) {
      heading = line
      sectionAll = []
      header = []
      continue
    }
    const all = /^All need (.*?)(?: and,|\.|$)/.exec(line)
    if (all !== null) sectionAll = ticked(all[1] ?? "").filter((s) => concepts.known.has(s))
    if (!line.startsWith("|")) continue
    const row = cells(line)
    if (row[0] === "Method") {
      header = row
      continue
    }
    if (row.every((cell) => /^-*$/.test(cell)) || header.length === 0) continue
    const at = (name: string) => (header.includes(name) ? row[header.indexOf(name)] ?? "" : "")
    const methodCell = at("Method")
    const methods = methodCell === "any" ? "any" : methodCell.split(/[/,]/).map((m) => m.trim().toUpperCase()).filter((m) => m !== "")
    const pathCell = at("Path")
    const paths = ticked(pathCell.replace(/\(with .*\)/, ""))
      .filter((p) => p.startsWith("/") && !p.endsWith("..."))
      .flatMap((p) => (/\[(.*)\]$/.test(p) ? [p.replace(/\[.*\]$/, ""), p.replace(/\[(.*)\]$/, "$1")] : [p]))
    if (paths.length === 0) continue
    const others = header.filter((name) => !["Method", "Path", "Scope", "Tier"].includes(name)).map(at)
    const headingScopes = ticked(heading).filter((s) => concepts.known.has(s))
    const requirement: Requirement | undefined =
      scopeCell(at("Scope"), concepts.known) ??
        scopeCell(at("Tier"), concepts.known) ??
        (sectionAll.length > 0 ? { kind: "oneOf", scopes: sectionAll, from: `section "All need ${sectionAll.join(" or ")}"` } : undefined) ??
        (headingScopes.length === 1 ? { kind: "exact", scopes: headingScopes, mode: "all", from: `heading ${heading}` } : undefined) ??
        (others.some((cell) => cell.startsWith("`channel`"))
          ? { kind: "perChannel", scopes: concepts.channels, from: "body `channel` + concepts channel row" }
          : undefined) ??
        others.map((cell) => scopeInProse(cell, concepts.known)).find((r) => r !== undefined)
    if (requirement === undefined) continue
    for (const path of paths) rules.push({ methods, path: norm(path), requirement })
  }
  return rules
}

/**
 * routes.tsv beside the markdown: its scope column where the row is the spec's own or its scope is
 * named in the spec (origin `spec`, `designed (scope named in the spec...)`, `designed (named in
 * the spec...)`); rows whose path alone was designed around a scope the service picked are left out.
 */
const parseRoutes = (text: string, known: ReadonlySet<string>): ReadonlyArray<SpecRule> =>
  text.split("\n").slice(1).flatMap((line) => {
    const [, method = "", path = "", scope = "", origin = ""] = line.split("\t")
    if (!/^(spec$|designed \((scope )?named in the spec)/.test(origin)) return []
    const requirement = scopeCell(scope, known)
    if (requirement === undefined || requirement.kind === "none") return []
    return [{ methods: [method], path: norm(path), requirement: { ...requirement, from: `routes.tsv "${scope}" (${origin})` } }]
  })

// --- The published description ----------------------------------------------------------------

interface Published {
  readonly method: string
  readonly path: string
  readonly scopes: ReadonlyArray<string>
  readonly mode: "all" | "any"
  readonly from: string | undefined
  readonly auth: ReadonlyArray<string>
}

/** Credential kinds that carry scopes; an operation taking none of them has no scope to compare. */
const SCOPED_KINDS = ["api_key", "user_token", "session"]

const ruleMatches = (rule: SpecRule, op: Published) => {
  if (rule.methods !== "any" && !rule.methods.includes(op.method)) return false
  const path = norm(op.path)
  return path === rule.path || (rule.requirement.from.startsWith("concepts") && path === `${rule.path}/{}`)
}

const sameSet = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((x) => b.includes(x))

/** Why `op` does not meet `requirement`, or undefined. */
const mismatch = (requirement: Requirement, op: Published, concepts: ConceptScopes): string | undefined => {
  const shown = `${op.scopes.join(op.mode === "any" ? " or " : ", ") || "(none)"}${op.from === undefined ? "" : ` from ${op.from}`}`
  switch (requirement.kind) {
    case "none":
      return op.scopes.length === 0 ? undefined : `needs ${shown}; the spec gives none`
    case "oneOf":
      return op.scopes.length === 1 && requirement.scopes.includes(op.scopes[0] ?? "")
        ? undefined
        : `needs ${shown}; the spec gives one of ${requirement.scopes.join(", ")}`
    case "perChannel":
      return sameSet(op.scopes, requirement.scopes) && op.mode === "any" && op.from === "body.channel"
        ? undefined
        : `needs ${shown}; the spec gives the body channel's own scope (${requirement.scopes.join(", ")})`
    case "exact": {
      // On a read the service may also accept the spec's read-only subset of the named scope.
      const subsets = op.method === "GET"
        ? [...concepts.readSubsetOf].filter(([, of]) => requirement.scopes.includes(of)).map(([sub]) => sub)
        : []
      const core = op.scopes.filter((s) => !subsets.includes(s))
      const extra = op.scopes.length - core.length
      const modeOk = requirement.scopes.length === 1 && extra === 0 ? true : extra > 0 ? op.mode === "any" : op.mode === requirement.mode
      const missing = requirement.scopes.filter((s) => !core.includes(s))
      const unasked = core.filter((s) => !requirement.scopes.includes(s))
      if (missing.length === 0 && unasked.length === 0 && modeOk && op.from === undefined) return undefined
      return `needs ${shown}; the spec gives ${requirement.scopes.join(requirement.mode === "any" ? " or " : ", ")}` +
        (missing.length > 0 ? ` (not accepted: ${missing.join(", ")})` : "") +
        (unasked.length > 0 ? ` (not given by the spec: ${unasked.join(", ")})` : "")
    }
  }
}

layer(serveAppOnOwnPort(), { timeout: "120 seconds", excludeTestServices: true })("scopes as the spec names them", (it) => {
  describe("the sweep", () => {
    if (!specPresent) {
      // The spec lives beside the repo (../shared/spec); a checkout without it cannot run the sweep.
      console.error(`SCOPES SWEEP SKIPPED: the spec is not at ${SPEC_DIR} (api-concepts.md, api-endpoints.md)`)
      it.skip(`needs the spec at ${SPEC_DIR}`, () => {})
      return
    }

    it.effect("every operation needs exactly the scopes the spec gives it, and the service accepts every scope the spec names", () =>
      Effect.gen(function*() {
        const concepts = parseConcepts(readFileSync(CONCEPTS, "utf8"))
        // The parse found the tables (a renamed heading would otherwise sweep nothing).
        assert.isAtLeast(concepts.known.size, 30)
        assert.deepStrictEqual([...concepts.channels].sort(), ["chat_app_a", "email", "page_messenger", "short_video_messaging", "social_dm"])
        assert.strictEqual(concepts.readSubsetOf.get("chat_app_a:read"), "chat_app_a")
        const rules = [...parseEndpoints(readFileSync(ENDPOINTS, "utf8"), concepts), ...concepts.wordRules]
        assert.isAtLeast(rules.length, 60)
        const routeRules = existsSync(ROUTES) ? parseRoutes(readFileSync(ROUTES, "utf8"), concepts.known) : []

        const response = yield* call("/api/v1/openapi.json")
        assert.strictEqual(response.status, 200)
        const ops: Array<Published> = []
        for (const [path, item] of Object.entries<Record<string, any>>(response.json.paths)) {
          for (const [method, op] of Object.entries<any>(item)) {
            ops.push({
              method: method.toUpperCase(),
              path,
              scopes: op["x-scopes"] ?? [],
              mode: op["x-scope-mode"] === "any" ? "any" : "all",
              from: typeof op["x-scope-from"] === "string" ? op["x-scope-from"] : undefined,
              auth: op["x-auth"] ?? []
            })
          }
        }

        const failures: Array<string> = []
        const covered: Array<string> = []
        const unscoped: Array<string> = []
        for (const op of ops) {
          // Endpoint-table rows first; the concepts' route words only where no row speaks.
          const rule = rules.find((r) => !r.requirement.from.startsWith("concepts") && ruleMatches(r, op)) ??
            rules.find((r) => ruleMatches(r, op)) ?? routeRules.find((r) => ruleMatches(r, op))
          if (rule === undefined) continue
          const where = `${op.method} ${op.path}`
          if (!op.auth.some((kind) => SCOPED_KINDS.includes(kind))) {
            unscoped.push(`${where} (x-auth ${op.auth.join("/") || "public"}; spec: ${rule.requirement.from})`)
            continue
          }
          covered.push(where)
          const wrong = mismatch(rule.requirement, op, concepts)
          if (wrong !== undefined) failures.push(`${where} ${wrong} [spec: ${rule.requirement.from}]`)
        }
        // Spec rows naming a scope for a path the service does not publish.
        const unmatched = rules.filter((r) => !r.requirement.from.startsWith("concepts") && !ops.some((op) => ruleMatches(r, op)))
        console.log(
          `scopes sweep: ${covered.length} operations covered of ${ops.length} published; ` +
            `${unscoped.length} take no scoped credential: ${unscoped.join("; ") || "none"}; ` +
            `spec rows with no published operation: ${unmatched.map((r) => `${r.methods === "any" ? "any" : r.methods.join("/")} ${r.path}`).join(", ") || "none"}`
        )
        assert.deepStrictEqual(failures, [])
        assert.isAtLeast(covered.length, 100)
      }))

    it.effect("what is published is what the middleware enforces: each endpoint's Policy against its x-scopes", () =>
      Effect.gen(function*() {
        const response = yield* call("/api/v1/openapi.json")
        const disagreements: Array<string> = []
        let compared = 0
        HttpApi.reflect(Api, {
          onGroup: () => {},
          onEndpoint: ({ endpoint }) => {
            const enforced = Context.getOrElse(endpoint.annotations, Policy, () => PUBLIC)
            const path = endpoint.path.replace(/:([A-Za-z_]+)/g, "{$1}")
            const op = response.json.paths[path]?.[endpoint.method.toLowerCase()]
            if (op === undefined) return
            compared++
            // Scopes only: a few routes (the OAuth token endpoint) check their credential in the handler.
            const published = { scopes: op["x-scopes"] ?? [], mode: op["x-scope-mode"] ?? "all", from: op["x-scope-from"] ?? null }
            const policy = {
              scopes: [...enforced.scopes],
              mode: enforced.scopeMode ?? "all",
              from: enforced.scopeFrom === undefined ? null : `body.${enforced.scopeFrom}`
            }
            if (JSON.stringify(published) !== JSON.stringify(policy)) {
              disagreements.push(`${endpoint.method} ${path}: published ${JSON.stringify(published)}, enforced ${JSON.stringify(policy)}`)
            }
          }
        })
        assert.isAtLeast(compared, 200)
        assert.deepStrictEqual(disagreements, [])
      }))
  })

  describe("an email through a partner app's key", () => {
    it.effect("a key holding only `email` sends; without it, 403 insufficient_scope and nothing is sent", () =>
      Effect.gen(function*() {
        const app = yield* registerApp("Mail partner")
        const provisioned = yield* asApp(app, "/api/v1/profiles", "POST", {
          external_ref: `merchant-${crypto.randomUUID().slice(0, 8)}`,
          email: "owner@shop.example",
          scopes: ["connections", "email"]
        })
        assert.strictEqual(provisioned.status, 201, provisioned.text)
        const profileId: string = provisioned.json.data.profile_id
        const token = (scope?: string) =>
          call("/oauth/token", {
            method: "POST",
            headers: { authorization: app.basic, "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({ grant_type: "client_credentials", profile_id: profileId, ...(scope === undefined ? {} : { scope }) }).toString()
          })
        // The whole grant: the connect rail and the channel scope; the rail connects the mailbox.
        const whole = yield* token()
        assert.strictEqual(whole.status, 200, whole.text)
        assert.deepStrictEqual(String(whole.json.scope).split(" ").sort(), ["connections:read", "connections:write", "email"])
        // The app's keys return only to its registered origins.
        const run = yield* runHandoff(String(whole.json.access_token), "email", { returnUrl: "https://partner.example/done" })
        assert.strictEqual(new URL(run.callback.location ?? "http://invalid/").searchParams.get("status"), "success", run.callback.text)

        const to = `ana-${crypto.randomUUID().slice(0, 8)}@customer.example`
        const message = { channel: "email", to, subject: "Your order", text: "It shipped" }
        const onlyEmail = yield* token("email")
        assert.strictEqual(onlyEmail.status, 200, onlyEmail.text)
        assert.strictEqual(onlyEmail.json.scope, "email")
        const sent = yield* call("/api/v1/messages", bearer(String(onlyEmail.json.access_token), "POST", message))
        assert.strictEqual(sent.status, 201, sent.text)
        assert.strictEqual(sent.json.data.channel, "email")
        assert.isString(sent.json.data.rfc822_message_id)

        // The same app's key without `email`, and a key with the inbox's scopes: refused before any send.
        const rail = yield* token("connections:read connections:write")
        assert.strictEqual(rail.status, 200, rail.text)
        const inbox = yield* narrowKey({ profileId, workspaceId: provisioned.json.data.workspace_id }, ["conversations:read", "conversations:write"])
        for (const key of [String(rail.json.access_token), inbox]) {
          const refused = yield* call("/api/v1/messages", bearer(key, "POST", { ...message, subject: "Refused" }))
          assert.strictEqual(refused.status, 403, refused.text)
          assert.strictEqual(refused.json.error.code, "insufficient_scope")
          assert.include(refused.json.error.message, "email")
        }
        // `email` does not send on another channel.
        const otherChannel = yield* call("/api/v1/messages", bearer(String(onlyEmail.json.access_token), "POST", { channel: "chat_app_a", to: "p1", text: "x" }))
        assert.strictEqual(otherChannel.status, 403, otherChannel.text)
        assert.strictEqual(otherChannel.json.error.reason, "missing_scope:chat_app_a")

        const mailbox = yield* call("/sandbox/email/_state", { headers: { authorization: `Bearer ${String(onlyEmail.json.access_token)}` } })
        assert.strictEqual(mailbox.status, 200, mailbox.text)
        const outbound = (mailbox.json.messages as ReadonlyArray<{ direction: string; subject: string; to: ReadonlyArray<string> }>)
          .filter((m) => m.direction === "outbound" && m.to.includes(to))
        assert.deepStrictEqual(outbound.map((m) => m.subject), ["Your order"])
      }))
  })
})
