/**
 * Takes the service's V8 logs from a `--prof` run apart window by window
 * (`node bench/tier-windows.ts <directory>`; run it on one run's logs):
 *
 *   npm run bench -- --only login --runs 1 --skip-bulk --connections 32,32,32,32 \
 *     --service-node-options="--prof --log-deopt --log-timer-events --logfile=/tmp/v8-logs/v8-%p.log"
 *   node bench/tier-windows.ts /tmp/v8-logs
 *
 * `--prof` makes V8 write one log per thread (isolate): a sample of where the thread was, about
 * every millisecond ("tick"), and every piece of code it made, with the tier that made it: a
 * function's bytecode runs in Ignition, the interpreter, and as a function grows hot V8 compiles it
 * again with Sparkplug (baseline code), then Maglev and Turbofan (optimized code). The tool finds the
 * service's two HTTP threads (its two busiest), the measured windows as busy stretches of their
 * ticks (as `bench/profile-windows.ts` does with a profile's samples), and prints for each stretch
 * where the ticks landed, tier by tier, with the functions compiled to each tier and the
 * deoptimizations in it: what tells code V8 has not optimized yet (the fifty-eighth round's
 * suggestion about a fresh service's first minute of sign-ins) from code that is simply slow. With
 * `--log-timer-events` the logs also time each garbage collection, and the tool counts the full
 * collections, marking those of V8's memory reducer, which runs them some seconds after a thread's
 * allocation falls off (in the sixtieth round each of them deoptimized a burst of functions).
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { busyStretches, httpThreadsOf, threadsByProcess } from './busy-stretches.ts';

/** Where a tick landed: a tier of JavaScript, V8's own code, or native code outside V8's heap. */
const PLACES = [
  'Ignition',
  'Sparkplug',
  'Maglev',
  'Turbofan',
  'builtins',
  'regexp',
  'GC',
  'compiling',
  'native (node)',
  'native (other)',
  'libc',
] as const;
type Place = (typeof PLACES)[number];
/** Where a busy thread's ticks land: everywhere but libc, where an idle one waits. */
const BUSY_PLACES: readonly Place[] = PLACES.filter((place) => place !== 'libc');
/** The tiers a function's code is compiled to, by the state V8 logs with it. */
const TIER_BY_STATE: Readonly<Record<string, Place>> = {
  '~': 'Ignition',
  '^': 'Sparkplug',
  '+': 'Maglev',
  '*': 'Turbofan',
};
/** V8's VM states (`StateTag`) that say where a tick landed whatever the code address. */
const GC_STATE = 1;
const COMPILING_STATES = new Set([2, 3, 4]); // parser, bytecode compiler, compiler
const BIN_MICROS = 1_000_000;
/**
 * A full collection's top-level timer event: V8.GC.Event.MainThread.Full.Finalize.<Incremental or
 * NonIncremental>.<Regular or ReduceMemory> (its .Foreground part is logged beside it).
 */
const FULL_COLLECTION = /^V8\.GC\.Event\.MainThread\.Full\.Finalize\.\w+\.(Regular|ReduceMemory)$/;
// A second is busy when a tenth as many ticks landed outside libc (where an idle thread waits, in
// epoll) as in the thread's busiest second: the sampler ticks on an idle thread too, and less often
// on some threads than on others. Gaps of a second are bridged and a stretch is three seconds at
// least. The first second, the service starting, is left out.
const BUSY_SHARE_OF_PEAK = 0.1;
const STRETCHES = { bridgedSeconds: 1, shortestSeconds: 3 };

interface Tick {
  readonly at: number;
  readonly place: Place;
}
interface ThreadLog {
  readonly file: string;
  readonly ticks: readonly Tick[];
  /**
   * When code of each optimizing tier was made, when code was deoptimized, and when a full
   * collection began, regular or reducing memory (µs).
   */
  readonly events: readonly { readonly at: number; readonly what: string }[];
  readonly busyTicks: number;
  /** Whether the log times collections at all (`--log-timer-events`). */
  readonly timesCollections: boolean;
}

/** Code ranges by start address, kept sorted so that a tick's address finds its code. */
class CodeMap {
  private readonly starts: number[] = [];
  private readonly code = new Map<number, { end: number; place: Place }>();

  add(start: number, size: number, place: Place) {
    if (!this.code.has(start)) this.starts.splice(this.insertionPoint(start), 0, start);
    this.code.set(start, { end: start + size, place });
  }

  move(from: number, to: number) {
    const moved = this.code.get(from);
    if (moved === undefined) return;
    this.remove(from);
    this.add(to, moved.end - from, moved.place);
  }

  remove(start: number) {
    if (!this.code.delete(start)) return;
    this.starts.splice(this.insertionPoint(start), 1);
  }

  find(address: number): Place | undefined {
    const start = this.starts[this.insertionPoint(address + 1) - 1];
    const found = start === undefined ? undefined : this.code.get(start);
    return found !== undefined && address < found.end ? found.place : undefined;
  }

  /** The index of the first start at or above `address`. */
  private insertionPoint(address: number) {
    let low = 0;
    let high = this.starts.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if ((this.starts[middle] ?? 0) < address) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}

/**
 * A piece of code's place: a function's by the tier V8 logs with it (a trailing ' marks code
 * entered mid-loop, on-stack replacement); bytecode handlers and the interpreter's builtins are
 * Ignition's, the builtins Sparkplug's code calls (named ...Baseline) Sparkplug's, the rest builtins.
 */
function placeOfCode(type: string, name: string, state: string | undefined): Place {
  if (type === 'JS') return TIER_BY_STATE[state?.replace("'", '') ?? ''] ?? 'Ignition';
  if (type === 'BytecodeHandler') return 'Ignition';
  if (type === 'RegExp') return 'regexp';
  if (name.startsWith('Interpreter')) return 'Ignition';
  if (name.includes('Baseline')) return 'Sparkplug';
  return 'builtins';
}

function readThread(file: string): ThreadLog {
  const code = new CodeMap();
  const libraries: { start: number; end: number; place: Place }[] = [];
  const ticks: Tick[] = [];
  const events: { at: number; what: string }[] = [];
  let busyTicks = 0;
  let timesCollections = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const fields = line.split(',');
    switch (fields[0]) {
      case 'code-creation': {
        // code-creation,<type>,<kind>,<time>,<address>,<size>,<name>[,<function info>,<state>]
        const [, type = '', , time = '0', address = '0', size = '0', name = ''] = fields;
        const state = type === 'JS' && fields.length >= 9 ? fields.at(-1) : undefined;
        const place = placeOfCode(type, name, state);
        code.add(Number.parseInt(address, 16), Number(size), place);
        if (state !== undefined && place !== 'Ignition') events.push({ at: Number(time), what: place });
        break;
      }
      case 'code-move':
        code.move(Number.parseInt(fields[1] ?? '0', 16), Number.parseInt(fields[2] ?? '0', 16));
        break;
      case 'code-delete':
        code.remove(Number.parseInt(fields[1] ?? '0', 16));
        break;
      case 'shared-library': {
        const [, name = '', start = '0', end = '0'] = fields;
        libraries.push({
          start: Number.parseInt(start, 16),
          end: Number.parseInt(end, 16),
          place: /libc\.so/.test(name) ? 'libc' : /\/node$/.test(name) ? 'native (node)' : 'native (other)',
        });
        break;
      }
      case 'code-deopt':
        events.push({ at: Number(fields[1]), what: 'deoptimized' });
        break;
      case 'timer-event-start': {
        // timer-event-start,<event>,<time>
        const kind = FULL_COLLECTION.exec(fields[1] ?? '')?.[1];
        if (fields[1]?.startsWith('V8.GC')) timesCollections = true;
        if (kind !== undefined) events.push({ at: Number(fields[2]), what: kind });
        break;
      }
      case 'tick': {
        // tick,<address>,<time>,<external callback?>,<top of stack or callback>,<VM state>,...
        const address = Number.parseInt(fields[1] ?? '0', 16);
        const state = Number(fields[5]);
        const place: Place =
          (state === GC_STATE && 'GC') ||
          (COMPILING_STATES.has(state) && 'compiling') ||
          code.find(address) ||
          libraries.find(({ start, end }) => address >= start && address < end)?.place ||
          'native (other)';
        ticks.push({ at: Number(fields[2]), place });
        if (place !== 'libc') busyTicks += 1;
        break;
      }
    }
  }
  return { file, ticks, events, busyTicks, timesCollections };
}

function windowsOf(thread: ThreadLog): { readonly from: number; readonly to: number }[] {
  const busyByBin: number[] = [];
  for (const { at, place } of thread.ticks) {
    const bin = Math.floor(at / BIN_MICROS);
    busyByBin[bin] = (busyByBin[bin] ?? 0) + (place === 'libc' ? 0 : 1);
  }
  // Array.from fills the seconds without a tick (holes) with zeros.
  const peak = Math.max(0, ...Array.from(busyByBin.slice(1), (busy) => busy ?? 0));
  const isBusy = (bin: number) => (busyByBin[bin] ?? 0) >= BUSY_SHARE_OF_PEAK * peak;
  return busyStretches(busyByBin.length, isBusy, STRETCHES).map(({ first, last }) => ({
    from: first * BIN_MICROS,
    to: (last + 1) * BIN_MICROS,
  }));
}

const directory = process.argv[2];
if (directory === undefined || !existsSync(directory)) {
  console.error(
    `No directory ${directory ?? '(none named)'}: run the bench with --service-node-options="--prof ` +
      '--log-deopt --log-timer-events --logfile=<directory>/v8-%p.log" first, then name the directory.',
  );
  process.exit(1);
}
// isolate-<isolate address>-<process id>-v8-<process id>.log
const byProcess = threadsByProcess(
  directory,
  (fileName) => (/^isolate-.*\.log$/.test(fileName) ? (fileName.split('-')[2] ?? fileName) : undefined),
  readThread,
);
const httpThreads = httpThreadsOf(byProcess, (thread) => thread.busyTicks);
if (httpThreads === undefined) {
  console.error(`No process with two logged threads in ${directory}: run the bench with --prof first.`);
  process.exit(1);
}
// Each thread's log times its events from that thread's own start, so each finds its own windows.
const windowsByThread = httpThreads.map((thread) => windowsOf(thread));
if (windowsByThread[0]?.length !== windowsByThread[1]?.length) {
  console.error(
    `The two HTTP threads show ${windowsByThread.map((windows) => windows.length).join(' and ')} busy stretches: ` +
      "too different to set side by side (was the directory one run's logs?).",
  );
  process.exit(1);
}
type Window = { readonly from: number; readonly to: number };
const inWindow = (at: number, { from, to }: Window) => at >= from && at < to;
/** Sums a count over the two threads, each in its own `index`-th stretch. */
const overThreads = (index: number, count: (thread: ThreadLog, window: Window) => number) =>
  httpThreads.reduce((sum, thread, threadIndex) => {
    const window = windowsByThread[threadIndex]?.[index];
    return window === undefined ? sum : sum + count(thread, window);
  }, 0);
const ticksAt = (index: number, places: readonly Place[]) =>
  overThreads(
    index,
    (thread, window) =>
      thread.ticks.filter(({ at, place }) => inWindow(at, window) && places.includes(place)).length,
  );
const eventsAt = (index: number, what: string) =>
  overThreads(
    index,
    (thread, window) =>
      thread.events.filter((event) => event.what === what && inWindow(event.at, window)).length,
  );

const column = (text: string | number) => String(text).padStart(9);
const stretches = windowsByThread[0] ?? [];
const row = (label: string, count: (index: number) => number) =>
  console.log(`${label.padStart(28)}${stretches.map((_, index) => column(count(index))).join('')}`);
console.log(`The HTTP threads: ${httpThreads.map((thread) => basename(thread.file)).join(', ')}`);
console.log(
  "Ticks of the two HTTP threads (about a millisecond each), stretch by stretch (a window's warm-up, then its run;\n" +
    "seconds from the busier thread's start), by where they landed, and what V8 compiled and deoptimized there:",
);
console.log(
  `${''.padStart(28)}${stretches.map(({ from, to }) => column(`${from / BIN_MICROS}–${to / BIN_MICROS}`)).join('')}`,
);
row('busy (all but libc)', (index) => ticksAt(index, BUSY_PLACES));
for (const place of PLACES) row(place, (index) => ticksAt(index, [place]));
for (const tier of ['Sparkplug', 'Maglev', 'Turbofan'] as const)
  row(`compiled to ${tier}`, (index) => eventsAt(index, tier));
row('deoptimizations', (index) => eventsAt(index, 'deoptimized'));
if (httpThreads.every((thread) => thread.timesCollections)) {
  row('full collections', (index) => eventsAt(index, 'Regular') + eventsAt(index, 'ReduceMemory'));
  row('of them reducing memory', (index) => eventsAt(index, 'ReduceMemory'));
  // The memory reducer's collections come after quiet spells, often between the windows.
  const reducing = httpThreads.map((thread) =>
    thread.events
      .filter(({ what }) => what === 'ReduceMemory')
      .map(({ at }) => (at / BIN_MICROS).toFixed(1))
      .join(', '),
  );
  console.log(
    `Full collections reducing memory, seconds from each thread's start: ${reducing.map((at) => at || 'none').join('; ')}`,
  );
} else console.log('(Full collections not counted: the logs time none; add --log-timer-events.)');
