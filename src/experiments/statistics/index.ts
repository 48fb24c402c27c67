/**
 * The statistics of incrementality experiments (issue 32): pure functions, no Effect, no
 * database. Every estimate carries its interval; missing data is an InsufficientData answer.
 */
export * from "./bootstrap.ts"
export * from "./checks.ts"
export * from "./dates.ts"
export * from "./distributions.ts"
export * from "./power.ts"
export * from "./pre-post-power.ts"
export * from "./proportions.ts"
export * from "./random.ts"
export * from "./regression.ts"
export * from "./result.ts"
export * from "./simplex.ts"
export * from "./simulate.ts"
export * from "./switchback.ts"
export * from "./synthetic-control.ts"
