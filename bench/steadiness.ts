import { once } from 'node:events';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { roundToHundredths, roundToTenths, roundToThousandths } from './measure.ts';

/** What the busy threads of one pass saw, all threads together. */
export interface SteadinessPass {
  readonly threads: number;
  /** A unit of work's usual time, the units that were held up left out, in nanoseconds. */
  readonly nanosecondsPerUnit: number;
  /** Units that took 1 ms or longer (a unit takes well under a microsecond), per thread-second. */
  readonly stallsOver1MsPerSecond: number;
  readonly stallsOver5MsPerSecond: number;
  readonly longestStallMs: number;
  /** The share of the threads' time spent in units of 0.1 ms or longer: time they did not run. */
  readonly heldUpShare: number;
}

/**
 * The machine's steadiness, measured before anything else runs: busy threads repeat a fixed unit
 * of work and time each (bench/steadiness-thread.ts), first one thread alone, then one per core.
 * A unit far longer than usual is time a thread was held up while it wanted to run; on an idle
 * machine the kernel has little else to give its core to, so what remains is mostly the host's.
 * With every core busy, the usual unit's time also tells how much slower a core runs when its
 * neighbours run too. The scenarios' tails sit on top of whatever this shows
 * (docs/performance.md, "The machine's steadiness").
 */
export async function measureSteadiness(seconds: number): Promise<SteadinessPass[]> {
  const passes: SteadinessPass[] = [];
  for (const threads of new Set([1, availableParallelism()])) passes.push(await runPass(threads, seconds));
  return passes;
}

interface ThreadReport {
  readonly elapsedMs: number;
  readonly units: number;
  readonly heldUpUnits: number;
  readonly heldUpMs: number;
  readonly stallsOver1Ms: number;
  readonly stallsOver5Ms: number;
  readonly longestMs: number;
}

async function runPass(threads: number, seconds: number): Promise<SteadinessPass> {
  const reports = await Promise.all(
    Array.from({ length: threads }, async () => {
      const worker = new Worker(new URL('./steadiness-thread.ts', import.meta.url), {
        workerData: { seconds },
      });
      const [report] = (await once(worker, 'message')) as [ThreadReport];
      await worker.terminate();
      return report;
    }),
  );
  const sum = (pick: (report: ThreadReport) => number) => reports.reduce((total, r) => total + pick(r), 0);
  const elapsedMs = sum((r) => r.elapsedMs);
  const heldUpMs = sum((r) => r.heldUpMs);
  const elapsedSeconds = elapsedMs / 1000;
  return {
    threads,
    nanosecondsPerUnit: Math.round(((elapsedMs - heldUpMs) * 1e6) / sum((r) => r.units - r.heldUpUnits)),
    stallsOver1MsPerSecond: roundToTenths(sum((r) => r.stallsOver1Ms) / elapsedSeconds),
    stallsOver5MsPerSecond: roundToTenths(sum((r) => r.stallsOver5Ms) / elapsedSeconds),
    longestStallMs: roundToHundredths(Math.max(...reports.map((r) => r.longestMs))),
    heldUpShare: roundToThousandths(heldUpMs / elapsedMs),
  };
}

/** One line per pass, each later pass's unit compared with the first's (one thread alone). */
export function describeSteadiness(passes: readonly SteadinessPass[]): string {
  const alone = passes[0]!;
  return passes
    .map((pass) => {
      const change = Math.round((pass.nanosecondsPerUnit / alone.nanosecondsPerUnit - 1) * 100);
      const againstAlone = pass === alone ? '' : ` (${change >= 0 ? '+' : ''}${change} % against one alone)`;
      return (
        `  ${pass.threads} busy ${pass.threads === 1 ? 'thread' : 'threads'}: ${pass.nanosecondsPerUnit} ns a unit${againstAlone}, ` +
        `stalls of 1 ms or more ${pass.stallsOver1MsPerSecond}/s a thread (5 ms or more ${pass.stallsOver5MsPerSecond}/s), ` +
        `longest ${pass.longestStallMs} ms, held up ${(pass.heldUpShare * 100).toFixed(1)} % of the time`
      );
    })
    .join('\n');
}
