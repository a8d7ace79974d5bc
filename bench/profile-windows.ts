/**
 * Takes the service's CPU profiles from a `--profile` run apart window by window
 * (`node bench/profile-windows.ts [directory]`, default bench/profiles; run it on one run's profiles).
 *
 * Node writes one profile per thread. The service's HTTP threads are its two busiest; between two
 * measured windows they idle while the bench measures its reference (the floor or the raw Argon2id
 * threads), so the windows show as busy stretches of their samples (a warm-up and a run each, the
 * reference measured between the two). For each stretch the tool prints the two threads' sampled
 * busy time and where it went, function by function (self time): set against each window's request
 * count it tells what a window's requests cost more than another's, and whether one function or the
 * whole path (the fifty-eighth round's question about a fresh service's first minute of sign-ins)
 * carries the difference.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { busyStretches, httpThreadsOf, threadsByProcess } from './busy-stretches.ts';

/** The V8 CPU profile format (`.cpuprofile`), as much of it as the tool reads. */
interface CpuProfile {
  readonly nodes: readonly {
    readonly id: number;
    readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  }[];
  readonly startTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** One thread's samples: when each was taken, how long it stood for (µs), and what ran. */
interface ThreadSamples {
  readonly file: string;
  readonly at: Float64Array;
  readonly weight: Float64Array;
  readonly what: readonly string[];
  readonly busyMicros: number;
}

const IDLE = '(idle)';
const BIN_MICROS = 1_000_000;
// A second is busy when the busier thread is busy over 1 % of it; a quiet second is bridged (inside
// a warm-up or a run; the reference between the two takes longer) and a stretch is three seconds
// long at least.
const BUSY_SHARE = 0.01;
const STRETCHES = { bridgedSeconds: 1, shortestSeconds: 3 };
const TOP_FUNCTIONS = 25;

function readThread(file: string): ThreadSamples {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const names = new Map<number, string>();
  for (const { id, callFrame } of profile.nodes) {
    const { functionName, url, lineNumber } = callFrame;
    const isVmState = functionName.startsWith('(');
    names.set(
      id,
      isVmState
        ? functionName
        : `${functionName || '(anonymous)'} ${url ? `${basename(url)}:${lineNumber + 1}` : '(native)'}`,
    );
  }
  const count = profile.samples.length;
  const at = new Float64Array(count);
  const weight = new Float64Array(count);
  const what: string[] = [];
  let time = profile.startTime;
  let busyMicros = 0;
  for (let index = 0; index < count; index += 1) {
    time += profile.timeDeltas[index] ?? 0;
    at[index] = time;
    // A sample stands for the time until the next one.
    weight[index] = profile.timeDeltas[index + 1] ?? 0;
    const name = names.get(profile.samples[index] ?? -1) ?? IDLE;
    what.push(name);
    if (name !== IDLE) busyMicros += weight[index] ?? 0;
  }
  return { file, at, weight, what, busyMicros };
}

function windowsOf(thread: ThreadSamples): { readonly from: number; readonly to: number }[] {
  const start = thread.at[0] ?? 0;
  const bins: { all: number; busy: number }[] = [];
  thread.at.forEach((time, index) => {
    const bin = Math.floor((time - start) / BIN_MICROS);
    bins[bin] ??= { all: 0, busy: 0 };
    bins[bin].all += thread.weight[index] ?? 0;
    if (thread.what[index] !== IDLE) bins[bin].busy += thread.weight[index] ?? 0;
  });
  const isBusy = (bin: number) => {
    const counts = bins[bin];
    return counts !== undefined && counts.all !== 0 && counts.busy / counts.all > BUSY_SHARE;
  };
  return busyStretches(bins.length, isBusy, STRETCHES).map(({ first, last }) => ({
    from: start + first * BIN_MICROS,
    to: start + (last + 1) * BIN_MICROS,
  }));
}

const directory = process.argv[2] ?? join(import.meta.dirname, 'profiles');
if (!existsSync(directory)) {
  console.error(
    `No directory ${directory}: run the bench with --profile first, or name the profiles' directory.`,
  );
  process.exit(1);
}
// CPU.<date>.<time>.<process id>.<thread id>.<sequence>.cpuprofile
const byProcess = threadsByProcess(
  directory,
  (fileName) => (fileName.endsWith('.cpuprofile') ? (fileName.split('.')[3] ?? fileName) : undefined),
  readThread,
);
const httpThreads = httpThreadsOf(byProcess, (thread) => thread.busyMicros);
if (httpThreads === undefined) {
  console.error(`No process with two profiled threads in ${directory}: run the bench with --profile first.`);
  process.exit(1);
}
const windows = windowsOf(httpThreads[0]);
const start = httpThreads[0].at[0] ?? 0;

const spent = windows.map(({ from, to }) => {
  const byFunction = new Map<string, number>();
  for (const thread of httpThreads) {
    thread.at.forEach((time, index) => {
      const name = thread.what[index] ?? IDLE;
      if (time < from || time >= to || name === IDLE) return;
      byFunction.set(name, (byFunction.get(name) ?? 0) + (thread.weight[index] ?? 0));
    });
  }
  return byFunction;
});
const total = (byFunction: ReadonlyMap<string, number>) =>
  [...byFunction.values()].reduce((sum, micros) => sum + micros, 0);
const overall = new Map<string, number>();
for (const byFunction of spent)
  for (const [name, micros] of byFunction) overall.set(name, (overall.get(name) ?? 0) + micros);

const column = (text: string) => text.padStart(9);
const milliseconds = (micros: number) => column((micros / 1000).toFixed(1));
console.log(`The HTTP threads: ${httpThreads.map((thread) => basename(thread.file)).join(', ')}`);
console.log(
  "Busy time of the two HTTP threads, ms, stretch by stretch (a window's warm-up, then its run; seconds from the first sample):",
);
console.log(
  `${''.padStart(60)}${windows.map(({ from, to }) => column(`${Math.round((from - start) / 1e6)}–${Math.round((to - start) / 1e6)}`)).join('')}`,
);
console.log(`${'all'.padStart(60)}${spent.map((byFunction) => milliseconds(total(byFunction))).join('')}`);
for (const [name] of [...overall].sort((a, b) => b[1] - a[1]).slice(0, TOP_FUNCTIONS)) {
  console.log(
    `${name.slice(0, 58).padStart(60)}${spent.map((byFunction) => milliseconds(byFunction.get(name) ?? 0)).join('')}`,
  );
}
