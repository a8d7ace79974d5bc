import { describe, expect, it } from 'vitest';
import { sizeThreadPool, THREAD_POOL_SIZE_VARIABLE } from '../../src/threads/thread-pool.ts';

describe("libuv's thread pool size (thread-pool.ts)", () => {
  it('is one thread per credential check at once when the operator set none', () => {
    const unset: NodeJS.ProcessEnv = {};
    sizeThreadPool(3, unset);
    expect(unset[THREAD_POOL_SIZE_VARIABLE]).toBe('3');
    const blank: NodeJS.ProcessEnv = { [THREAD_POOL_SIZE_VARIABLE]: ' ' };
    sizeThreadPool(2, blank);
    expect(blank[THREAD_POOL_SIZE_VARIABLE]).toBe('2');
  });

  it("leaves the operator's value as it is", () => {
    const configured: NodeJS.ProcessEnv = { [THREAD_POOL_SIZE_VARIABLE]: '16' };
    sizeThreadPool(2, configured);
    expect(configured[THREAD_POOL_SIZE_VARIABLE]).toBe('16');
  });
});
