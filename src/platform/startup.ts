import { Config, Effect, Schema, SchemaIssue } from "effect"
import { type AppSettings, InvalidSetting, loadSettings } from "./config.ts"

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/** One line naming the variable, for configuration that stops start-up. */
export const describeConfigError = (error: Config.ConfigError | InvalidSetting): string => {
  if (error instanceof InvalidSetting) return `invalid configuration: ${error.message}`
  const cause = error.cause
  if (Schema.isSchemaError(cause)) {
    const problems = formatIssues(cause.issue).issues.map((issue) =>
      `${(issue.path ?? []).map((segment) => String(typeof segment === "object" ? segment.key : segment)).join(".")}: ${issue.message}`
    )
    return `invalid configuration: ${problems.join("; ")}`
  }
  return `invalid configuration: ${error.message.replace(/\s*\n\s*/g, " ")}`
}

/** Reads the settings or ends the process with one clear line and exit code 1. */
export const settingsOrExit: Effect.Effect<AppSettings> = loadSettings.pipe(
  Effect.catch((error) =>
    Effect.sync(() => {
      process.stderr.write(`${describeConfigError(error)}\n`)
      process.exit(1)
    }).pipe(Effect.andThen(Effect.never))
  )
)
