import { randomBytes, randomInt } from 'node:crypto';
import { sha256 } from '../../crypto/secrets.ts';

/**
 * Recovery codes and email codes (spec §Two-factor configuration, DECISIONS §7).
 *
 * Recovery codes: 16 characters of the base32 alphabet of digits and uppercase letters without
 * I, L, O, U (80 bits), shown as XXXX-XXXX-XXXX-XXXX, stored as SHA-256 of the 16 characters.
 */
export const RECOVERY_CODE_COUNT = 10;
const RECOVERY_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const RECOVERY_CODE_LENGTH = 16;
/** Codes of the earlier XXXX-XXXX shape are honoured until used or regenerated (spec §Versioning). */
const LEGACY_RECOVERY_CODE_LENGTH = 8;

export interface NewRecoveryCode {
  /** XXXX-XXXX-XXXX-XXXX, shown once. */
  readonly display: string;
  readonly hash: string;
}

export function newRecoveryCode(): NewRecoveryCode {
  // 10 random bytes = 80 bits = 16 groups of 5 bits, one alphabet character each: no bias.
  const bytes = randomBytes(10);
  let bits = 0n;
  for (const byte of bytes) bits = (bits << 8n) | BigInt(byte);
  let code = '';
  for (let index = RECOVERY_CODE_LENGTH - 1; index >= 0; index--) {
    code += RECOVERY_ALPHABET[Number((bits >> BigInt(index * 5)) & 31n)];
  }
  return { display: code.match(/.{4}/g)!.join('-'), hash: sha256(code) };
}

/**
 * The stored hash a presented recovery code would have, or null when it cannot be one.
 * Hyphens and spaces are ignored and case does not matter; in a 16-character code O, I and L
 * read as 0, 1 and 1 (the alphabet leaves them out because they are misread as those).
 */
export function recoveryCodeHash(presented: string): string | null {
  const compact = presented.replace(/[\s-]+/g, '').toUpperCase();
  if (compact.length === RECOVERY_CODE_LENGTH) {
    const read = compact.replaceAll('O', '0').replaceAll('I', '1').replaceAll('L', '1');
    if (![...read].every((character) => RECOVERY_ALPHABET.includes(character))) return null;
    return sha256(read);
  }
  if (compact.length === LEGACY_RECOVERY_CODE_LENGTH && /^[0-9A-Z]+$/.test(compact)) return sha256(compact);
  return null;
}

/** Email codes: six digits, valid ten minutes (DECISIONS §7). */
export const EMAIL_CODE_LIFETIME_SECONDS = 10 * 60;

export const newEmailCode = (): string => String(randomInt(0, 1_000_000)).padStart(6, '0');

/**
 * The stored form of an email code, bound to what it was issued for (a challenge, or a setup),
 * so a code mailed for one purpose never proves another.
 */
export const emailCodeHash = (purpose: string, code: string): string => sha256(`${purpose}:${code}`);

/** A presented six-digit code, spaces ignored; null when it is not six digits. */
export function sixDigitCode(presented: string | null | undefined): string | null {
  const code = (presented ?? '').replace(/\s+/g, '');
  return /^\d{6}$/.test(code) ? code : null;
}
