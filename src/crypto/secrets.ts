import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';

export const newId = (): string => randomUUID();

/** A new security stamp: replacing it revokes every token that carries the old one. */
export const newSecurityStamp = (): string => randomBytes(16).toString('base64url');

/** 256-bit random token for links and secrets, URL-safe. */
export const randomToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');

/** SHA-256 (hex) of an opaque high-entropy secret; ~1 µs, so lookups by hash stay cheap. */
export const sha256 = (value: string): string => createHash('sha256').update(value, 'utf8').digest('hex');

/** Compares two strings without leaking where they differ (for keys presented by callers). */
export function constantTimeEquals(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  // Hashing first makes both sides equal length, so the comparison time does not reveal length.
  return timingSafeEqual(a, b);
}
