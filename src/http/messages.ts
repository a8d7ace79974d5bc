/**
 * Every fixed message the service answers with, and its HTTP status. The status of an answer is
 * always looked up here, so the same message always gives the same status (spec §Errors).
 * Field-validation messages (`Name is required.`) are generated from schemas and are all 400.
 */
export const MESSAGE_STATUS = {
  // 400
  'The request is malformed.': 400,
  'Invalid token.': 400,
  'Token already used.': 400,
  'Token expired.': 400,
  'Token is required.': 400,
  'Page number must be at least 1.': 400,
  'Page size must be between 1 and 100.': 400,
  'Page number is too large.': 400,
  'Password must be at least 8 characters.': 400,
  'Password must be at most 256 characters.': 400,
  'Password is too common.': 400,
  'Email link URLs must be absolute http or https URLs of at most 2048 characters.': 400,
  'A scope needs at least one owner.': 400,
  'Every owner must be a live Scope Admin or System Admin.': 400,
  'Owner must be a Scope Admin or System Admin who owns the scope.': 400,
  'The person cannot become an owner of this scope.': 400,
  'ExpiresAt must be in the future.': 400,
  'The email address is already verified.': 400,
  'Role must be Scope Admin or System Admin.': 400,
  'Ground is required.': 400,
  'A role can only change between Scope Admin and System Admin.': 400,
  'Choose at least one two-factor method.': 400,
  // 401
  'Invalid credentials.': 401,
  'Invalid token': 401,
  'This token has been revoked. Sign in again.': 401,
  'This token is no longer valid. Sign in again.': 401,
  'The password or code is incorrect.': 401,
  'The code or recovery code is missing, incorrect, or already used.': 401,
  'The two-factor challenge is invalid or has expired. Log in again.': 401,
  'The application token was not accepted.': 401,
  // Every refusal of an application secret exchange (unknown, revoked or expired secret;
  // deleted application or scope) is this one answer, so it reveals nothing.
  'The application secret was not accepted.': 401,
  'Extidp authentication failed.': 401,
  'The credential presented was not accepted.': 401,
  // 403
  'You do not have permission to access this resource.': 403,
  'You are not an owner of the target scope.': 403,
  'You are not allowed to manage this application.': 403,
  'You are not allowed to view this scope.': 403,
  'You are not allowed to view this person.': 403,
  'You are not allowed to update this person.': 403,
  'You are not allowed to view this external-provider user.': 403,
  'You cannot delete your own person record.': 403,
  'You are not allowed to delete this person.': 403,
  'Only a System Admin may change a role.': 403,
  'Extidp sign-up requires a verified email address.': 403,
  'Two-factor authentication is not available to external-provider users.': 403,
  // One answer for a missing, deleted or extidp-disabled scope, so the three are not told apart.
  'Extidp sign-in is not available for this scope.': 403,
  // One answer for a missing, deleted or closed scope at register, so the three are not told apart.
  'Self-registration is not available for this scope.': 403,
  // 404
  'Not found.': 404,
  'Scope not found.': 404,
  'Person not found.': 404,
  'Application not found.': 404,
  'Credential not found.': 404,
  'Scope permission not found.': 404,
  'External-provider user not found.': 404,
  'Pending registration not found.': 404,
  'No two-factor setup was found.': 404,
  // 409
  'A scope with this name already exists.': 409,
  'A person with this email already exists.': 409,
  'This change would leave a scope without an owner. Add another owner first.': 409,
  'An application may have at most two live credentials.': 409,
  'A permission with this name already exists in this scope.': 409,
  'Turn off the email sign-in method before changing your email address.': 409,
  'Two-factor authentication is already active. Turn it off first.': 409,
  'The person is deleted, restricted or cannot sign in, so no email was sent.': 409,
  'Processing is already restricted.': 409,
  'Processing is not restricted.': 409,
  'Erasure has already been requested.': 409,
  // 422
  'The password is required to confirm this registration.': 422,
  // 413, 415 are answered as 400 malformed (spec: a body that is not JSON is malformed)
  // 429
  'Too many requests.': 429,
  'An email of this kind was sent to you recently. Try again in a few minutes.': 429,
  'You have reached the limit for account emails. Try again later.': 429,
  'An email of this kind was sent to this person recently. Try again in a few minutes.': 429,
  // 499, the status proxies log for a request whose client closed the connection first: no
  // answer reaches anyone, but the failed command's audit entry keeps the reason.
  'The caller went away before its credentials were checked.': 499,
  // 500, 503
  'Internal server error, please try again later': 500,
  'The service is busy verifying credentials. Try again shortly.': 503,
} as const satisfies Record<string, number>;

export type Message = keyof typeof MESSAGE_STATUS;

/** The status of a message from the table; a field-validation message (not in it) is 400. */
export function statusOf(message: string): number {
  return (MESSAGE_STATUS as Record<string, number>)[message] ?? 400;
}

/**
 * A refusal: a command, query or hook decided the request cannot be served. Carries one message
 * from the table (or a field-validation message); the HTTP layer turns it into the envelope.
 */
export class Refusal extends Error {
  override readonly name = 'Refusal';
  readonly status: number;
  /** Extra answer headers (Retry-After for 429 and 503). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(message: Message, headers: Readonly<Record<string, string>> = {}) {
    super(message);
    this.status = statusOf(message);
    this.headers = headers;
  }
}

/** A field-validation refusal (`Name is required.`): always 400. */
export class InvalidField extends Error {
  override readonly name = 'InvalidField';
  readonly status = 400;
}

export const refuse = (message: Message, headers?: Record<string, string>): never => {
  throw new Refusal(message, headers);
};
