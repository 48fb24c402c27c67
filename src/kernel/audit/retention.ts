/** Days a PII access log row is kept (and answered); outside the repository so other repositories may read it. */
export const PII_LOG_RETENTION_DAYS = 365
