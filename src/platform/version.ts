import packageJson from "../../package.json" with { type: "json" }

/** The service version, from package.json. */
export const VERSION: string = packageJson.version
