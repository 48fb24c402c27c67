import m0001 from "./0001_platform.ts"
import m0002 from "./0002_tenancy.ts"
import m0003 from "./0003_connections.ts"
import m0004 from "./0004_sync_jobs.ts"
import m0008 from "./0008_profile_creation.ts"

/**
 * Ordered migrations, keyed `NNNN_name` like their files. Listed statically so the same
 * bundle runs on Node and Deno without reading the file system.
 */
export const migrations = {
  "0001_platform": m0001,
  "0002_tenancy": m0002,
  "0003_connections": m0003,
  "0004_sync_jobs": m0004,
  "0008_profile_creation": m0008
}

export const latestMigrationId = Math.max(...Object.keys(migrations).map((key) => Number(key.slice(0, 4))))
