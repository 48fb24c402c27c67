import { isIP } from "node:net"
import { Config, ConfigProvider, Context, Data, Effect, Layer, Option, Redacted } from "effect"

/**
 * Every setting the service reads from its environment. One place, read once at start-up;
 * README.md documents each variable.
 */
export interface AppSettings {
  readonly port: number
  readonly host: string
  readonly baseUrl: string
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  readonly dataDir: string
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  readonly rpcToken: Option.Option<Redacted.Redacted<string>>
  /**
   * Key for secrets stored encrypted (32 bytes, base64). Required on a production-shaped start;
   * unset otherwise: generated into the data directory (decision 0105).
   */
  readonly secretsKey: Option.Option<Redacted.Redacted<string>>
  /**
   * `DATABASE_URL` is set or `NODE_ENV=production` (decision 0105): the providers default to
   * `live` and `SVC_SECRETS_KEY` is required. False: the embedded database outside production.
   */
  readonly productionShaped: boolean
  readonly redisUrl: Option.Option<Redacted.Redacted<string>>
  /**
   * Secret that signs and encrypts customer link tokens (`SVC_LINK_TOKEN_SECRET`, at least 32
   * characters; decision 0037). Unset or absent: link tokens are off (503 `link_tokens_disabled`).
   */
  readonly linkTokenSecret?: Option.Option<Redacted.Redacted<string>>
  /**
   * Whether this process runs the durable queues' workers (`SVC_WORKERS`, `on` by default;
   * decision 0139). `off`: it serves requests and hosts its entities only, and other processes
   * sharing the database work the queues. Absent: on.
   */
  readonly workers?: boolean
  /** Largest accepted request body, in bytes (413 `payload_too_large` above it). */
  readonly maxBodyBytes: number
  /** How long a stop signal lets in-flight requests finish before they answer 503 (`SVC_SHUTDOWN_GRACE_MS`). */
  readonly shutdownGraceMs: number
  /**
   * Idle keep-alive connections are closed after this long (`SVC_KEEPALIVE_TIMEOUT_MS`); above the
   * idle timeouts of the load balancers in front, so they, not the service, close idle connections.
   */
  readonly keepAliveTimeoutMs: number
  /**
   * DNS servers the tracker's custom-domain verification asks (`SVC_DNS_SERVERS`, comma-separated
   * `ip` or `ip:port`); empty or unset: the system's resolvers.
   */
  readonly dnsServers?: ReadonlyArray<string>
  /**
   * UNSAFE outside local development (`SVC_WEBHOOK_ALLOW_HOSTS`, comma-separated host names or
   * CIDRs; unset by default): webhook targets on these hosts or addresses pass the public-host rule
   * (decision 0077), and may use plain http.
   */
  readonly webhookAllowHosts?: ReadonlyArray<string>
  readonly logFormat: "json" | "pretty"
  readonly logLevel: "All" | "Trace" | "Debug" | "Info" | "Warn" | "Error" | "Fatal" | "None"
  readonly otel: {
    readonly endpoint: Option.Option<string>
    readonly serviceName: string
    readonly headers: string
    readonly resourceAttributes: string
  }
  readonly cluster: {
    /** `single`: one in-process runner. `socket`: this process is one of several runners sharing PostgreSQL. */
    readonly mode: "single" | "socket"
    readonly runnerHost: string
    readonly runnerPort: number
    /** Address other runners use to reach this one (defaults to runnerHost). */
    readonly runnerAdvertiseHost: string
    readonly shardsPerGroup: number
    readonly healthCheckIntervalMs: number
    readonly shardLockRefreshIntervalMs: number
    readonly shardLockExpirationMs: number
  }
  /** The providers connections reach (decision 0055). */
  readonly providers: {
    /**
     * `SVC_PROVIDERS`. `sandbox`: the simulated providers of sandbox (the default on
     * the embedded database outside production only); `live` (the default on a production-shaped
     * start): the real ones, each from `SVC_PROVIDER_<KIND>_URL`, `_CLIENT_ID` and `_CLIENT_SECRET`
     * (decision 0105).
     */
    readonly mode: "sandbox" | "live"
    /** Where the sandboxes answer: `SVC_SANDBOX_URL` (`npm run sandbox`), else `<base_url>/sandbox` served by this process. */
    readonly sandboxUrl: string
    /** Whether this process serves `/sandbox/<provider>/` itself (sandbox mode without `SVC_SANDBOX_URL`). */
    readonly servesSandbox: boolean
    /** Root of the sandbox apps' client secrets (`SVC_SANDBOX_SECRET`); the sandbox and the service derive them alike. */
    readonly sandboxSecret: Redacted.Redacted<string>
    /**
     * Origins besides this service's own `/hooks/<provider>` that sandbox pushes may go to
     * (`SVC_SANDBOX_CALLBACK_ORIGINS`, comma-separated; none by default, decision 0109).
     */
    readonly sandboxCallbackOrigins: ReadonlyArray<string>
    /** How long a connect hand-off's links stay usable (`SVC_HANDOFF_TTL_SECONDS`). */
    readonly handoffTtlSeconds: number
  }
}

export const DEFAULT_SHUTDOWN_GRACE_MS = 15_000
/** A hand-off is a person's round trip through a consent screen: an hour covers a slow one (decision 0055). */
export const DEFAULT_HANDOFF_TTL_SECONDS = 3_600
/** Documented, so that tests outside the project can sign sandbox callbacks (docs/sandbox-providers.md). */
export const DEFAULT_SANDBOX_SECRET = "svc-sandbox-secret"

/** Above AWS ALB's 60 s and nginx's 60 s upstream default (decision 0049). */
export const DEFAULT_KEEPALIVE_TIMEOUT_MS = 75_000

const optionalRedacted = (name: string) => Config.option(Config.Redacted(name))

const settingsConfig = Config.all({
  port: Config.Port("PORT").pipe(Config.withDefault(8080)),
  host: Config.String("HOST").pipe(Config.withDefault("0.0.0.0")),
  baseUrl: Config.option(Config.URL("SVC_BASE_URL")),
  databaseUrl: optionalRedacted("DATABASE_URL"),
  dataDir: Config.String("SVC_DATA_DIR").pipe(Config.withDefault("./.data")),
  adminToken: optionalRedacted("SVC_ADMIN_TOKEN"),
  rpcToken: optionalRedacted("SVC_RPC_TOKEN"),
  secretsKey: optionalRedacted("SVC_SECRETS_KEY"),
  redisUrl: optionalRedacted("REDIS_URL"),
  linkTokenSecret: optionalRedacted("SVC_LINK_TOKEN_SECRET"),
  workers: Config.Literals(["on", "off"], "SVC_WORKERS").pipe(Config.withDefault("on" as const)),
  maxBodyBytes: Config.Int("SVC_MAX_BODY_BYTES").pipe(Config.withDefault(1_048_576)),
  shutdownGraceMs: Config.Int("SVC_SHUTDOWN_GRACE_MS").pipe(Config.withDefault(DEFAULT_SHUTDOWN_GRACE_MS)),
  keepAliveTimeoutMs: Config.Int("SVC_KEEPALIVE_TIMEOUT_MS").pipe(Config.withDefault(DEFAULT_KEEPALIVE_TIMEOUT_MS)),
  dnsServers: Config.String("SVC_DNS_SERVERS").pipe(Config.withDefault("")),
  webhookAllowHosts: Config.String("SVC_WEBHOOK_ALLOW_HOSTS").pipe(Config.withDefault("")),
  logFormat: Config.Literals(["json", "pretty"], "SVC_LOG_FORMAT").pipe(Config.withDefault("json" as const)),
  logLevel: Config.Literals(["All", "Trace", "Debug", "Info", "Warn", "Error", "Fatal", "None"], "LOG_LEVEL").pipe(
    Config.withDefault("Info" as const)
  ),
  otelEndpoint: Config.option(Config.URL("OTEL_EXPORTER_OTLP_ENDPOINT")),
  otelServiceName: Config.String("OTEL_SERVICE_NAME").pipe(Config.withDefault("attribution-service")),
  otelHeaders: Config.String("OTEL_EXPORTER_OTLP_HEADERS").pipe(Config.withDefault("")),
  otelResourceAttributes: Config.String("OTEL_RESOURCE_ATTRIBUTES").pipe(Config.withDefault("")),
  clusterMode: Config.Literals(["single", "socket"], "SVC_CLUSTER_MODE").pipe(Config.withDefault("single" as const)),
  runnerHost: Config.String("SVC_RUNNER_HOST").pipe(Config.withDefault("127.0.0.1")),
  runnerPort: Config.Port("SVC_RUNNER_PORT").pipe(Config.withDefault(34431)),
  runnerAdvertiseHost: Config.option(Config.String("SVC_RUNNER_ADVERTISE_HOST")),
  shardsPerGroup: Config.Int("SVC_SHARDS_PER_GROUP").pipe(Config.withDefault(300)),
  healthCheckIntervalMs: Config.Int("SVC_RUNNER_HEALTH_CHECK_MS").pipe(Config.withDefault(2_000)),
  shardLockRefreshIntervalMs: Config.Int("SVC_SHARD_LOCK_REFRESH_MS").pipe(Config.withDefault(2_000)),
  shardLockExpirationMs: Config.Int("SVC_SHARD_LOCK_EXPIRATION_MS").pipe(Config.withDefault(6_000)),
  nodeEnv: Config.String("NODE_ENV").pipe(Config.withDefault("")),
  // No default here: it depends on where the service runs (loadSettings, decision 0105).
  providersMode: Config.option(Config.Literals(["sandbox", "live"], "SVC_PROVIDERS")),
  sandboxUrl: Config.option(Config.URL("SVC_SANDBOX_URL")),
  sandboxSecret: Config.Redacted("SVC_SANDBOX_SECRET").pipe(Config.withDefault(Redacted.make(DEFAULT_SANDBOX_SECRET))),
  sandboxCallbackOrigins: Config.String("SVC_SANDBOX_CALLBACK_ORIGINS").pipe(Config.withDefault("")),
  handoffTtlSeconds: Config.Int("SVC_HANDOFF_TTL_SECONDS").pipe(Config.withDefault(DEFAULT_HANDOFF_TTL_SECONDS))
})

/** A setting that parsed but does not make sense (with the variable it came from). */
export class InvalidSetting extends Data.TaggedError("InvalidSetting")<{
  readonly variable: string
  readonly problem: string
}> {
  override get message() {
    return `${this.variable}: ${this.problem}`
  }
}

/** Reads and cross-checks the settings; a bad value fails with a ConfigError naming its variable. */
export const loadSettings: Effect.Effect<AppSettings, Config.ConfigError | InvalidSetting> = Effect.gen(function*() {
  const raw = yield* settingsConfig
  const productionShaped = Option.isSome(raw.databaseUrl) || raw.nodeEnv === "production"
  if (raw.maxBodyBytes < 1024) {
    return yield* invalid("SVC_MAX_BODY_BYTES", "must be at least 1024")
  }
  if (raw.shutdownGraceMs < 0 || raw.shutdownGraceMs > 600_000) {
    return yield* invalid("SVC_SHUTDOWN_GRACE_MS", "must be from 0 to 600000 (milliseconds)")
  }
  if (raw.keepAliveTimeoutMs < 1_000 || raw.keepAliveTimeoutMs > 3_600_000) {
    return yield* invalid("SVC_KEEPALIVE_TIMEOUT_MS", "must be from 1000 to 3600000 (milliseconds)")
  }
  if (raw.shardsPerGroup < 1) {
    return yield* invalid("SVC_SHARDS_PER_GROUP", "must be a positive integer")
  }
  // The embedded database belongs to this one process: with its workers off, nothing would ever
  // credit, deliver or export what it records.
  if (raw.workers === "off" && Option.isNone(raw.databaseUrl)) {
    return yield* invalid("SVC_WORKERS", "off needs DATABASE_URL: the queues are then worked by other processes sharing that database")
  }
  if (raw.clusterMode === "socket" && Option.isNone(raw.databaseUrl)) {
    return yield* invalid("SVC_CLUSTER_MODE", "socket runners share a real PostgreSQL: set DATABASE_URL")
  }
  if (Option.isSome(raw.secretsKey) && Buffer.from(Redacted.value(raw.secretsKey.value), "base64").length !== 32) {
    return yield* invalid("SVC_SECRETS_KEY", "expected 32 bytes, base64-encoded (openssl rand -base64 32)")
  }
  const sandboxCallbackOrigins = raw.sandboxCallbackOrigins.split(",").map((entry) => entry.trim()).filter((entry) => entry !== "")
  const notOrigin = sandboxCallbackOrigins.find((entry) =>
    !URL.canParse(entry) || !["http:", "https:"].includes(new URL(entry).protocol) || new URL(entry).origin !== entry.replace(/\/$/, "")
  )
  if (notOrigin !== undefined) {
    return yield* invalid("SVC_SANDBOX_CALLBACK_ORIGINS", `"${notOrigin}" is not an http(s) origin (scheme://host[:port])`)
  }
  if (Option.isSome(raw.linkTokenSecret) && Redacted.value(raw.linkTokenSecret.value).length < 32) {
    return yield* invalid("SVC_LINK_TOKEN_SECRET", "expected at least 32 characters (openssl rand -base64 32)")
  }
  if (Option.isSome(raw.databaseUrl) && !/^postgres(ql)?:\/\//.test(Redacted.value(raw.databaseUrl.value))) {
    return yield* invalid("DATABASE_URL", "expected a postgres:// or postgresql:// URL")
  }
  // A key generated into one container's data directory is lost with it, and differs per runner:
  // every stored provider token would become unreadable (socket mode needs DATABASE_URL, so it is covered).
  if (productionShaped && Option.isNone(raw.secretsKey)) {
    const where = Option.isSome(raw.databaseUrl) ? "DATABASE_URL is set" : "NODE_ENV=production"
    return yield* invalid(
      "SVC_SECRETS_KEY",
      `required when ${where} (every restart and runner must open stored secrets with one key); make one with: openssl rand -base64 32`
    )
  }
  const dnsServers = raw.dnsServers.split(",").map((server) => server.trim()).filter((server) => server !== "")
  const badServer = dnsServers.find((server) => !isDnsServer(server))
  if (badServer !== undefined) {
    return yield* invalid("SVC_DNS_SERVERS", `${badServer} is not an IP address with an optional port (1.1.1.1, 10.0.0.2:53, [::1]:53)`)
  }
  if (raw.handoffTtlSeconds < 1 || raw.handoffTtlSeconds > 7 * 86_400) {
    return yield* invalid("SVC_HANDOFF_TTL_SECONDS", "must be from 1 to 604800 (seconds)")
  }
  const providersMode = Option.getOrElse(raw.providersMode, () => productionShaped ? "live" as const : "sandbox" as const)
  const baseUrl = Option.match(raw.baseUrl, {
    onNone: () => `http://localhost:${raw.port}`,
    onSome: (url) => url.toString().replace(/\/$/, "")
  })
  return {
    port: raw.port,
    host: raw.host,
    baseUrl,
    databaseUrl: raw.databaseUrl,
    dataDir: raw.dataDir,
    adminToken: raw.adminToken,
    rpcToken: raw.rpcToken,
    secretsKey: raw.secretsKey,
    productionShaped,
    redisUrl: raw.redisUrl,
    linkTokenSecret: raw.linkTokenSecret,
    workers: raw.workers === "on",
    maxBodyBytes: raw.maxBodyBytes,
    shutdownGraceMs: raw.shutdownGraceMs,
    keepAliveTimeoutMs: raw.keepAliveTimeoutMs,
    dnsServers,
    webhookAllowHosts: raw.webhookAllowHosts.split(",").map((entry) => entry.trim()).filter((entry) => entry !== ""),
    logFormat: raw.logFormat,
    logLevel: raw.logLevel,
    otel: {
      endpoint: Option.map(raw.otelEndpoint, (url) => url.toString().replace(/\/$/, "")),
      serviceName: raw.otelServiceName,
      headers: raw.otelHeaders,
      resourceAttributes: raw.otelResourceAttributes
    },
    cluster: {
      mode: raw.clusterMode,
      runnerHost: raw.runnerHost,
      runnerPort: raw.runnerPort,
      runnerAdvertiseHost: Option.getOrElse(raw.runnerAdvertiseHost, () => raw.runnerHost),
      shardsPerGroup: raw.shardsPerGroup,
      healthCheckIntervalMs: raw.healthCheckIntervalMs,
      shardLockRefreshIntervalMs: raw.shardLockRefreshIntervalMs,
      shardLockExpirationMs: raw.shardLockExpirationMs
    },
    providers: {
      mode: providersMode,
      sandboxUrl: Option.match(raw.sandboxUrl, {
        onNone: () => `${baseUrl}/sandbox`,
        onSome: (url) => url.toString().replace(/\/$/, "")
      }),
      servesSandbox: providersMode === "sandbox" && Option.isNone(raw.sandboxUrl),
      sandboxSecret: raw.sandboxSecret,
      sandboxCallbackOrigins: sandboxCallbackOrigins,
      handoffTtlSeconds: raw.handoffTtlSeconds
    }
  } satisfies AppSettings
})

/**
 * The settings of a process that opens no database and seals nothing (`npm run sandbox`, the
 * provider bench): `DATABASE_URL` and `NODE_ENV` are left out, so the rules of a production-shaped
 * start (a required `SVC_SECRETS_KEY`) do not stop it.
 */
export const loadSettingsWithoutDatabase: Effect.Effect<AppSettings, Config.ConfigError | InvalidSetting> = Effect.suspend(() => {
  const { DATABASE_URL: _database, NODE_ENV: _environment, ...env } = process.env
  return loadSettings.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env)))
})

/**
 * The one warning a start logs about its settings: simulated providers chosen explicitly on a
 * production-shaped start (they are never its default there; decision 0105).
 */
export const sandboxWarning = (settings: AppSettings): Option.Option<string> =>
  settings.productionShaped && settings.providers.mode === "sandbox"
    ? Option.some(
      `SVC_PROVIDERS=sandbox on a production-shaped start (DATABASE_URL set or NODE_ENV=production): ` +
        `connections reach simulated providers, which answer ${
          settings.providers.servesSandbox ? "under /sandbox on this service" : `at ${settings.providers.sandboxUrl}`
        }; they must not face real users`
    )
    : Option.none()

/** `1.1.1.1`, `1.1.1.1:53`, `2606:4700::1111` or `[2606:4700::1111]:53`: what the resolver's setServers takes. */
const isDnsServer = (server: string): boolean => {
  const bracketed = /^\[([0-9a-f:.]+)\](?::(\d{1,5}))?$/i.exec(server)
  if (bracketed !== null) return isIP(bracketed[1] ?? "") === 6 && validPort(bracketed[2])
  if (isIP(server) !== 0) return true
  const withPort = /^([0-9.]+):(\d{1,5})$/.exec(server)
  return withPort !== null && isIP(withPort[1] ?? "") === 4 && validPort(withPort[2])
}
const validPort = (port: string | undefined) => port === undefined || (Number(port) >= 1 && Number(port) <= 65535)

const invalid = (variable: string, problem: string) => Effect.fail(new InvalidSetting({ variable, problem }))

export class AppConfig extends Context.Service<AppConfig, AppSettings>()("svc/AppConfig") {
  static readonly layer = Layer.effect(AppConfig)(loadSettings)
  static readonly layerWith = (settings: AppSettings) => Layer.succeed(AppConfig)(settings)
}
