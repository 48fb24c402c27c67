import { Layer } from "effect"

/** Placeholder replaced below; see telemetry wiring. */
export const TelemetryLive = Layer.empty
