import { readFileSync } from 'node:fs';
import type { Message } from '../http/messages.ts';

/** DECISIONS §7: 8..256 characters, no composition rules, and not one of the most common. */
export const MINIMUM_PASSWORD_LENGTH = 8;
export const MAXIMUM_PASSWORD_LENGTH = 256;

const COMMON_PASSWORDS_FILE = new URL('./common-passwords.txt', import.meta.url);

let commonPasswords: ReadonlySet<string> | null = null;

/** The word list, one password per line, read once on first use. */
function loadCommonPasswords(): ReadonlySet<string> {
  commonPasswords ??= new Set(
    readFileSync(COMMON_PASSWORDS_FILE, 'utf8')
      .split(/\r?\n/)
      .map((line) => line.trim().toLowerCase())
      .filter((line) => line !== ''),
  );
  return commonPasswords;
}

/**
 * True when the password is on the list of most common passwords. Compared without regard to
 * case: an attacker's guessing list tries `Password` right after `password`.
 */
export function isCommonPassword(password: string): boolean {
  return loadCommonPasswords().has(password.toLowerCase());
}

/** The reason a new password is refused, or null when it is acceptable. Length counts characters. */
export function passwordProblem(password: string): Message | null {
  const length = [...password].length;
  if (length < MINIMUM_PASSWORD_LENGTH) return 'Password must be at least 8 characters.';
  if (length > MAXIMUM_PASSWORD_LENGTH) return 'Password must be at most 256 characters.';
  if (isCommonPassword(password)) return 'Password is too common.';
  return null;
}
