import { Config, Effect } from "effect"
import { type AppSettings, InvalidSetting, loadSettings } from "./config.ts"

/** One line naming the variable, for configuration that stops start-up. */
export const describeConfigError = (error: Config.ConfigError | InvalidSetting): string => {
  if (error instanceof InvalidSetting) return `invalid configuration: ${error.message}`
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
