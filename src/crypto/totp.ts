import { Secret, TOTP } from 'otpauth';

/**
 * TOTP per DECISIONS §7: RFC 6238, SHA-1, 6 digits, 30-second steps, one step of drift either
 * way, 160-bit secrets. The arithmetic is otpauth's (a maintained library); what is ours is
 * which step a code matched, so a caller can refuse a step that was already accepted once.
 */
export const TOTP_PERIOD_SECONDS = 30;
export const TOTP_DIGITS = 6;
const TOTP_WINDOW_STEPS = 1;
const SECRET_BYTES = 20;

/** A fresh 160-bit shared key, base32 (RFC 4648, no padding) as authenticator apps expect it. */
export const newTotpSecret = (): string => new Secret({ size: SECRET_BYTES }).base32;

const totpOf = (secretBase32: string, label = 'account', issuer = 'Portcullis') =>
  new TOTP({
    issuer,
    label,
    algorithm: 'SHA1',
    digits: TOTP_DIGITS,
    period: TOTP_PERIOD_SECONDS,
    secret: Secret.fromBase32(secretBase32),
  });

/** The otpauth:// URI an authenticator app reads from a QR code. */
export const totpUri = (secretBase32: string, label: string, issuer: string): string =>
  totpOf(secretBase32, label, issuer).toString();

/**
 * The time step a presented code matches at `now` (within ±1 step), or null. Anything that is
 * not exactly six digits is refused before any comparison.
 */
export function matchingTotpStep(secretBase32: string, presented: string, now: Date): number | null {
  const code = presented.replace(/\s+/g, '');
  if (!/^\d{6}$/.test(code)) return null;
  const timestamp = now.getTime();
  const delta = totpOf(secretBase32).validate({ token: code, timestamp, window: TOTP_WINDOW_STEPS });
  if (delta === null) return null;
  return Math.floor(timestamp / 1000 / TOTP_PERIOD_SECONDS) + delta;
}
