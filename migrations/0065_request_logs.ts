import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/**
 * A profile's recent API requests (issue 33, decision 0130): one row per profile-grain `/api/v1`
 * call, written in batches by the request-log recorder, kept 7 days. Keyed by the profile first
 * (the primary key and every index lead with it, so the table can be distributed by profile);
 * the primary key is the list's order. No foreign key to `profiles`: a batch holds many profiles'
 * rows and one profile deleted meanwhile must not refuse the others (the rows age out anyway).
 * Nothing of a request's body, query string or headers is kept.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient
  yield* sql`
    CREATE TABLE request_logs (
      profile_id uuid NOT NULL,
      created_at timestamptz NOT NULL,
      id uuid NOT NULL,
      request_id text NOT NULL CHECK (char_length(request_id) <= 128),
      method text NOT NULL CHECK (char_length(method) <= 16),
      path text NOT NULL CHECK (char_length(path) <= 512),
      route text CHECK (char_length(route) <= 512),
      status smallint NOT NULL CHECK (status BETWEEN 100 AND 599),
      duration_ms integer NOT NULL CHECK (duration_ms >= 0),
      principal_kind text NOT NULL CHECK (char_length(principal_kind) <= 32),
      key_id uuid,
      PRIMARY KEY (profile_id, created_at, id)
    )`
  // Looking a request up by the id a caller saw in `X-Request-Id`.
  yield* sql`CREATE INDEX request_logs_request_id ON request_logs (profile_id, request_id)`
  // The retention delete walks the oldest rows of every profile.
  yield* sql`CREATE INDEX request_logs_created_at ON request_logs (created_at)`
})
