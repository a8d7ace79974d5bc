import { spawn } from 'node:child_process';
import { once } from 'node:events';

/**
 * Counts Linux `perf` events of a process (all its threads, user and kernel) while `run` runs,
 * with `perf stat` attached to it. Each event's count is null where perf is missing or may not
 * count it (no hardware counters on a virtual machine, say).
 *
 * - `instructions` (--instructions): CPU time per request moves with how busy the machine is
 *   (both cores busy, caches shared with the load generator); the instructions a request takes
 *   move far less, so two builds compared in alternating pairs tell apart in fewer runs.
 * - `syscalls:sys_enter_pwrite64` and `syscalls:sys_enter_pread64` (--file-io): SQLite writes
 *   each page of a commit to the log, and reads each page its connection no longer caches, with
 *   one such call (a log frame takes two: its header, then the page). Tracepoints count every
 *   call, so the figure is exact, and they need no hardware counters.
 *
 * See docs/performance.md, How to run.
 */
export async function countPerfEvents<T, Event extends string>(
  pid: number,
  events: readonly Event[],
  run: () => Promise<T>,
): Promise<{ result: T; counts: Record<Event, number | null> }> {
  const none = Object.fromEntries(events.map((event) => [event, null])) as Record<Event, number | null>;
  const perf = spawn('perf', ['stat', '-x', ',', '-e', events.join(','), '-p', String(pid)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let report = '';
  perf.stderr.on('data', (chunk: Buffer) => {
    report += chunk.toString();
  });
  const exited = once(perf, 'close').catch(() => undefined);
  // events.once rejects on 'error': perf is not installed.
  const started = await once(perf, 'spawn').then(
    () => true,
    () => false,
  );
  if (!started) return { result: await run(), counts: none };
  let result: T;
  try {
    result = await run();
  } finally {
    perf.kill('SIGINT');
    await exited;
  }
  // CSV, a line per event: "<count>,<unit>,<event>,..."; the count is "<not counted>" or
  // "<not supported>" where perf cannot count the event.
  const counts = { ...none };
  for (const line of report.split('\n')) {
    const [count, , event] = line.split(',');
    if (!events.includes(event as Event)) continue;
    // Zero is a count (a request that writes nothing); an empty or non-numeric field is not.
    const value = count === undefined || count.trim() === '' ? Number.NaN : Number(count);
    counts[event as Event] = Number.isFinite(value) ? value : null;
  }
  return { result, counts };
}
