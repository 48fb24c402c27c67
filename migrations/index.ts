import m0001 from "./0001_platform.ts"
import m0002 from "./0002_tenancy.ts"
import m0003 from "./0003_connections.ts"
import m0004 from "./0004_sync_jobs.ts"
import m0005 from "./0005_oauth_authorization.ts"
import m0006 from "./0006_mcp_oauth.ts"
import m0007 from "./0007_dpa.ts"
import m0008 from "./0008_profile_creation.ts"
import m0009 from "./0009_outcomes.ts"
import m0010 from "./0010_events.ts"
import m0011 from "./0011_tracking.ts"
import m0012 from "./0012_payments.ts"
import m0013 from "./0013_ad_structure.ts"
import m0014 from "./0014_declared_sources.ts"
import m0015 from "./0015_tracking_domains.ts"
import m0016 from "./0016_customers.ts"
import m0017 from "./0017_identity_links.ts"
import m0018 from "./0018_merges.ts"
import m0019 from "./0019_analytics.ts"
import m0020 from "./0020_campaign_rollups.ts"
import m0021 from "./0021_analytics_insights.ts"
import m0022 from "./0022_outcome_replay.ts"
import m0023 from "./0023_unfiltered_rollups.ts"
import m0024 from "./0024_utm_dimensions.ts"
import m0025 from "./0025_password_links.ts"
import m0026 from "./0026_provider_connections.ts"
import m0029 from "./0029_commerce_copy.ts"
import m0030 from "./0030_sync_checkpoint.ts"
import m0031 from "./0031_commerce_app_connections.ts"
import m0032 from "./0032_ad_actions.ts"
import m0033 from "./0033_creative_analysis.ts"
import m0034 from "./0034_exports.ts"
import m0035 from "./0035_webhooks.ts"
import m0036 from "./0036_inbox.ts"
import m0037 from "./0037_rpc_credentials.ts"
import m0038 from "./0038_trace_context.ts"
import m0039 from "./0039_reports.ts"
import m0040 from "./0040_url_tags.ts"
import m0041 from "./0041_platform_safe.ts"
import m0042 from "./0042_channel_health.ts"
import m0043 from "./0043_export_cursor.ts"
import m0044 from "./0044_webhook_rotation_and_delivery.ts"
import m0045 from "./0045_webhook_delivery_trace.ts"
import m0047 from "./0047_dpa_handoffs.ts"
import m0048 from "./0048_creative_job_trace.ts"
import m0049 from "./0049_audience_exclusions.ts"
import m0050 from "./0050_customer_list_audiences.ts"
import m0051 from "./0051_report_trace_context.ts"
import m0052 from "./0052_oauth_pkce.ts"
import m0053 from "./0053_webhook_delivery_attempts.ts"
import m0054 from "./0054_one_running_sync_job.ts"
import m0055 from "./0055_webhook_claim_heads.ts"
import m0056 from "./0056_visible_backlog.ts"
import m0057 from "./0057_queue_claim_indexes.ts"
import m0058 from "./0058_customer_list_lease_token.ts"
import m0059 from "./0059_webhook_deliveries_fillfactor.ts"
import m0060 from "./0060_experiments.ts"
import m0061 from "./0061_experiment_execution.ts"
import m0062 from "./0062_sync_jobs_connection_queue.ts"
import m0063 from "./0063_experiment_holdout_uploads.ts"
import m0064 from "./0064_citus_ready.ts"
import m0065 from "./0065_request_logs.ts"
import m0066 from "./0066_bulk_credit_writes.ts"
import m0067 from "./0067_partitioned_logs.ts"
import m0068 from "./0068_webhook_attempt_response_body.ts"
import m0069 from "./0069_analytics_marks_by_whole_key.ts"
import m0070 from "./0070_partitioned_outbox.ts"
import m0071 from "./0071_partitioned_touches.ts"
import m0072 from "./0072_partitioned_conversions.ts"
import m0073 from "./0073_partitioned_credits.ts"
import m0074 from "./0074_partitioned_outcome_events.ts"
import m0075 from "./0075_credit_touch_time.ts"
import m0076 from "./0076_sync_lease_holder.ts"
import m0077 from "./0077_replay_lease_holder.ts"
import m0078 from "./0078_credit_marks_from_rows.ts"
import m0079 from "./0079_credit_queue.ts"
import m0080 from "./0080_touches_by_visitor.ts"
import m0081 from "./0081_webhook_topic_wanted.ts"
import m0082 from "./0082_outbox_fan_out_lease.ts"

/**
 * Ordered migrations, keyed `NNNN_name` like their files. Listed statically so the same
 * bundle runs on Node and Deno without reading the file system.
 */
export const migrations = {
  "0001_platform": m0001,
  "0002_tenancy": m0002,
  "0003_connections": m0003,
  "0004_sync_jobs": m0004,
  "0005_oauth_authorization": m0005,
  "0006_mcp_oauth": m0006,
  "0007_dpa": m0007,
  "0008_profile_creation": m0008,
  "0009_outcomes": m0009,
  "0010_events": m0010,
  "0011_tracking": m0011,
  "0012_payments": m0012,
  "0013_ad_structure": m0013,
  "0014_declared_sources": m0014,
  "0015_tracking_domains": m0015,
  "0016_customers": m0016,
  "0017_identity_links": m0017,
  "0018_merges": m0018,
  "0019_analytics": m0019,
  "0020_campaign_rollups": m0020,
  "0021_analytics_insights": m0021,
  "0022_outcome_replay": m0022,
  "0023_unfiltered_rollups": m0023,
  "0024_utm_dimensions": m0024,
  "0025_password_links": m0025,
  "0026_provider_connections": m0026,
  "0029_commerce_copy": m0029,
  "0030_sync_checkpoint": m0030,
  "0031_commerce_app_connections": m0031,
  "0032_ad_actions": m0032,
  "0033_creative_analysis": m0033,
  "0034_exports": m0034,
  "0035_webhooks": m0035,
  "0036_inbox": m0036,
  "0037_rpc_credentials": m0037,
  "0038_trace_context": m0038,
  "0039_reports": m0039,
  "0040_url_tags": m0040,
  "0041_platform_safe": m0041,
  "0042_channel_health": m0042,
  "0043_export_cursor": m0043,
  "0044_webhook_rotation_and_delivery": m0044,
  "0045_webhook_delivery_trace": m0045,
  "0047_dpa_handoffs": m0047,
  "0048_creative_job_trace": m0048,
  "0049_audience_exclusions": m0049,
  "0050_customer_list_audiences": m0050,
  "0051_report_trace_context": m0051,
  "0052_oauth_pkce": m0052,
  "0053_webhook_delivery_attempts": m0053,
  "0054_one_running_sync_job": m0054,
  "0055_webhook_claim_heads": m0055,
  "0056_visible_backlog": m0056,
  "0057_queue_claim_indexes": m0057,
  "0058_customer_list_lease_token": m0058,
  "0059_webhook_deliveries_fillfactor": m0059,
  "0060_experiments": m0060,
  "0061_experiment_execution": m0061,
  "0062_sync_jobs_connection_queue": m0062,
  "0063_experiment_holdout_uploads": m0063,
  "0064_citus_ready": m0064,
  "0065_request_logs": m0065,
  "0066_bulk_credit_writes": m0066,
  "0067_partitioned_logs": m0067,
  "0068_webhook_attempt_response_body": m0068,
  "0069_analytics_marks_by_whole_key": m0069,
  "0070_partitioned_outbox": m0070,
  "0071_partitioned_touches": m0071,
  "0072_partitioned_conversions": m0072,
  "0073_partitioned_credits": m0073,
  "0074_partitioned_outcome_events": m0074,
  "0075_credit_touch_time": m0075,
  "0076_sync_lease_holder": m0076,
  "0077_replay_lease_holder": m0077,
  "0078_credit_marks_from_rows": m0078,
  "0079_credit_queue": m0079,
  "0080_touches_by_visitor": m0080,
  "0081_webhook_topic_wanted": m0081,
  "0082_outbox_fan_out_lease": m0082
}

export const latestMigrationId = Math.max(...Object.keys(migrations).map((key) => Number(key.slice(0, 4))))
