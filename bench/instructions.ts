import { spawn } from 'node:child_process';
import { once } from 'node:events';

/**
 * Counts the instructions a process executes (all its threads, user and kernel) while `run`
 * runs, with Linux `perf stat`. CPU time per request moves with how busy the machine is (both
 * cores busy, caches shared with the load generator); the instructions a request takes move far
 * less, so two builds compared in alternating pairs tell apart in fewer runs
 * (docs/performance.md, How to run). Null when perf is missing or may not read the process's
 * counters.
 */
export async function countInstructions<T>(
  pid: number,
  run: () => Promise<T>,
): Promise<{ result: T; instructions: number | null }> {
  const perf = spawn('perf', ['stat', '-x', ',', '-e', 'instructions', '-p', String(pid)], {
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
  if (!started) return { result: await run(), instructions: null };
  let result: T;
  try {
    result = await run();
  } finally {
    perf.kill('SIGINT');
    await exited;
  }
  // CSV: "<count>,<unit>,instructions,..."; "<not counted>" or "<not supported>" without counters.
  const line = report.split('\n').find((entry) => entry.includes(',instructions'));
  const count = Number(line?.split(',')[0]);
  return { result, instructions: Number.isFinite(count) && count > 0 ? count : null };
}
