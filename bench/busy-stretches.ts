import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What `bench/profile-windows.ts` and `bench/tier-windows.ts` share: the bench's measured windows
 * found as busy stretches of a thread's seconds (between two windows the service idles while the
 * bench measures its reference), and the service's HTTP threads found among the threads a run
 * left behind.
 */

/** A stretch of whole seconds from a thread's start, the first and the last included. */
export interface Stretch {
  readonly first: number;
  readonly last: number;
}

/**
 * The busy stretches among a thread's first `seconds` seconds: busy seconds joined across quiet
 * gaps of up to `bridgedSeconds`, kept when `shortestSeconds` long at least. Second 0, the
 * service starting, is left out.
 */
export function busyStretches(
  seconds: number,
  isBusy: (second: number) => boolean,
  { bridgedSeconds, shortestSeconds }: { readonly bridgedSeconds: number; readonly shortestSeconds: number },
): Stretch[] {
  const stretches: { first: number; last: number }[] = [];
  for (let second = 1; second < seconds; second += 1) {
    if (!isBusy(second)) continue;
    const previous = stretches.at(-1);
    if (previous !== undefined && second - previous.last - 1 <= bridgedSeconds) previous.last = second;
    else stretches.push({ first: second, last: second });
  }
  return stretches.filter(({ first, last }) => last - first + 1 >= shortestSeconds);
}

/**
 * A run's per-thread files in `directory`, read and grouped by the process that wrote them;
 * `processIdOf` reads the process id from a file's name, and passes over other files (undefined).
 */
export function threadsByProcess<Thread>(
  directory: string,
  processIdOf: (fileName: string) => string | undefined,
  read: (path: string) => Thread,
): Map<string, Thread[]> {
  const byProcess = new Map<string, Thread[]>();
  for (const fileName of readdirSync(directory)) {
    const processId = processIdOf(fileName);
    if (processId === undefined) continue;
    byProcess.set(processId, [...(byProcess.get(processId) ?? []), read(join(directory, fileName))]);
  }
  return byProcess;
}

/**
 * The service's two HTTP threads, busiest first: the two busiest threads of the process whose
 * busiest thread is the busiest of all (the service's first start, which fills the compile cache,
 * leaves its threads too). Undefined when that process has fewer than two.
 */
export function httpThreadsOf<Thread>(
  threadsByProcess: ReadonlyMap<string, readonly Thread[]>,
  busyOf: (thread: Thread) => number,
): readonly [Thread, Thread] | undefined {
  const [busiest, next] =
    [...threadsByProcess.values()]
      .map((threads) => [...threads].sort((a, b) => busyOf(b) - busyOf(a)))
      .sort((a, b) => (b[0] === undefined ? 0 : busyOf(b[0])) - (a[0] === undefined ? 0 : busyOf(a[0])))[0] ??
    [];
  return busiest === undefined || next === undefined ? undefined : [busiest, next];
}
