/**
 * People who sign in (decision 0053): one-time links to set a password (an invitation) or to
 * choose a new one (a reset), and the operator's quickstart bundle. A link's token appears
 * only in the answer that made it; the password only in the request that sets it.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { Uuid } from "./common.ts"

const Email = Schema.String.check(
  Schema.isMaxLength(320),
  Schema.isPattern(/^[^\s@]+@[^\s@]+$/, { message: "Expected an email address" })
)

export const PasswordLinkPurpose = Schema.Literals(["invite", "reset"])
export type PasswordLinkPurpose = typeof PasswordLinkPurpose.Type

/** `POST /api/v1/admin/people/password-links` (operator). */
export const CreatePasswordLink = Schema.Struct({
  email: Email,
  /** `invite` creates the person when missing; `reset` needs an existing person (else 404). */
  purpose: PasswordLinkPurpose
})
export type CreatePasswordLink = typeof CreatePasswordLink.Type

export const PasswordLink = Schema.Struct({
  user_id: Uuid,
  email: Schema.String,
  purpose: PasswordLinkPurpose,
  /** The one-time page that sets the password; shown once. */
  url: Schema.String,
  expires_at: Schema.String,
  /** The person did not exist before this invitation. */
  created_person: Schema.Boolean
})
export type PasswordLink = typeof PasswordLink.Type

export const PasswordLinkCreated = Schema.Struct({ data: PasswordLink }).pipe(HttpApiSchema.status(201))

/** At least 8 characters (NIST SP 800-63B); capped so a huge body cannot make the KDF expensive. */
export const NewPassword = Schema.String.check(
  Schema.isMinLength(8, { message: "Expected a password of at least 8 characters" }),
  Schema.isMaxLength(1024)
)

/** `POST /api/v1/passwords/set` (public): the link's token and the new password. */
export const SetPassword = Schema.Struct({
  token: Schema.String.check(Schema.isMaxLength(200)),
  password: NewPassword
})
export type SetPassword = typeof SetPassword.Type

export const PasswordSet = Schema.Struct({
  data: Schema.Struct({
    user_id: Uuid,
    email: Schema.String,
    /** Sessions of the person that were signed out because the password changed. */
    revoked_sessions: Schema.Int
  })
})

/** The set-password page's form. */
export const SetPasswordForm = Schema.Struct({
  /** The page's form token, matching its `__Host-svc_form` cookie (decision 0107). */
  form_token: Schema.String,
  token: Schema.String,
  password: Schema.String,
  password_confirmation: Schema.String
}).annotate({ identifier: "SetPasswordForm" })

export const PasswordPage = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" })).annotate({
  description: "HTML page: the set-password form, or its outcome"
})
export const PasswordErrorPage = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" }), HttpApiSchema.status(400))
  .annotate({ description: "HTML page: the link is unknown, expired or used, or the form was not filled in right" })
export const PasswordFormRefusedPage = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" }), HttpApiSchema.status(403))
  .annotate({
    description: "HTML page: the form was posted from another site, or without its page's form token and cookie; nothing changed"
  })

/** `POST /api/v1/admin/quickstart` (operator): a ready-to-use account on this service. */
export const QuickstartRequest = Schema.Struct({
  /** Default `you@example.com`. */
  email: Schema.optionalKey(Email)
})
export type QuickstartRequest = typeof QuickstartRequest.Type

export const QuickstartBundle = Schema.Struct({
  person_email: Schema.String,
  /** A one-time set-password link (invitation for a new person, reset otherwise). */
  sign_in_url: Schema.String,
  workspace_id: Uuid,
  profile_id: Uuid,
  /** A new API key on every run; shown once. */
  api_key: Schema.String,
  api_key_id: Uuid,
  api_key_scopes: Schema.Array(Schema.String),
  /** Public: the tracker's key. */
  tracking_key: Schema.String,
  allowed_origins: Schema.Array(Schema.String),
  conversion_key: Schema.String,
  base_url: Schema.String,
  /** What this run created (false: found and reused). */
  created: Schema.Struct({
    person: Schema.Boolean,
    workspace: Schema.Boolean,
    profile: Schema.Boolean,
    definition: Schema.Boolean
  })
})
export type QuickstartBundle = typeof QuickstartBundle.Type

export const QuickstartCreated = Schema.Struct({ data: QuickstartBundle }).pipe(HttpApiSchema.status(201))
