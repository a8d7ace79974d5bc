import type { ConcurrencyBound } from '../../src/crypto/concurrency.ts';

export const STRESS_RUNS = 200;

/**
 * Runs STRESS_RUNS short works under `bound`, all asked at once; each counts itself in the
 * shared `running` cell while it runs, so threads that share the bound count together. Returns
 * the highest count this thread saw.
 */
export async function stress(bound: ConcurrencyBound, running: Int32Array): Promise<number> {
  let peak = 0;
  await Promise.all(
    Array.from({ length: STRESS_RUNS }, () =>
      bound.run(async () => {
        peak = Math.max(peak, Atomics.add(running, 0, 1) + 1);
        await new Promise((resolve) => setImmediate(resolve));
        Atomics.sub(running, 0, 1);
      }, 10_000),
    ),
  );
  return peak;
}
