import { describe, expect, it } from 'vitest';
import { newId } from '../../src/crypto/secrets.ts';

describe('row ids', () => {
  it('are UUIDv7: ids made later sort after earlier ones, so new rows append to each id index', () => {
    const ids = Array.from({ length: 1000 }, () => newId());
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('carry their creation time in the first 48 bits', () => {
    const before = Date.now();
    const id = newId();
    const millis = Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16);
    expect(millis).toBeGreaterThanOrEqual(before);
    expect(millis).toBeLessThanOrEqual(Date.now());
  });
});
