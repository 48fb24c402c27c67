import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Schema } from "effect"
import { DatabaseUnavailable, InvalidRequest, NotFound, ValidationError } from "../../../schema/errors.ts"
import {
  CreatePasswordLink,
  PasswordErrorPage,
  PasswordFormRefusedPage,
  PasswordLinkCreated,
  PasswordPage,
  PasswordSet,
  SetPassword,
  SetPasswordForm
} from "../../../schema/people.ts"
import { policy } from "../../http/policy.ts"

const operator = policy({ scopes: [], auth: ["operator"], idempotency: "none", grain: "none" })
const publicOperation = () => policy({ scopes: [], auth: [], idempotency: "none", grain: "none" })

/** The operator's one-time password links (decision 0053); the CLI's `people invite` / `people reset-password`. */
export const PeopleAdminApi = HttpApiGroup.make("peopleAdmin")
  .add(
    // The answer carries the link's secret: never stored for idempotent replay.
    HttpApiEndpoint.post("createPasswordLink", "/people/password-links", {
      payload: CreatePasswordLink,
      success: PasswordLinkCreated,
      error: [NotFound.wire, ValidationError.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "A one-time link that sets a person's password: invite (creates the person) or reset")
      .annotate(
        OpenApi.Description,
        "The link opens the set-password page (`GET /account/password?token=...`). Invitations last 7 days, resets 1 hour; " +
          "a new link voids the person's earlier ones. Shown once. Until an email provider exists the operator hands it over."
      )
      .annotateMerge(operator)
  )
  .prefix("/api/v1/admin")
  .annotate(OpenApi.Description, "Operator surface: people")

/** Setting a password with a one-time link, as JSON (decision 0053). */
export const PasswordsApi = HttpApiGroup.make("passwords")
  .add(
    HttpApiEndpoint.post("setPassword", "/passwords/set", {
      payload: SetPassword,
      success: PasswordSet,
      error: [InvalidRequest.wire, ValidationError.wire, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "Set a password with a one-time link's token; signs the person out everywhere")
      .annotate(
        OpenApi.Description,
        "Public: the token is the credential. At least 8 characters, not the email address. An unknown, expired or used " +
          "token is 400 `invalid_request` (reason `password_link_unusable`). Then sign in with `POST /api/v1/sessions`."
      )
      .annotateMerge(publicOperation())
  )
  .prefix("/api/v1")
  .annotate(OpenApi.Description, "Passwords")

/** The page a one-time link opens (HTML, outside the API middleware like the consent screens). */
export const PasswordPagesApi = HttpApiGroup.make("passwordPages")
  .add(
    HttpApiEndpoint.get("passwordPage", "/account/password", {
      payload: { token: Schema.optionalKey(Schema.String) },
      success: PasswordPage,
      error: [PasswordErrorPage, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "The set-password form of a one-time link")
      .annotateMerge(publicOperation()),
    HttpApiEndpoint.post("passwordForm", "/account/password", {
      payload: SetPasswordForm.pipe(HttpApiSchema.asFormUrlEncoded()),
      success: PasswordPage,
      error: [PasswordErrorPage, PasswordFormRefusedPage, DatabaseUnavailable.wire]
    })
      .annotate(OpenApi.Summary, "The set-password form's target: sets the password and uses the link up")
      .annotateMerge(publicOperation())
  )
