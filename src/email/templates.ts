import type { Mail } from './mailer.ts';

/**
 * One template per kind of mail, each with a plain-text and an HTML part. Person names are
 * escaped in HTML: a name is user input and must not become markup in someone's mail client.
 */

interface Recipient {
  readonly name: string;
  readonly email: string;
}

/** A link to follow, or (when no link base is configured) the bare token to submit. */
export type LinkOrToken = { readonly url: string } | { readonly token: string };

export function verificationMail(recipient: Recipient, target: LinkOrToken, lifetimeHours: number): Mail {
  return linkMail(recipient, target, {
    kind: 'verification',
    subject: 'Verify your email address',
    action: 'confirm your email address',
    tokenAction: 'To confirm your email address, submit this verification token',
    closing: `The link is valid for ${lifetimeHours} hours. If you did not expect this email, you can ignore it.`,
  });
}

export function passwordResetMail(recipient: Recipient, target: LinkOrToken, lifetimeHours: number): Mail {
  return linkMail(recipient, target, {
    kind: 'password-reset',
    subject: 'Reset your password',
    action: 'choose a new password',
    tokenAction: 'To choose a new password, submit this reset token',
    closing: `The link is valid for ${lifetimeHours} hour${lifetimeHours === 1 ? '' : 's'} and works once. If you did not ask to reset your password, you can ignore this email; your password stays as it is.`,
  });
}

/** Sent to the previous address after an email change: no new address, no link (spec §Endpoints). */
export function emailChangedMail(recipient: Recipient): Mail {
  const text = [
    `Hello ${recipient.name},`,
    '',
    'The email address of your account has been changed, and this address is no longer used for it.',
    'Links sent to this address earlier no longer work, and you have been signed out everywhere.',
    '',
    'If you did not make this change, contact your administrator at once.',
  ].join('\n');
  const html = [
    `<p>Hello ${escapeHtml(recipient.name)},</p>`,
    '<p>The email address of your account has been changed, and this address is no longer used for it.',
    'Links sent to this address earlier no longer work, and you have been signed out everywhere.</p>',
    '<p>If you did not make this change, contact your administrator at once.</p>',
  ].join('\n');
  return {
    kind: 'email-changed',
    to: recipient.email,
    subject: 'Your email address was changed',
    text,
    html,
  };
}

/**
 * A two-factor email code (2fa/enable with Email, sign-in, challenge resend). The code is in the
 * mail only; the subject line stays generic so a lock-screen preview does not show it.
 */
export function twoFactorCodeMail(recipient: Recipient, code: string, lifetimeMinutes: number): Mail {
  const closing = `The code is valid for ${lifetimeMinutes} minutes and works once. If you did not just sign in or set up two-factor authentication, change your password.`;
  const text = [`Hello ${recipient.name},`, '', 'Your sign-in code is:', '', code, '', closing].join('\n');
  const html = [
    `<p>Hello ${escapeHtml(recipient.name)},</p>`,
    '<p>Your sign-in code is:</p>',
    `<p><strong>${escapeHtml(code)}</strong></p>`,
    `<p>${escapeHtml(closing)}</p>`,
  ].join('\n');
  return { kind: 'two-factor-code', to: recipient.email, subject: 'Your sign-in code', text, html };
}

/**
 * The link of a pending self-registration (spec §States): following it with the password
 * chosen at registration creates the account.
 */
export function registrationMail(
  recipient: Recipient,
  scopeName: string,
  target: LinkOrToken,
  lifetimeHours: number,
): Mail {
  return linkMail(recipient, target, {
    kind: 'registration',
    subject: 'Confirm your registration',
    action: `confirm your registration to ${scopeName} (you will be asked for the password you chose)`,
    tokenAction: `To confirm your registration to ${scopeName}, submit this token with the password you chose`,
    closing: `The link is valid for ${lifetimeHours} hours. Your account is created only when you confirm. If you did not register, you can ignore this email.`,
  });
}

/**
 * To the holder of an address someone tried to register again (spec §Events). It carries no
 * link and nothing the person attempting it chose: only that it happened, and where.
 */
export function registrationAttemptMail(recipient: Recipient, scopeName: string): Mail {
  const lines = [
    `Someone tried to register a new account with this email address at ${scopeName}.`,
    'Your address already has an account there, so nothing was created and nothing about your account changed.',
    'If this was you, sign in with your existing account, or ask for a password reset if you have forgotten the password.',
    'If it was not you, you can ignore this email.',
  ];
  return {
    kind: 'registration-attempt',
    to: recipient.email,
    subject: 'Someone tried to register with your email address',
    text: [`Hello ${recipient.name},`, '', ...lines].join('\n'),
    html: [
      `<p>Hello ${escapeHtml(recipient.name)},</p>`,
      ...lines.map((line) => `<p>${escapeHtml(line)}</p>`),
    ].join('\n'),
  };
}

/** Sent once the registration link was followed and the account created (spec §Events). */
export function registrationConfirmedMail(recipient: Recipient, scopeName: string): Mail {
  const lines = [
    `Your account at ${scopeName} has been created and your email address is verified.`,
    'You can now sign in with this address and the password you chose.',
  ];
  return {
    kind: 'registration-confirmed',
    to: recipient.email,
    subject: 'Your account has been created',
    text: [`Hello ${recipient.name},`, '', ...lines].join('\n'),
    html: [
      `<p>Hello ${escapeHtml(recipient.name)},</p>`,
      ...lines.map((line) => `<p>${escapeHtml(line)}</p>`),
    ].join('\n'),
  };
}

/**
 * Sent when a System Admin lifts the restriction of processing of someone else's data (spec
 * §States: the subject is informed; GDPR Art. 18(3)). A subject lifting their own gets none.
 */
export function restrictionLiftedMail(recipient: Recipient, liftedAt: string): Mail {
  const text = [
    `Hello ${recipient.name},`,
    '',
    `An administrator lifted the restriction of processing of your data on ${liftedAt}.`,
    'Your account is fully usable again, and your data is processed as before the restriction.',
    '',
    'If you still want processing restricted, sign in and ask for a restriction again.',
  ].join('\n');
  const html = [
    `<p>Hello ${escapeHtml(recipient.name)},</p>`,
    `<p>An administrator lifted the restriction of processing of your data on ${escapeHtml(liftedAt)}.`,
    'Your account is fully usable again, and your data is processed as before the restriction.</p>',
    '<p>If you still want processing restricted, sign in and ask for a restriction again.</p>',
  ].join('\n');
  return {
    kind: 'restriction-lifted',
    to: recipient.email,
    subject: 'The restriction of processing of your data was lifted',
    text,
    html,
  };
}

interface LinkWording {
  readonly kind: 'verification' | 'password-reset' | 'registration';
  readonly subject: string;
  readonly action: string;
  readonly tokenAction: string;
  readonly closing: string;
}

function linkMail(recipient: Recipient, target: LinkOrToken, wording: LinkWording): Mail {
  const greeting = `Hello ${recipient.name},`;
  if ('url' in target) {
    const text = [
      greeting,
      '',
      `Open this link to ${wording.action}:`,
      '',
      target.url,
      '',
      wording.closing,
    ].join('\n');
    const href = escapeHtml(target.url);
    const html = [
      `<p>Hello ${escapeHtml(recipient.name)},</p>`,
      // Escaped: a registration's wording names the scope, which administrators choose.
      `<p>Open this link to ${escapeHtml(wording.action)}:</p>`,
      `<p><a href="${href}">${href}</a></p>`,
      `<p>${escapeHtml(wording.closing)}</p>`,
    ].join('\n');
    return { kind: wording.kind, to: recipient.email, subject: wording.subject, text, html };
  }
  const text = [greeting, '', `${wording.tokenAction}:`, '', target.token, '', wording.closing].join('\n');
  const html = [
    `<p>Hello ${escapeHtml(recipient.name)},</p>`,
    `<p>${escapeHtml(wording.tokenAction)}:</p>`,
    `<p><code>${escapeHtml(target.token)}</code></p>`,
    `<p>${escapeHtml(wording.closing)}</p>`,
  ].join('\n');
  return { kind: wording.kind, to: recipient.email, subject: wording.subject, text, html };
}

export function escapeHtml(value: string): string {
  return value
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** The link base with the token appended as `?token=` (or `&token=` when it has a query). */
export function linkWithToken(base: string, token: string): string {
  const separator = base.endsWith('?') || base.endsWith('&') ? '' : base.includes('?') ? '&' : '?';
  return `${base}${separator}token=${encodeURIComponent(token)}`;
}
