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
  latencies.sort((a, b) => a - b);
  const percentile = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
  return {
    requestsPerSecond: Math.round(result.requests.total / options.durationSeconds),
    p50: round(percentile(50)),
    p95: round(percentile(95)),
    p99: round(percentile(99)),
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    total: result.requests.total,
  };
}

const round = (value: number) => Math.round(value * 100) / 100;
