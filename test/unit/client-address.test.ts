import { describe, expect, it } from 'vitest';
import { addressGroup, normalizeAddress } from '../../src/http/client-address.ts';

describe('address grouping', () => {
  it('counts IPv6 addresses by their /56 prefix', () => {
    expect(addressGroup('2001:db8:aa:bb00::1')).toBe('2001:db8:aa:bb00::/56');
    // Same /56 (only the low byte of the fourth group differs): one bucket.
    expect(addressGroup('2001:db8:aa:bbff:1:2:3:4')).toBe(addressGroup('2001:db8:aa:bb01::9'));
    // Next /56: another bucket.
    expect(addressGroup('2001:db8:aa:bc00::1')).not.toBe(addressGroup('2001:db8:aa:bb00::1'));
  });

  it('keeps IPv4 addresses whole and unwraps IPv4-mapped IPv6', () => {
    expect(addressGroup('203.0.113.7')).toBe('203.0.113.7');
    expect(normalizeAddress('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });

  it('rejects what is not an address', () => {
    expect(normalizeAddress('not-an-ip')).toBeNull();
    expect(normalizeAddress('')).toBeNull();
    expect(normalizeAddress('[2001:db8::1]')).toBe('2001:db8:0:0:0:0:0:1');
  });
});
