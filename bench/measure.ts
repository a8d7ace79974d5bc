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
  readonly requestsPerSecond: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly total: number;
}

/** One autocannon run; latencies are collected per response so p95 is exact. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const latencies: number[] = [];
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
    requestsPerSecond: Math.round(result.requests.total / options.durationSeconds),
    ...percentiles(latencies),
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    total: result.requests.total,
  };
}

/**
 * One autocannon run whose every connection sends the given bodies in turn (POST), with a
 * result per body: the kinds go over the same connections at the same moments, so a difference
 * between their timings is the service's, not the machine's or the connections' (with several
 * HTTP threads, two separate runs' connections land on the threads differently).
 */
export async function runInterleaved(options: LoadOptions, bodies: readonly string[]): Promise<LoadResult[]> {
  const latencies = bodies.map((): number[] => []);
  const non2xx = bodies.map(() => 0);
  // autocannon calls a request's onResponse just before it reports that response's time.
  let answered = 0;
  const headers = { 'content-type': 'application/json', ...options.headers };
  const instance = autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.durationSeconds,
    requests: bodies.map((body, kind) => ({
      method: 'POST' as const,
      body,
      onResponse: (status: number) => {
        answered = kind;
        if (status < 200 || status > 299) non2xx[kind]! += 1;
      },
      setupRequest: (request: Request): Request => ({
        ...request,
        headers: { ...headers, ...options.perRequest?.().headers },
      }),
    })),
  }) as unknown as PromiseLike<autocannon.Result> & NodeJS.EventEmitter;
  instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
    latencies[answered]!.push(responseTime);
  });
  const result = await instance;
  return latencies.map((times, kind) => ({
    requestsPerSecond: Math.round(times.length / options.durationSeconds),
    ...percentiles(times),
    non2xx: non2xx[kind]!,
    errors: result.errors + result.timeouts,
    total: times.length,
  }));
}

function percentiles(latencies: number[]): Pick<LoadResult, 'p50' | 'p95' | 'p99'> {
  latencies.sort((a, b) => a - b);
  const percentile = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
  return { p50: round(percentile(50)), p95: round(percentile(95)), p99: round(percentile(99)) };
}

const round = (value: number) => Math.round(value * 100) / 100;
