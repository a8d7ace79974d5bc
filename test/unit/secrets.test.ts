import { describe, expect, it } from 'vitest';
import { constantTimeEquals, keyDigest, SecretBox, sha256 } from '../../src/crypto/secrets.ts';

// Stored hashes (credential secrets, links, recovery codes) and sealed TOTP keys outlive any
// change to how the digests are computed: these vectors come from outside this code (FIPS 180-2,
// Python's hashlib, and a value sealed under a key digested by createHash before the switch to
// the one-shot hash()).
describe('secret digests', () => {
  it('are SHA-256 of the UTF-8 bytes, in hex or as bytes', () => {
    expect(sha256('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256('clé🔑')).toBe('28ad44d30514a2da47fb24d967551075198ffdd287ca1f281a18038e0df3314c');
    expect(keyDigest('clé🔑').toString('hex')).toBe(sha256('clé🔑'));
  });

  it('compare keys by content, whatever their length', () => {
    expect(constantTimeEquals('caller key', 'caller key')).toBe(true);
    expect(constantTimeEquals('caller key', 'caller kez')).toBe(false);
    expect(constantTimeEquals('caller key', 'caller key but longer')).toBe(false);
  });

  it('keep opening what was sealed under a configured data encryption key', () => {
    const box = new SecretBox('clé de chiffrement 🔑', 'a token secret that is not used here');
    expect(box.open('v1.BwcHBwcHBwcHBwcH.4XSqO_WNljB7IXLkSgBaJA.lpc5ziaOYQSUz6ba7KBJAw')).toBe(
      'JBSWY3DPEHPK3PXP',
    );
    expect(() =>
      new SecretBox('another key', 'a token secret that is not used here').open(
        'v1.BwcHBwcHBwcHBwcH.4XSqO_WNljB7IXLkSgBaJA.lpc5ziaOYQSUz6ba7KBJAw',
      ),
    ).toThrow();
  });
});
