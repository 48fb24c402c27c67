/**
 * Operator CLI: `npm run cli -- <command>`. Later domains add their operator commands to
 * `commands` (one `Command` each); every command gets the same configuration and database.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Console, Data, Effect, FileSystem, Layer, Option, Redacted, Schema } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { CreateOAuthApp } from "../../schema/admin.ts"
import { AdminService } from "../accounts/admin/service.ts"
import { AnalyticsImports, parseFxCsv, parseSpendCsv } from "../analytics/imports/service.ts"
import { AnalyticsRollupSettings, AnalyticsRollups, defaultRollupSettings } from "../analytics/rollups/repo.ts"
import { CredentialStoreLayer } from "../accounts/credentials/service.ts"
import { Quickstart } from "../ops/onboarding/service.ts"
import { People } from "../accounts/people/service.ts"
import { PasswordLink, QuickstartBundle as QuickstartBundleSchema, type QuickstartBundle } from "../../schema/people.ts"
import { AppConfig } from "../platform/config.ts"
import { DataDirLocked, type LockContents, readHolder } from "../platform/data-dir-lock.ts"
import { CliDatabaseLayer as DatabaseLayer, DatabaseInfo } from "../platform/database.ts"
import { RateLimiterLayer } from "../platform/rate-limit.ts"
import { appliedMigrationId, latestMigrationId, migrate } from "../platform/migrator.ts"
import { SecretBox } from "../platform/secret-box.ts"
import { RpcCredentials } from "../rpc/credentials/service.ts"
import { PARTITIONED_TABLES } from "../ops/partitions/registry.ts"
import { prepareMonthlyPartitions } from "../../migrations/support/monthly-partitions.ts"
import { SPLIT_MONTHS, splitLegacy } from "../../migrations/support/split-legacy.ts"
import { COPIED_COLUMNS, prepareCopiedColumn } from "../../migrations/support/copied-column.ts"
import { OUTCOME_KEYS, prepareOutcomeKeys } from "../../migrations/support/outcome-keys.ts"
import { ProfilePortsLayer } from "./ports.ts"
import { settingsOrExit } from "../platform/startup.ts"
import { VERSION } from "../platform/version.ts"

const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

/** A command that will not run, with why and what to do instead (one line, exit code 1). */
class CliRefusal extends Data.TaggedError("CliRefusal")<{ readonly message: string }> {}

/** The running service that holds the embedded database, reached over loopback (decision 0052). */
interface RunningService {
  readonly holder: LockContents
  readonly call: (method: string, path: string, body?: unknown) => Effect.Effect<unknown, CliRefusal>
}

const loopbackHost = (host: string | null) =>
  host === null || host === "0.0.0.0" || host === "::" || host === "localhost" ? "127.0.0.1" : host === "::1" ? "[::1]" : host

const runningService = (holder: LockContents, token: Redacted.Redacted<string>): RunningService => ({
  holder,
  call: (method, path, body) =>
    Effect.gen(function*() {
      const url = `http://${loopbackHost(holder.host)}:${holder.port}${path}`
      const response = yield* Effect.tryPromise({
        try: () =>
          fetch(url, {
            method,
            headers: { authorization: `Bearer ${Redacted.value(token)}`, "content-type": "application/json" },
            ...(body === undefined ? {} : { body: JSON.stringify(body) }),
            signal: AbortSignal.timeout(60_000)
          }),
        catch: (error) =>
          new CliRefusal({ message: `the service (pid ${holder.pid}) holds the embedded database but did not answer at ${url}: ${String(error)}` })
      })
      const text = yield* Effect.promise(() => response.text())
      const parsed = yield* Effect.sync((): unknown => {
        try {
          return JSON.parse(text)
        } catch {
          return text
        }
      })
      if (!response.ok) {
        const error = typeof parsed === "object" && parsed !== null && "error" in parsed ? parsed.error : undefined
        const described = typeof error === "object" && error !== null && "code" in error && "message" in error
          ? `${String(error.code)}: ${String(error.message)}`
          : text.slice(0, 200)
        return yield* new CliRefusal({ message: `the service answered ${response.status} ${described}` })
      }
      return parsed
    })
})

/**
 * Runs `local` on the database in-process, unless another live process holds the embedded one:
 * then `remote` goes through the running service, or the command refuses (decision 0052).
 */
const dispatch = <E, R>(
  name: string,
  local: Effect.Effect<void, E, R>,
  remote?: (service: RunningService) => Effect.Effect<void, CliRefusal>
) =>
  Effect.gen(function*() {
    const settings = yield* AppConfig
    if (Option.isSome(settings.databaseUrl)) return yield* local
    const holder = readHolder(settings.dataDir)
    if (Option.isNone(holder)) return yield* local
    const held = holder.value
    if (held.kind === "service" && held.port !== null && remote !== undefined) {
      return yield* remote(runningService(held, Redacted.make(held.token)))
    }
    const why = new DataDirLocked({ dataDir: settings.dataDir, holder: held }).message
    return yield* new CliRefusal({
      message: held.kind === "service" && held.port === null
        ? `${name}: the service (pid ${held.pid}) is starting on ${settings.dataDir}; retry in a few seconds`
        : remote === undefined && held.kind === "service"
        ? `${name} needs the embedded database to itself, and ${why}`
        : `${name}: ${why}`
    })
  })

/** Opens the database only for the commands that need it (not for --help). */
const withDatabase = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, DatabaseLayer)

const migrateCommand = Command.make("migrate", {}, () =>
  dispatch("migrate", withDatabase(Effect.gen(function*() {
    const applied = yield* migrate
    yield* printJson({
      applied: applied.map(([id, name]) => `${String(id).padStart(4, "0")}_${name}`),
      latest: latestMigrationId
    })
  })), (service) =>
    // The running service applied every migration it knows when it started.
    Effect.flatMap(service.call("GET", "/api/v1/admin/status"), (status) =>
      printJson({ applied: [], latest: latestMigrationId, applied_by: `the running service (pid ${service.holder.pid})`, status })))).pipe(Command.withDescription("Apply pending database migrations and exit."))

const statusCommand = Command.make("status", {}, () =>
  dispatch("status", withDatabase(Effect.gen(function*() {
    const info = yield* DatabaseInfo
    const applied = yield* appliedMigrationId
    yield* printJson({
      version: VERSION,
      database: { mode: info.mode, location: info.location },
      migrations: { applied, latest: latestMigrationId, pending: Math.max(0, latestMigrationId - applied) }
    })
  })), (service) =>
    Effect.flatMap(service.call("GET", "/api/v1/admin/status"), (status) =>
      printJson({ served_by: { pid: service.holder.pid, port: service.holder.port }, ...(typeof status === "object" && status !== null && "data" in status && typeof status.data === "object" ? status.data : {}) })))).pipe(Command.withDescription("Show the version, the database in use and the migration state."))

/** Operator commands run with the schema current (pending migrations are applied first). */
const withAdmin = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provide(
    Effect.andThen(migrate, effect),
    AdminService.layer.pipe(
      // The credential cache a revocation clears is this process's own: harmless here.
      Layer.provideMerge(Layer.merge(SecretBox.layer, CredentialStoreLayer)),
      Layer.provideMerge(DatabaseLayer)
    )
  )

const operator = { kind: "operator" } as const

const oauthAppsCreate = Command.make("create", {
  name: Flag.String("name").pipe(Flag.withDescription("Display name of the app")),
  redirectUris: Flag.String("redirect-uri").pipe(Flag.atLeast(1), Flag.withDescription("Registered redirect URI (repeat)")),
  returnOrigins: Flag.String("allowed-return-origin").pipe(Flag.atLeast(0), Flag.withDescription("Extra hand-off return origin (repeat)")),
  profileResolution: Flag.Literals("profile-resolution", ["email", "external_ref"]).pipe(Flag.optional),
  rateTier: Flag.Literals("rate-tier", ["standard", "elevated", "internal"]).pipe(Flag.optional),
  ownerWorkspaceId: Flag.String("owner-workspace-id").pipe(Flag.optional)
}, (flags) => {
  const body = {
    name: flags.name,
    redirect_uris: flags.redirectUris,
    allowed_return_origins: flags.returnOrigins,
    ...Option.match(flags.profileResolution, { onNone: () => ({}), onSome: (value) => ({ profile_resolution: value }) }),
    ...Option.match(flags.rateTier, { onNone: () => ({}), onSome: (value) => ({ rate_tier: value }) }),
    ...Option.match(flags.ownerWorkspaceId, { onNone: () => ({}), onSome: (value) => ({ owner_workspace_id: value }) })
  }
  return dispatch("oauth-apps create", withAdmin(Effect.gen(function*() {
    const input = yield* Schema.decodeUnknownEffect(CreateOAuthApp)(body)
    const admin = yield* AdminService
    yield* printJson({ data: yield* admin.createApp(operator, input) })
  })), (service) => Effect.flatMap(service.call("POST", "/api/v1/admin/oauth-apps", body), printJson))
}).pipe(Command.withDescription("Register an OAuth app; prints its client secret and JWT secret once."))

const oauthAppsList = Command.make("list", {}, () =>
  dispatch("oauth-apps list", withAdmin(Effect.gen(function*() {
    const admin = yield* AdminService
    yield* printJson(yield* admin.listApps({ limit: 100 }))
  })), (service) => Effect.flatMap(service.call("GET", "/api/v1/admin/oauth-apps?limit=100"), printJson))).pipe(Command.withDescription("List OAuth apps (never their secrets)."))

const oauthAppsCommand = Command.make("oauth-apps").pipe(
  Command.withDescription("Partner OAuth apps: the operator surface of /api/v1/admin/oauth-apps."),
  Command.withSubcommands([oauthAppsCreate, oauthAppsList])
)

const workspacesSetHealthcareAgency = Command.make("set-healthcare-agency", {
  workspaceId: Argument.String("workspace-id").pipe(Argument.withDescription("The workspace's id")),
  value: Argument.Literals("value", ["true", "false"]).pipe(Argument.withDescription("true or false"))
}, ({ workspaceId, value }) =>
  dispatch("workspaces set-healthcare-agency", withAdmin(Effect.gen(function*() {
    const admin = yield* AdminService
    yield* printJson({ data: yield* admin.setHealthcareAgency(operator, workspaceId, value === "true") })
  })), (service) =>
    Effect.flatMap(
      service.call("PATCH", `/api/v1/admin/workspaces/${encodeURIComponent(workspaceId)}`, { is_healthcare_agency: value === "true" }),
      printJson
    ))).pipe(Command.withDescription(
    "Set a workspace's is_healthcare_agency flag (S5.3); turning it on revokes delegated keys with person scopes."
  ))

const workspacesCommand = Command.make("workspaces").pipe(
  Command.withDescription("Workspaces: the operator surface of /api/v1/admin/workspaces."),
  Command.withSubcommands([workspacesSetHealthcareAgency])
)

/** Analytics inputs and rollups (decision 0041): the internal write path of spend and FX rates. */
const withAnalytics = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provide(
    Effect.andThen(migrate, effect),
    Layer.merge(AnalyticsImports.layer, AnalyticsRollups.layer).pipe(
      // No background fiber in a one-shot command: `rebuild` drains by itself.
      Layer.provide(Layer.succeed(AnalyticsRollupSettings)({ ...defaultRollupSettings, enabled: false })),
      Layer.provideMerge(DatabaseLayer)
    )
  )

const readCsv = (path: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFileString(path))

const spendImport = Command.make("import", {
  file: Argument.String("file").pipe(Argument.withDescription("CSV: profile_id,platform,day,campaign_id,ad_set_id,ad_id,currency,amount"))
}, ({ file }) =>
  dispatch("spend import", withAnalytics(Effect.gen(function*() {
    const rows = yield* Effect.fromResult(parseSpendCsv(yield* readCsv(file)))
    const imports = yield* AnalyticsImports
    yield* printJson({ data: { rows: yield* imports.upsertSpend(rows) } })
  })))).pipe(Command.withDescription("Import ad spend per ad and day (idempotent: a row per profile, platform, day and ad)."))

const spendCommand = Command.make("spend").pipe(
  Command.withDescription("Ad spend: the internal import path until the ad-platform sync supplies it."),
  Command.withSubcommands([spendImport])
)

const fxImport = Command.make("import", {
  file: Argument.String("file").pipe(Argument.withDescription("The ECB reference rates CSV (Date,USD,...) or day,base,quote,rate")),
  source: Flag.String("source").pipe(Flag.withDefault("ecb"), Flag.withDescription("Where the rates come from"))
}, ({ file, source }) =>
  dispatch("fx import", withAnalytics(Effect.gen(function*() {
    const rows = yield* Effect.fromResult(parseFxCsv(yield* readCsv(file)))
    const imports = yield* AnalyticsImports
    yield* printJson({ data: { rates: yield* imports.upsertFxRates(rows, source) } })
  })))).pipe(Command.withDescription("Import daily FX rates (idempotent: a rate per base, quote and day)."))

const fxCommand = Command.make("fx").pipe(
  Command.withDescription("The stored daily FX table analytics convert amounts with."),
  Command.withSubcommands([fxImport])
)

const analyticsRebuild = Command.make("rebuild", {
  profileId: Flag.String("profile-id").pipe(Flag.optional, Flag.withDescription("Only this profile (default: every profile)"))
}, ({ profileId }) =>
  dispatch("analytics rebuild", withAnalytics(Effect.gen(function*() {
    const rollups = yield* AnalyticsRollups
    yield* printJson({ data: yield* rollups.rebuild(Option.getOrNull(profileId)) })
  })))).pipe(Command.withDescription("Recompute the analytics rollups from the raw tables."))

const analyticsCommand = Command.make("analytics").pipe(
  Command.withDescription("Analytics rollups."),
  Command.withSubcommands([analyticsRebuild])
)

/** What quickstart and the people commands need in-process (decision 0053). */
const withPeople = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provide(
    Effect.andThen(migrate, effect),
    Layer.merge(Quickstart.layer, People.layer).pipe(
      // Provisioning's tracking key and archiving reach above accounts (./ports.ts).
      Layer.provide(ProfilePortsLayer),
      Layer.provideMerge(Layer.mergeAll(SecretBox.layer, CredentialStoreLayer, RateLimiterLayer)),
      Layer.provideMerge(DatabaseLayer)
    )
  )

/** The running service's `{data}` answer, decoded with the published schema. */
const dataOf = <A>(schema: Schema.Codec<A, unknown>) => (answer: unknown) =>
  Effect.mapError(
    Schema.decodeUnknownEffect(schema)(typeof answer === "object" && answer !== null && "data" in answer ? answer.data : answer),
    (error) => new CliRefusal({ message: `the service's answer did not decode: ${error.message}` })
  )

/** The collector drops bots, curl included: the first command speaks as a browser. */
const BROWSER_UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0 Safari/537.36"

/** The quickstart's human answer: the secrets once, the tracker tag, and three commands that work as pasted. */
const quickstartText = (bundle: QuickstartBundle, where: string) => {
  const base = bundle.base_url
  const origin = new URL(base).origin
  const key = bundle.api_key
  const visitor = "qs_visitor_1"
  const pageView = JSON.stringify({
    tracking_key: bundle.tracking_key,
    anonymous_id: visitor,
    type: "page_view",
    url: `${base}/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=quickstart`
  })
  const payment = JSON.stringify({
    event_name: "purchase",
    properties: { value: "49.00", currency: "USD" },
    user_traits: { external_id: "qs_customer_1", anonymous_id: visitor }
  })
  const made = (created: boolean) => created ? "created" : "reused"
  return `Quickstart ready on ${base} (${where}).

  Person      ${bundle.person_email} (${made(bundle.created.person)})
  Sign in     ${bundle.sign_in_url}
              one-time link: open it to choose a password
  Workspace   ${bundle.workspace_id} (${made(bundle.created.workspace)})
  Profile     ${bundle.profile_id} (${made(bundle.created.profile)}; attribution on)
  Conversion  purchase (${made(bundle.created.definition)}; the profile's default definition)
  API key     ${key}
              new on every run and shown only now; earlier keys stay valid until revoked
              scopes: ${bundle.api_key_scopes.join(" ")}
  Tracking    ${bundle.tracking_key} (public; allowed origins: ${bundle.allowed_origins.join(" ")})

The tracker tag for your pages:
  <script src="${base}/t/tracker.js?key=${bundle.tracking_key}" async></script>

1. A page view with UTM tags, through the tracker's collector (answers 204):
  curl -s -X POST ${base}/t/collect -H 'Origin: ${origin}' -H 'User-Agent: ${BROWSER_UA}' -H 'Content-Type: application/json' -d '${pageView}'

2. A payment by the same visitor:
  curl -s -X POST ${base}/api/v1/events -H 'Authorization: Bearer ${key}' -H 'Content-Type: application/json' -d '${payment}'

3. The journey, and the overview (analytics catch up within a few seconds):
  curl -s '${base}/api/v1/customers/journey?customer_key=qs_customer_1' -H 'Authorization: Bearer ${key}'
  curl -s '${base}/api/v1/overview' -H 'Authorization: Bearer ${key}'
`
}

const quickstartCommand = Command.make("quickstart", {
  email: Flag.String("email").pipe(Flag.optional, Flag.withDescription("The person (default you@example.com)")),
  json: Flag.Boolean("json").pipe(Flag.withDefault(false), Flag.withDescription("Print {person_email, sign_in_url, workspace_id, profile_id, api_key, tracking_key}"))
}, ({ email, json }) => {
  const print = (bundle: QuickstartBundle, where: string) =>
    json
      ? printJson({
        person_email: bundle.person_email,
        sign_in_url: bundle.sign_in_url,
        workspace_id: bundle.workspace_id,
        profile_id: bundle.profile_id,
        api_key: bundle.api_key,
        tracking_key: bundle.tracking_key
      })
      : Console.log(quickstartText(bundle, where))
  return dispatch("quickstart", withPeople(Effect.gen(function*() {
    const quickstart = yield* Quickstart
    const info = yield* DatabaseInfo
    const bundle = yield* quickstart.run(operator, Option.getOrUndefined(email))
    yield* print(bundle, `${info.mode} database ${info.location}; start the service with npm start`)
  })), (service) =>
    Effect.flatMap(
      service.call("POST", "/api/v1/admin/quickstart", Option.match(email, { onNone: () => ({}), onSome: (value) => ({ email: value }) })),
      (answer) =>
        Effect.flatMap(
          dataOf(QuickstartBundleSchema)(answer),
          (bundle) => print(bundle, `through the running service, pid ${service.holder.pid}`)
        )
    ))
}).pipe(Command.withDescription(
  "A ready account: person, workspace, profile, tracking key, purchase definition and a new API key; prints three commands to try."
))

const passwordLinkCommand = (name: "invite" | "reset-password", purpose: "invite" | "reset") =>
  Command.make(name, {
    email: Flag.String("email").pipe(Flag.withDescription("The person's email"))
  }, ({ email }) =>
    dispatch(`people ${name}`, withPeople(Effect.gen(function*() {
      const people = yield* People
      yield* printJson({ data: yield* people.issueLink(operator, email, purpose) })
    })), (service) =>
      Effect.flatMap(service.call("POST", "/api/v1/admin/people/password-links", { email, purpose }), (answer) =>
        Effect.flatMap(dataOf(PasswordLink)(answer), (data) => printJson({ data }))))).pipe(Command.withDescription(
      purpose === "invite"
        ? "Create the person if needed and print a one-time link (7 days) that sets their password."
        : "Print a one-time link (1 hour) that sets a new password for an existing person."
    ))

const peopleCommand = Command.make("people").pipe(
  Command.withDescription("People who sign in: one-time set-password links (no email provider yet: hand the link over)."),
  Command.withSubcommands([passwordLinkCommand("invite", "invite"), passwordLinkCommand("reset-password", "reset")])
)

/** Internal-service credentials for /rpc (decision 0081): minted here, shown once, stored as digests. */
const withRpcCredentials = <A, E extends { readonly message: string }, R>(name: string, effect: Effect.Effect<A, E, R>) =>
  dispatch(
    `rpc-credentials ${name}`,
    Effect.provide(
      Effect.andThen(migrate, effect).pipe(
        // A refusal (unknown scope, no such credential) is one line, as every CLI refusal.
        Effect.mapError((error) => new CliRefusal({ message: `rpc-credentials ${name}: ${error.message}` }))
      ),
      RpcCredentials.layer.pipe(Layer.provideMerge(DatabaseLayer))
    )
  )

const rpcCredentialsCreate = Command.make("create", {
  name: Flag.String("name").pipe(Flag.withDescription("Which service holds it, e.g. billing-worker")),
  scopes: Flag.String("scope").pipe(Flag.atLeast(1), Flag.withDescription("A scope its calls may use (repeat)")),
  profiles: Flag.String("profile").pipe(Flag.atLeast(0), Flag.withDescription("A profile id its calls may name (repeat; none: every profile)")),
  rate: Flag.Int("rate-limit-per-minute").pipe(Flag.optional, Flag.withDescription("Calls per minute (default 6000)"))
}, (flags) =>
  withRpcCredentials("create", Effect.gen(function*() {
    const credentials = yield* RpcCredentials
    yield* printJson({
      data: yield* credentials.mint({
        name: flags.name,
        scopes: flags.scopes,
        profileIds: flags.profiles.length === 0 ? undefined : flags.profiles,
        rateLimitPerMinute: Option.getOrUndefined(flags.rate)
      })
    })
  }))).pipe(Command.withDescription("Mint an internal-service credential for /rpc; prints its secret once."))

const rpcCredentialsList = Command.make("list", {}, () =>
  withRpcCredentials("list", Effect.flatMap(RpcCredentials, (credentials) =>
    Effect.flatMap(credentials.list, (data) => printJson({ data }))))).pipe(
    Command.withDescription("List internal-service credentials (never their secrets).")
  )

const credentialId = Argument.String("credential-id").pipe(Argument.withDescription("The credential's id"))

const rpcCredentialsRotate = Command.make("rotate", { id: credentialId }, ({ id }) =>
  withRpcCredentials("rotate", Effect.flatMap(RpcCredentials, (credentials) =>
    Effect.flatMap(credentials.rotate(id), (data) => printJson({ data }))))).pipe(
    Command.withDescription("Mint a successor (secret shown once); the old credential stays valid 48 hours.")
  )

const rpcCredentialsRevoke = Command.make("revoke", { id: credentialId }, ({ id }) =>
  withRpcCredentials("revoke", Effect.flatMap(RpcCredentials, (credentials) =>
    Effect.flatMap(credentials.revoke(id), (data) => printJson({ data }))))).pipe(
    Command.withDescription("Revoke a credential now: its next call is refused with unauthorized.")
  )

/** The registry's entry for `table`, or the command's one-line refusal naming the tables kept in months. */
const partitionedTable = (command: string, table: string) => {
  const entry = PARTITIONED_TABLES.find((candidate) => candidate.table === table)
  return entry === undefined
    ? Effect.fail(
      new CliRefusal({
        message: `${command}: ${table} is not kept in monthly partitions (${PARTITIONED_TABLES.map((known) => known.table).join(", ")})`
      })
    )
    : Effect.succeed(entry)
}

const partitionsPrepare = Command.make("prepare", {
  table: Argument.String("table").pipe(Argument.withDescription("A table kept in monthly partitions whose conversion is pending (touches, outcome_events, conversions, attribution_credits)"))
}, ({ table }) =>
  Effect.gen(function*() {
    const settings = yield* AppConfig
    if (Option.isNone(settings.databaseUrl)) {
      return yield* new CliRefusal({
        message: "partitions prepare: the embedded database converts its tables when the service starts; there is nothing to prepare"
      })
    }
    const entry = yield* partitionedTable("partitions prepare", table)
    // No migration first: this runs before the migration that converts the table, while the old release serves.
    yield* withDatabase(Effect.gen(function*() {
      // Columns copied from a parent row are filled first (decisions 0145, 0148); each one already
      // complete (its migration has run) is passed over.
      const filled: Array<string> = []
      for (const copied of COPIED_COLUMNS) {
        if (copied.table === table && (yield* prepareCopiedColumn(copied))) filled.push(copied.column)
      }
      // Outcome events' keys move to a table of their own first (decision 0146).
      if (table === "outcome_events") yield* prepareOutcomeKeys(OUTCOME_KEYS)
      const bound = yield* prepareMonthlyPartitions(entry)
      yield* printJson(Option.match(bound, {
        onNone: () =>
          filled.length > 0
            ? { table, prepared: true, filled }
            : { table, prepared: false, reason: "already in monthly partitions" },
        onSome: (at) => ({ table, prepared: true, filled, bound: at, migrate_before: at })
      }))
    }))
  })).pipe(Command.withDescription(
    "Build a pending conversion's key and validate its bound while writes go on, so the migration holds its lock for milliseconds (decision 0143). Migrate before the printed bound: rows at or past it are refused until then."
  ))

const partitionsSplit = Command.make("split", {
  table: Argument.String("table").pipe(Argument.withDescription(`A table kept in monthly partitions (${PARTITIONED_TABLES.map((known) => known.table).join(", ")})`))
}, ({ table }) =>
  Effect.gen(function*() {
    const entry = yield* partitionedTable("partitions split", table)
    // The embedded database only while no service holds it (the split copies while that one would write).
    yield* dispatch("partitions split", withDatabase(Effect.andThen(migrate, Effect.flatMap(splitLegacy(entry, {
      inTransaction: false,
      // Minutes on a large table: each phase said on standard error, the result alone on standard output.
      progress: (line) => Console.error(`partitions split ${table}: ${line}`)
    }), (done) =>
      printJson(done.split
        ? { table, split: true, months: done.months, legacy_until: done.legacyUntil, locked_ms: done.lockedMs }
        : { table, split: false, reason: done.reason })))))
  })).pipe(Command.withDescription(
    `Split <table>_legacy (the rows a conversion found) into one partition per month, the last ${SPLIT_MONTHS} months of it at most, while writes go on; the table is locked only for the swap (decision 0147). Safe to run again.`
  ))

const partitionsCommand = Command.make("partitions").pipe(
  Command.withDescription("Monthly partitions (issue 35 part 3)."),
  Command.withSubcommands([partitionsPrepare, partitionsSplit])
)

const rpcCredentialsCommand = Command.make("rpc-credentials").pipe(
  Command.withDescription("Internal-service credentials for /rpc (decision 0081)."),
  Command.withSubcommands([rpcCredentialsCreate, rpcCredentialsList, rpcCredentialsRotate, rpcCredentialsRevoke])
)

export const commands = [migrateCommand, statusCommand, quickstartCommand, peopleCommand, oauthAppsCommand, workspacesCommand, spendCommand, fxCommand, analyticsCommand, partitionsCommand, rpcCredentialsCommand] as const

const cli = Command.make("svc").pipe(
  Command.withDescription("Attribution service operator commands."),
  Command.withSubcommands(commands)
)

const main = Effect.gen(function*() {
  const settings = yield* settingsOrExit
  yield* Command.run(cli, { version: VERSION }).pipe(
    // A refusal is one line and exit code 1, never a stack (decision 0052).
    Effect.catchIf(
      (error): error is CliRefusal | DataDirLocked => error instanceof CliRefusal || error instanceof DataDirLocked,
      (error) => Effect.andThen(Console.error(`svc: ${error.message}`), Effect.sync(() => {
        process.exitCode = 1
      }))
    ),
    Effect.provide(AppConfig.layerWith(settings))
  )
})

NodeRuntime.runMain(main.pipe(Effect.provide(NodeServices.layer)))
