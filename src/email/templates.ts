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
  readonly kind: 'verification' | 'password-reset';
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
      `<p>Open this link to ${wording.action}:</p>`,
      `<p><a href="${href}">${href}</a></p>`,
      `<p>${escapeHtml(wording.closing)}</p>`,
    ].join('\n');
    return { kind: wording.kind, to: recipient.email, subject: wording.subject, text, html };
  }
  const text = [greeting, '', `${wording.tokenAction}:`, '', target.token, '', wording.closing].join('\n');
  const html = [
    `<p>Hello ${escapeHtml(recipient.name)},</p>`,
    `<p>${wording.tokenAction}:</p>`,
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
