import { Layer, Logger } from "effect"
import { AppConfig } from "./config.ts"

/** Structured JSON logs (or pretty ones for a terminal), carrying trace and request ids. */
export const LoggingLive = Layer.unwrap(
  AppConfig.useSync((settings) =>
    Logger.layer([settings.logFormat === "json" ? Logger.consoleJson : Logger.consolePretty()])
  )
)
