/** Operational contract: liveness, readiness, and the operator's status view. */
import { Schema } from "effect"

export const Health = Schema.Struct({ status: Schema.Literal("ok") })

export const MigrationState = Schema.Struct({
  applied: Schema.Int,
  latest: Schema.Int
})

export const Readiness = Schema.Struct({
  status: Schema.Literal("ready"),
  database: Schema.Struct({ mode: Schema.Literals(["postgres", "embedded"]), reachable: Schema.Boolean }),
  migrations: MigrationState
})

export const ServiceStatusBody = Schema.Struct({
  data: Schema.Struct({
    version: Schema.String,
    runtime: Schema.String,
    uptime_seconds: Schema.Int,
    database: Schema.Struct({
      mode: Schema.Literals(["postgres", "embedded"]),
      location: Schema.String,
      reachable: Schema.Boolean,
      migrations: MigrationState
    })
  })
})

/** The published OpenAPI 3.1 document (free-form JSON). */
export const OpenApiDocument = Schema.Record(Schema.String, Schema.Unknown).annotate({
  description: "OpenAPI 3.1 document of this deployment"
})
