import { Duration, Layer } from "effect"
import { defaultExportWorkerSettings, ExportWorkerSettings } from "../../src/exports/pipeline/service.ts"

/** The export worker running in the background, quick enough that a test waits seconds, not minutes. */
export const quickExportWorker = Layer.succeed(ExportWorkerSettings)({
  ...defaultExportWorkerSettings,
  pollInterval: Duration.millis(100),
  retryBase: Duration.millis(200),
  holdRecheck: Duration.millis(300),
  lease: Duration.seconds(5)
})
