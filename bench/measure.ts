import { readFileSync } from 'node:fs';
import autocannon, { type Request } from 'autocannon';

export interface LoadOptions {
  readonly url: string;
  readonly connections: number;
  readonly durationSeconds: number;
  readonly method?: 'GET' | 'POST';
  readonly headers?: Record<string, string>;
  readonly body?: string;
  /** Per-request overrides: a distinct client address, or a distinct body (unique names). */
  readonly perRequest?: () => { headers?: Record<string, string>; body?: string };
}

export interface LoadResult {
  /** The answers over the load's own length (`loadSeconds`), not over the duration asked for. */
  readonly requestsPerSecond: number;
  /**
   * How long autocannon loaded, in seconds. It looks at its duration's timer only at its one-second
   * sample ticks, and the last tick is due at the same moment as the timer: when the tick runs
   * first, the load goes on to the next one. In a probe, three 10 s runs of eight loaded for 11 s,
   * and their answers counted all 11.
   */
  readonly loadSeconds: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly total: number;
  /**
   * The share of the machine's CPU time (all cores) that was idle during the run. Near 0, the
   * machine was saturated: the service, the load generator and the kernel's work for both used
   * every core, however idle each HTTP thread looked.
   */
  readonly machineIdleShare: number;
  /** The load generator's CPU time (this process, autocannon) per second of the run, in cores. */
  readonly loadGeneratorCores: number;
}

/** One autocannon run; latencies are collected per response so p95 is exact. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const latencies: number[] = [];
  const machine = meterMachine();
  const baseHeaders = { 'content-type': 'application/json', ...options.headers };
  // Without a callback autocannon returns its instance, which is both an event emitter and a promise.
  const instance = autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.durationSeconds,
    method: options.method ?? 'GET',
    headers: baseHeaders,
    ...(options.body === undefined ? {} : { body: options.body }),
    ...(options.perRequest === undefined
      ? {}
      : {
          requests: [
            {
              setupRequest: (request: Request): Request => {
                const override = options.perRequest!();
                return {
                  ...request,
                  headers: { ...baseHeaders, ...override.headers },
                  ...(override.body === undefined ? {} : { body: override.body }),
                };
              },
            },
          ],
        }),
  }) as unknown as PromiseLike<autocannon.Result> & NodeJS.EventEmitter;
  instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
    latencies.push(responseTime);
  });
  const result = await instance;
  return {
    requestsPerSecond: Math.round(result.requests.total / result.duration),
    loadSeconds: result.duration,
    ...percentiles(latencies),
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    total: result.requests.total,
    ...machine.read(),
  };
}

type MachineShares = Pick<LoadResult, 'machineIdleShare' | 'loadGeneratorCores'>;

/** Starts metering the machine's idle time and this process's CPU time; `read` gives the shares since. */
export function meterMachine(): { read(): MachineShares } {
  const machineBefore = machineCpuTicks();
  const loadGeneratorBefore = process.cpuUsage();
  const started = performance.now();
  return {
    read: () => {
      const machine = machineCpuTicks();
      const loadGenerator = process.cpuUsage(loadGeneratorBefore);
      const elapsedSeconds = (performance.now() - started) / 1000;
      return {
        machineIdleShare: roundToHundredths(
          (machine.idle - machineBefore.idle) / (machine.total - machineBefore.total),
        ),
        loadGeneratorCores: roundToHundredths(
          (loadGenerator.user + loadGenerator.system) / 1e6 / elapsedSeconds,
        ),
      };
    },
  };
}

/** The machine's CPU time since boot, all cores together (Linux: the first line of /proc/stat). */
function machineCpuTicks(): { idle: number; total: number } {
  const ticks = readFileSync('/proc/stat', 'utf8')
    .split('\n', 1)[0]!
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already counted in user).
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = ticks;
  return { idle: idle + iowait, total: user + nice + system + idle + iowait + irq + softirq + steal };
}

/** To one decimal place (rates of rare events, such as stalls a second). */
export const roundToTenths = (value: number) => Math.round(value * 10) / 10;

/** To two decimal places, as the figures are shown and kept. */
export const roundToHundredths = (value: number) => Math.round(value * 100) / 100;

/** To three decimal places, as ratios and shares are shown and kept. */
export const roundToThousandths = (value: number) => Math.round(value * 1000) / 1000;

/**
 * One autocannon run whose every connection sends a body of each kind in turn (POST), with a
 * result per kind; each kind's function makes its body afresh for every request (the wrong
 * passwords go to many accounts). The kinds go over the same connections at the same moments,
 * so a difference between their timings is the service's, not the machine's or the
 * connections' (with several HTTP threads, two separate runs' connections land on the threads
 * differently).
 *
 * The times of each connection's first round (one answer of each kind) are left out of the
 * percentiles, though counted in the throughput: every connection opens with the first body, all
 * at once, and meets an empty queue, so the first kind's opening requests waited for fewer
 * requests ahead of them than any later request of either kind did. Where requests queue (the
 * sign-ins: 32 connections, one check per core) that made the first kind look faster: on a
 * machine with 14 ms hashes, 249.94 against 263.69 ms in median (docs/performance-history.md,
 * twenty-fifth round).
 */
export async function runInterleaved(
  options: LoadOptions,
  bodies: readonly (() => string)[],
): Promise<LoadResult[]> {
  const latencies = bodies.map((): number[] => []);
  const answers = bodies.map(() => 0);
  const non2xx = bodies.map(() => 0);
  const answeredOn = new Map<unknown, number>();
  // autocannon calls a request's onResponse just before it reports that response's time.
  let answered = 0;
  const headers = { 'content-type': 'application/json', ...options.headers };
  const machine = meterMachine();
  const instance = autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.durationSeconds,
    requests: bodies.map((body, kind) => ({
      method: 'POST' as const,
      onResponse: (status: number) => {
        answered = kind;
        if (status < 200 || status > 299) non2xx[kind]! += 1;
      },
      setupRequest: (request: Request): Request => ({
        ...request,
        body: body(),
        headers: { ...headers, ...options.perRequest?.().headers },
      }),
    })),
  }) as unknown as PromiseLike<autocannon.Result> & NodeJS.EventEmitter;
  instance.on('response', (client: unknown, _status: number, _bytes: number, responseTime: number) => {
    answers[answered]! += 1;
    const answeredBefore = answeredOn.get(client) ?? 0;
    answeredOn.set(client, answeredBefore + 1);
    if (answeredBefore >= bodies.length) latencies[answered]!.push(responseTime);
  });
  const result = await instance;
  const shares = machine.read();
  return latencies.map((times, kind) => ({
    requestsPerSecond: Math.round(answers[kind]! / result.duration),
    loadSeconds: result.duration,
    ...percentiles(times),
    non2xx: non2xx[kind]!,
    errors: result.errors + result.timeouts,
    total: answers[kind]!,
    ...shares,
  }));
}

function percentiles(latencies: number[]): Pick<LoadResult, 'p50' | 'p95' | 'p99'> {
  latencies.sort((a, b) => a - b);
  const percentile = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
  return {
    p50: roundToHundredths(percentile(50)),
    p95: roundToHundredths(percentile(95)),
    p99: roundToHundredths(percentile(99)),
  };
}
