import { describe, expect, it } from 'vitest';
import { SecretBox, sha256 } from '../../src/crypto/secrets.ts';
import { matchingTotpStep, newTotpSecret } from '../../src/crypto/totp.ts';
import { TOTP, Secret } from 'otpauth';
import { newRecoveryCode, recoveryCodeHash } from '../../src/modules/two-factor/two-factor.codes.ts';

describe('recovery codes', () => {
  it('are 16 characters of digits and uppercase letters without I, L, O, U, grouped by four', () => {
    const seen = new Set<string>();
    for (let index = 0; index < 200; index++) {
      const { display, hash } = newRecoveryCode();
      expect(display).toMatch(/^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$/);
      // Stored as SHA-256 of the 16 characters (no hyphens).
      expect(hash).toBe(sha256(display.replaceAll('-', '')));
      for (const character of display.replaceAll('-', '')) seen.add(character);
    }
    expect(seen.size).toBe(32);
  });

  it('reads presented codes leniently, and only as codes of the two shapes', () => {
    const { display, hash } = newRecoveryCode();
    expect(recoveryCodeHash(display.toLowerCase())).toBe(hash);
    expect(recoveryCodeHash(` ${display.replaceAll('-', ' ')} `)).toBe(hash);
    expect(recoveryCodeHash('0I1L-0000-1111-ABCD')).toBe(sha256('011100001111ABCD'));
    expect(recoveryCodeHash('OOOO-IIII-LLLL-ABCD')).toBe(sha256('000011111111ABCD'));
    expect(recoveryCodeHash('ab12-cd34')).toBe(sha256('AB12CD34'));
    for (const bad of ['', 'ABCD', 'ABCD-ABCD-ABCD-ABC', 'ABCD-ABCD-ABCD-ABCU', 'ABCD-ABCD-ABCD-AB!D']) {
      expect(recoveryCodeHash(bad), bad).toBeNull();
    }
  });
});

describe('SecretBox', () => {
  it('round-trips, never stores the plaintext, and refuses tampering or another key', () => {
    const box = new SecretBox('a data encryption key', 'token secret');
    const sealed = box.seal('JBSWY3DPEHPK3PXP');
    expect(sealed).not.toContain('JBSWY3DPEHPK3PXP');
    expect(box.seal('JBSWY3DPEHPK3PXP')).not.toBe(sealed);
    expect(box.open(sealed)).toBe('JBSWY3DPEHPK3PXP');
    const [version, iv, tag, ciphertext] = sealed.split('.') as [string, string, string, string];
    const flipped = `${version}.${iv}.${tag}.${ciphertext.startsWith('A') ? 'B' : 'A'}${ciphertext.slice(1)}`;
    expect(() => box.open(flipped)).toThrow();
    expect(() => new SecretBox('another key', 'token secret').open(sealed)).toThrow();
    // Without a data key the key is derived from the token secret, and differs from it.
    const derived = new SecretBox(null, 'token secret');
    expect(derived.open(derived.seal('x'))).toBe('x');
    expect(() => new SecretBox(null, 'other secret').open(derived.seal('x'))).toThrow();
  });
});

describe('TOTP', () => {
  it('matches the step of a code within one step either way, and nothing else', () => {
    const secret = newTotpSecret();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const now = new Date('2026-01-01T00:00:10Z');
    const step = Math.floor(now.getTime() / 30_000);
    const codeAt = (offset: number) =>
      TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: now.getTime() + offset * 30_000 });
    expect(matchingTotpStep(secret, codeAt(0), now)).toBe(step);
    expect(matchingTotpStep(secret, codeAt(-1), now)).toBe(step - 1);
    expect(matchingTotpStep(secret, codeAt(1), now)).toBe(step + 1);
    expect(matchingTotpStep(secret, codeAt(2), now)).toBeNull();
    expect(matchingTotpStep(secret, 'abcdef', now)).toBeNull();
    expect(matchingTotpStep(secret, `${codeAt(0)}0`, now)).toBeNull();
  });
});
