import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isCommonPassword, passwordProblem } from '../../src/crypto/password-rules.ts';

describe('password rules', () => {
  it('finds common passwords in any case, and not uncommon ones', () => {
    for (const password of ['123456', 'password', 'qwerty', 'Password1', 'LETMEIN', 'iloveyou'])
      expect(isCommonPassword(password)).toBe(true);
    expect(isCommonPassword('correct horse battery staple')).toBe(false);
  });

  it('holds the 10,000 most common passwords (DECISIONS §7), every line honoured', () => {
    const lines = readFileSync(new URL('../../src/crypto/common-passwords.txt', import.meta.url), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '');
    expect(lines).toHaveLength(10_000);
    expect(lines.every((line) => isCommonPassword(line))).toBe(true);
  });

  it('names the problem: length in characters (not bytes), then commonness', () => {
    expect(passwordProblem('short')).toBe('Password must be at least 8 characters.');
    expect(passwordProblem('ééééééé')).toBe('Password must be at least 8 characters.');
    expect(passwordProblem('é'.repeat(256))).toBeNull();
    expect(passwordProblem('x'.repeat(257))).toBe('Password must be at most 256 characters.');
    expect(passwordProblem('password123')).toBe('Password is too common.');
    expect(passwordProblem('a perfectly fine passphrase')).toBeNull();
  });
});
