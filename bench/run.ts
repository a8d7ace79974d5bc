import { once } from 'node:events';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { hash } from '@node-rs/argon2';
import pg from 'pg';
import { buildService, DIST } from '../scripts/build.ts';
import { PASSWORD_HASH_PARAMETERS } from '../src/crypto/passwords.ts';
import { LOCKOUT_THRESHOLD } from '../src/modules/auth/login.command.ts';
import { SERVICE_NODE_OPTIONS, SERVICE_PROCESS_ENVIRONMENT } from '../src/runtime.ts';
import {
  type LoadOptions,
  type LoadResult,
  meterMachine,
  roundToHundredths,
  roundToThousandths,
  runInterleaved,
  runLoad,
} from './measure.ts';
import { countPerfEvents } from './perf-counters.ts';
import { type MeasuredProcess, startProcess } from './processes.ts';
import { describeSteadiness, measureSteadiness, type SteadinessPass } from './steadiness.ts';
import {
  countLockedRefusalAccounts,
  refusalAccountEmail,
  seedBulk,
  seedRefusalAccounts,
} from './seed-bulk.ts';

/**
 * `npm run bench [-- --dialect postgres] [-- --duration 10] [-- --skip-bulk] [-- --runs 3]
 *  [-- --connections 128,32]`
 * Measures the machine's steadiness (steadiness.ts), starts a bare Fastify baseline and the
 * service (as separate processes), seeds data, drives each scenario with autocannon at 32 and 128
 * connections after a warm-up (with --runs, that many times, reporting the median run), and
 * prints a table per scenario with the ratio to the baseline and the service's peak RSS. JSON
 * goes to bench/results/latest-<dialect>.json. See docs/performance.md.
 */

const { values: options } = parseArgs({
  options: {
    dialect: { type: 'string', default: 'sqlite' },
    duration: { type: 'string', default: '10' },
    warmup: { type: 'string', default: '3' },
    'skip-bulk': { type: 'boolean', default: false },
    // Measure each scenario this many times (each with its reference just before) and report the
    // run whose ratio is the median: on a noisy machine one run is a draw.
    runs: { type: 'string', default: '1' },
    // Run only these scenarios (comma-separated names, e.g. "authenticated read,live check"). A
    // list or write name runs it with and without the bulk data; "audited write [bulk data]" runs
    // only the pass with it (so that --profile profiles that pass alone).
    only: { type: 'string' },
    // Write a V8 CPU profile of the service to bench/profiles (open it in Chrome DevTools).
    profile: { type: 'boolean', default: false },
    // Count the service's instructions per request with Linux perf (bench/perf-counters.ts).
    instructions: { type: 'boolean', default: false },
    // Count SQLite's page writes and reads (pwrite/pread calls) per request with Linux perf.
    'file-io': { type: 'boolean', default: false },
    // The connection counts each scenario runs at, in this order ("128,32" runs the larger first:
    // a service's first sign-ins cost more than its later ones, and the order tells the first
    // minute from the connection count). A count may repeat: "32,32,32,32" measures four windows
    // of one count in a row. The refusal pair always runs at 32.
    connections: { type: 'string', default: '32,128' },
    // Extra Node.js options for the service process (e.g. "--max-semi-space-size=8"), to try
    // V8 settings without editing the start script.
    'service-node-options': { type: 'string', default: '' },
  },
});
const onlyScenarios = options.only?.split(',').map((name) => name.trim());
const selected = (name: string) => onlyScenarios === undefined || onlyScenarios.includes(name);
/** The scenarios run again once the tables hold the bulk data, and the suffix their names get then. */
const BULK_SCENARIOS = ['list of 25', 'audited write'];
const BULK_SUFFIX = ' [bulk data]';
/** Whether a scenario runs in the pass whose names get `suffix`: by its own name, or by its name there. */
const selectedInPass = (name: string, suffix: string) =>
  selected(name) || (suffix !== '' && selected(`${name}${suffix}`));
const dialect = options.dialect === 'postgres' ? 'postgres' : 'sqlite';
const durationSeconds = Number(options.duration);
const warmupSeconds = Number(options.warmup);
/** A count of runs or connections: a whole number, 1 or more. */
const isCount = (value: number) => Number.isInteger(value) && value >= 1;
const runCount = Number(options.runs);
if (!isCount(runCount)) throw new Error('--runs takes a whole number, 1 or more.');
const CONNECTIONS = options.connections.split(',').map((count) => Number(count.trim()));
if (!CONNECTIONS.every(isCount))
  throw new Error('--connections takes whole numbers, 1 or more, separated by commas (e.g. 128,32).');
const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const BENCH_DATABASE = 'portcullis_bench';
const CALLER_KEY = 'bench-trusted-caller-key-0123456789abcdef';
const ADMIN = { email: 'bench-admin@example.test', password: 'bench admin password 1' };
const SECRET = 'bench-signing-secret-that-is-long-enough-0123456789';

interface ScenarioResult extends LoadResult {
  readonly scenario: string;
  readonly connections: number;
  readonly ratio: number;
  /** What the ratio is to: the baseline's rate just before the run, or the raw Argon2id loop's around it. */
  readonly reference: Reference;
  readonly peakRssMb: number | null;
  /** The service's CPU time (all threads) per answered request, in microseconds. */
  readonly cpuMicrosPerRequest: number | null;
  /** With --instructions: the service's instructions per answered request, in thousands. */
  readonly kiloInstructionsPerRequest: number | null;
  /** With --file-io: the service's `pwrite` calls per answered request (SQLite's log writes). */
  readonly fileWritesPerRequest: number | null;
  /** With --file-io: the service's `pread` calls per answered request (pages not cached). */
  readonly fileReadsPerRequest: number | null;
  /** The part of it on libuv's thread pool, where Argon2id runs (login runs only). */
  readonly threadPoolCpuMicrosPerRequest: number | null;
  /** The kernel's part of `threadPoolCpuMicrosPerRequest` (system time). */
  readonly threadPoolSystemCpuMicrosPerRequest: number | null;
  /** The thread pool's minor page faults per request: the pages a hash touched afresh. */
  readonly threadPoolMinorFaultsPerRequest: number | null;
  /**
   * How long the service's CPU was metered, in seconds: from just before the load until its
   * promise settled, a few hundredths of a second longer than `loadSeconds`.
   */
  readonly meteredSeconds: number | null;
  /** The service's CPU over that window, in cores: never above the machine's CPU count. */
  readonly serviceCores: number | null;
  /**
   * How busy each HTTP thread was during the run, as a share of one core (MainThread first).
   * A thread well under 100 % spent the rest waiting (a lock, a message, the client) or off its
   * core: autocannon runs on the same cores.
   */
  readonly httpThreadBusy: readonly ThreadBusy[] | null;
  /** With `--runs`: every run's ratio, in the order run; the figures above are the median run's. */
  readonly runRatios: readonly number[] | null;
  /**
   * With `--runs`: every run's p99, in the order run. The p99 target is judged on their median,
   * as the ratios are on theirs: the run whose ratio is the median need not be the one whose p99 is.
   */
  readonly runP99s: readonly number[] | null;
}

interface ThreadBusy {
  readonly thread: string;
  readonly shareOfCore: number;
}

interface Reference {
  readonly name: 'baseline' | 'raw Argon2id';
  readonly requestsPerSecond: number;
  /**
   * Raw Argon2id only: the two rates whose mean `requestsPerSecond` is, measured just before and
   * just after the run (measureRawArgon2Rate).
   */
  readonly bracket?: readonly [before: number, after: number];
}

const results: ScenarioResult[] = [];
/**
 * The wrong-password refusals' accounts (measureRefusals): how many wrong passwords went over how
 * many accounts, and how many accounts the runs left locked (more than none: some refusals timed
 * the decoy). Null when the sign-ins were not run.
 */
let refusalAccounts: { wrongPasswords: number; accounts: number; locked: number } | null = null;
/** The bare Fastify server, kept running: each scenario's ratio is to a run of it just before. */
let baseline: MeasuredProcess;
/** How long each pass of the steadiness meter runs, one busy thread and then one per core. */
const STEADINESS_SECONDS = 5;
/** The machine's steadiness, measured first (bench/steadiness.ts); kept in the JSON's `machine`. */
let steadiness: SteadinessPass[] = [];
let clientAddressCounter = 0;
/** Every login request comes from its own address (named by a trusted caller), so the 10/min
 * authentication budget, which stays in force, never throttles the benchmark. */
const distinctClientAddress = () => {
  clientAddressCounter += 1;
  const n = clientAddressCounter;
  return {
    'x-service-caller-key': CALLER_KEY,
    'x-service-client-address': `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
  };
};

async function main(): Promise<void> {
  console.log(
    `Portcullis benchmark: ${dialect}, ${durationSeconds} s per run, ${cpus().length} CPUs, ${Math.round(totalmem() / 2 ** 30)} GiB`,
  );
  steadiness = await measureSteadiness(STEADINESS_SECONDS);
  console.log(
    `Machine steadiness (busy threads, ${STEADINESS_SECONDS} s a pass):\n${describeSteadiness(steadiness)}`,
  );
  baseline = await startProcess(
    join(import.meta.dirname, 'baseline-server.ts'),
    process.env,
    'BASELINE_PORT',
    '/',
  );
  const { databaseUrl, cleanup } = await prepareDatabase();
  const service = await startService(databaseUrl);
  try {
    for (const connections of CONNECTIONS) {
      const { result, cpuSeconds } = await runBaseline(connections, service);
      record('baseline (bare Fastify)', connections, result, null, {
        reference: { requestsPerSecond: exactRate(result), name: 'baseline' },
        cpuSeconds,
      });
    }
    const base = `http://127.0.0.1:${service.port}`;
    const seed = await seedThroughApi(base);
    await runScenarios(service, base, seed, '');
    if (!options['skip-bulk'] && BULK_SCENARIOS.some((name) => selectedInPass(name, BULK_SUFFIX))) {
      console.log(
        '\nSeeding 1,000,000 audit entries, 100,000 persons (1,000 of them owning the scopes) and 10,000 scopes in bulk…',
      );
      const started = Date.now();
      await seedBulk(databaseUrl);
      console.log(`…done in ${Math.round((Date.now() - started) / 1000)} s`);
      await runScenarios(service, base, seed, BULK_SUFFIX, BULK_SCENARIOS);
    }
    if (selected('login')) await measureLogin(service, base, seed.scopeId, databaseUrl);
  } finally {
    await service.stop();
    await baseline.stop();
    cleanup();
  }
  printSummary();
}

/** Who a scenario signs in as. */
interface Credentials {
  readonly email: string;
  readonly password: string;
  readonly scopeId?: string;
}

interface Seed {
  readonly adminId: string;
  readonly scopeId: string;
  /**
   * The person the authenticated read reads, each signing in as themselves: the scope's User,
   * or the admin should the User's seed have failed.
   */
  readonly reader: { readonly id: string; readonly credentials: Credentials };
  readonly applicationSecret: string | null;
}

async function runScenarios(
  service: MeasuredProcess,
  base: string,
  seed: Seed,
  suffix: string,
  only?: string[],
) {
  let scopeCounter = 0;
  const scenarios: Array<{
    name: string;
    load: (connections: number) => Promise<LoadOptions | null> | LoadOptions | null;
  }> = [
    {
      name: 'liveness',
      load: (connections) => ({ url: `${base}/api/healthcheck`, connections, durationSeconds }),
    },
    {
      name: 'authenticated read',
      load: async (connections) => ({
        url: `${base}/api/persons/${seed.reader.id}`,
        headers: { authorization: `Bearer ${await personToken(base, seed.reader.credentials)}` },
        connections,
        durationSeconds,
      }),
    },
    {
      name: 'list of 25',
      load: async (connections) => ({
        url: `${base}/api/scopes?PageSize=25`,
        headers: { authorization: `Bearer ${await personToken(base, ADMIN)}` },
        connections,
        durationSeconds,
      }),
    },
    {
      name: 'audited write',
      load: async (connections) => ({
        url: `${base}/api/scopes`,
        method: 'POST',
        headers: { authorization: `Bearer ${await personToken(base, ADMIN)}` },
        // A distinct name per request: scope names are unique.
        perRequest: () => ({
          body: JSON.stringify({
            name: `bench ${Date.now()} ${(scopeCounter += 1)}`,
            ownerIds: [seed.adminId],
          }),
        }),
        connections,
        durationSeconds,
      }),
    },
    {
      name: 'secret exchange',
      load: (connections) =>
        seed.applicationSecret === null
          ? null
          : {
              url: `${base}/api/applications/token`,
              method: 'POST',
              body: JSON.stringify({ secret: seed.applicationSecret }),
              perRequest: () => ({ headers: distinctClientAddress() }),
              connections,
              durationSeconds,
            },
    },
    {
      name: 'live check',
      // Application tokens live ten minutes (spec): each connection count checks one exchanged
      // as it starts, as a consumer would, since a run with --runs outlives the seed's. The
      // person tokens above (an hour) are likewise signed in for afresh per connection count.
      load: async (connections) => {
        const token =
          seed.applicationSecret === null ? null : await exchangeSecret(base, seed.applicationSecret);
        return token === null
          ? null
          : {
              url: `${base}/api/applications/self`,
              headers: { authorization: `Bearer ${token}` },
              connections,
              durationSeconds,
            };
      },
    },
  ];
  for (const scenario of scenarios) {
    if ((only !== undefined && !only.includes(scenario.name)) || !selectedInPass(scenario.name, suffix))
      continue;
    for (const connections of CONNECTIONS) {
      const load = await scenario.load(connections);
      if (load === null) {
        console.log(`- ${scenario.name}: not available in this build (its seed could not be created)`);
        break;
      }
      const runs: MeasuredRun[] = [];
      for (let run = 0; run < runCount; run += 1) {
        const { result: floor } = await runBaseline(connections, service);
        await runLoad({ ...load, durationSeconds: warmupSeconds });
        service.resetPeakRss();
        const { result, spent } = await measured(service, () => runLoad(load));
        const peakRssMb = service.peakRssMb();
        keepMemoryMapIfOverTarget(service, `${scenario.name}${suffix}`, peakRssMb);
        runs.push({
          result,
          peakRssMb,
          reference: { requestsPerSecond: exactRate(floor), name: 'baseline' },
          // The thread pool runs only the sign-ins' hashes: shown for those alone.
          spending: {
            cpuSeconds: spent.cpuSeconds,
            meteredSeconds: spent.meteredSeconds,
            httpThreadBusy: spent.httpThreadBusy,
            instructions: spent.instructions,
            fileWrites: spent.fileWrites,
            fileReads: spent.fileReads,
          },
        });
      }
      recordMedianRun(`${scenario.name}${suffix}`, connections, runs);
    }
  }
}

/** The peak-RSS target of the read scenarios (issue: ≤ 256 MB). */
const RSS_TARGET_MB = 256;
let memoryMapKept = false;

/**
 * The first time a scenario peaks over the RSS target, keeps the service's memory map
 * (/proc/<pid>/smaps) beside the results: which mappings hold the extra memory (V8's heap
 * pages, an allocator's arenas, code) is what tells a rare outlier's cause.
 */
function keepMemoryMapIfOverTarget(service: MeasuredProcess, scenario: string, peakRssMb: number) {
  if (memoryMapKept || peakRssMb <= RSS_TARGET_MB) return;
  memoryMapKept = true;
  const file = resultsFile(`memory-map-${dialect}.txt`);
  writeFileSync(file, `# after "${scenario}", peak RSS ${peakRssMb} MB\n${service.memoryMap()}`);
  console.log(`  (over ${RSS_TARGET_MB} MB: the service's memory map is in ${file})`);
}

/** A file in bench/results (created on first use; not committed). */
function resultsFile(name: string): string {
  const directory = join(import.meta.dirname, 'results');
  mkdirSync(directory, { recursive: true });
  return join(directory, name);
}

/**
 * Sign-ins at `connections`, each request from its own client address (distinctClientAddress);
 * the caller adds the bodies.
 */
const signInLoad = (base: string, connections: number) => ({
  url: `${base}/api/auth/login`,
  method: 'POST' as const,
  perRequest: () => ({ headers: distinctClientAddress() }),
  connections,
  durationSeconds,
});

/** Login throughput against the raw Argon2id verify rate, and uniform timing of refusals. */
async function measureLogin(service: MeasuredProcess, base: string, scopeId: string, databaseUrl: string) {
  console.log('');
  const login = (email: string, password: string, connections: number) => ({
    ...signInLoad(base, connections),
    body: JSON.stringify({ email, password }),
  });
  let fastestSignInRate = 0;
  for (const connections of CONNECTIONS) {
    await runLoad({ ...login(ADMIN.email, ADMIN.password, connections), durationSeconds: warmupSeconds });
    const runs: MeasuredRun[] = [];
    // Consecutive runs share a raw measurement: the one after a run is the one before the next.
    let rawBefore = await drainedRawArgon2Rate();
    for (let run = 0; run < runCount; run += 1) {
      service.resetPeakRss();
      const { result, spent } = await measured(service, () =>
        runLoad(login(ADMIN.email, ADMIN.password, connections)),
      );
      const peakRssMb = service.peakRssMb();
      const rawAfter = await drainedRawArgon2Rate();
      runs.push({ result, peakRssMb, reference: bracketedRawRate(rawBefore, rawAfter), spending: spent });
      rawBefore = rawAfter;
      fastestSignInRate = Math.max(fastestSignInRate, result.requestsPerSecond);
    }
    recordMedianRun('login (correct password)', connections, runs);
  }
  await measureRefusals(service, base, scopeId, databaseUrl, fastestSignInRate);
}

/**
 * The median time of a wrong-password and an unknown-email refusal, measured together. Both are
 * Users' sign-ins into the bench scope: the wrong passwords go round many seeded accounts
 * (refusalAccountsNeeded), each of which stays unlocked, so that they time a real account's
 * check and its count of failures, not the decoy a locked account gets.
 */
async function measureRefusals(
  service: MeasuredProcess,
  base: string,
  scopeId: string,
  databaseUrl: string,
  fastestSignInRate: number,
) {
  const accounts = refusalAccountsNeeded(fastestSignInRate);
  await seedRefusalAccounts(databaseUrl, scopeId, accounts);
  let wrongPasswordsSent = 0;
  const wrongPassword = () =>
    JSON.stringify({
      email: refusalAccountEmail((wrongPasswordsSent += 1) % accounts),
      password: 'a wrong password',
      scopeId,
    });
  const unknownEmail = () =>
    JSON.stringify({ email: 'nobody-here@example.test', password: 'a wrong password', scopeId });
  // The two refusals alternate on the same 32 connections, so both see the same machine, the
  // same moments and the same HTTP threads: run one after the other, or on connections of their
  // own, drift between the runs (the lock-out's writes, GC, the other core) or the way the
  // kernel spread the connections over the threads showed up as a difference between them
  // that the service does not make.
  // Every connection sends a wrong password first, so the run starts only once the service has
  // drained what the previous runs left in flight: a warm-up, then the pause.
  const refusalBodies = [wrongPassword, unknownEmail];
  const refusalLoad = signInLoad(base, 32);
  await runInterleaved({ ...refusalLoad, durationSeconds: warmupSeconds }, refusalBodies);
  // With --runs N the pair is measured N times, like every other scenario, and the run whose
  // difference is the median is kept: one 10 s run is a draw on a noisy machine.
  const pairs: RefusalPair[] = [];
  let rawBefore = await drainedRawArgon2Rate();
  for (let run = 0; run < runCount; run += 1) {
    service.resetPeakRss();
    const [wrong, unknown] = (await runInterleaved(refusalLoad, refusalBodies)) as [LoadResult, LoadResult];
    const peakRssMb = service.peakRssMb();
    const rawAfter = await drainedRawArgon2Rate();
    pairs.push({ wrong, unknown, peakRssMb, rawRate: bracketedRawRate(rawBefore, rawAfter) });
    rawBefore = rawAfter;
    if (runCount > 1)
      console.log(
        `  run ${run + 1} of ${runCount}: wrong password ${wrong.p50} ms vs unknown email ${unknown.p50} ms in median ` +
          `(${percentApart(pairs.at(-1)!)} % apart)`,
      );
  }
  const { wrong, unknown, rawRate } = medianBy(pairs, medianTimesApart)!;
  // The highest of the runs, as for every scenario: the memory target is a ceiling.
  const peakRssMb = Math.max(...pairs.map((pair) => pair.peakRssMb));
  // Each kind gets half of the answers, so half the raw rate is its reference.
  const halfRawRate = { ...rawRate, requestsPerSecond: rawRate.requestsPerSecond / 2 };
  record('login (wrong password, 401)', 32, wrong, peakRssMb, { reference: halfRawRate });
  record('login (unknown email, 401)', 32, unknown, peakRssMb, { reference: halfRawRate });
  console.log(
    `Median time, wrong password vs unknown email: ${wrong.p50} ms vs ${unknown.p50} ms (${percentApart({ wrong, unknown })} % apart)` +
      (runCount > 1 ? `, the median of ${runCount} runs' differences` : ''),
  );
  const locked = await countLockedRefusalAccounts(databaseUrl);
  refusalAccounts = { wrongPasswords: wrongPasswordsSent, accounts, locked };
  console.log(
    `Wrong passwords: ${wrongPasswordsSent} over ${accounts} accounts` +
      (locked === 0
        ? ', none locked'
        : `; ${locked} locked, so some of them timed the decoy (the sign-ins ran faster than allowed for)`),
  );
}

/**
 * Enough refusal accounts that none takes a 10th consecutive wrong password: the refusals' runs
 * (warm-up and measured, each loading up to a second longer than asked) at twice the fastest
 * sign-in rate just measured (a refusal costs one verification too, and half of them are wrong
 * passwords: a margin of four), at most LOCKOUT_THRESHOLD − 2 wrong passwords an account.
 */
function refusalAccountsNeeded(fastestSignInRate: number): number {
  const loadSeconds = warmupSeconds + 1 + runCount * (durationSeconds + 1);
  return Math.max(100, Math.ceil((2 * fastestSignInRate * loadSeconds) / (LOCKOUT_THRESHOLD - 2)));
}

/** One measured run of the two refusals side by side. */
interface RefusalPair {
  readonly wrong: LoadResult;
  readonly unknown: LoadResult;
  readonly peakRssMb: number;
  readonly rawRate: Reference;
}

/** How far apart the two refusals' median times are, as a share of the slower. */
const medianTimesApart = ({ wrong, unknown }: Pick<RefusalPair, 'wrong' | 'unknown'>) =>
  Math.abs(wrong.p50 - unknown.p50) / Math.max(wrong.p50, unknown.p50);

const percentApart = (pair: Pick<RefusalPair, 'wrong' | 'unknown'>) =>
  (medianTimesApart(pair) * 100).toFixed(1);

/**
 * The raw Argon2id rate a sign-in run is compared with: the mean of one measured just before it
 * and one just after. The machine's hashing speed drifts within minutes (on one AMD machine the
 * raw loop measured 195/s, then 228/s and 182/s around two runs of about 165 sign-ins/s each),
 * and one measurement on either side cancels a steady drift where one before it cannot.
 */
function bracketedRawRate(before: number, after: number): Reference {
  return { name: 'raw Argon2id', requestsPerSecond: (before + after) / 2, bracket: [before, after] };
}

/** The raw rate once the sign-ins a run left in flight are done (drainBacklog). */
async function drainedRawArgon2Rate(): Promise<number> {
  await drainBacklog();
  return measureRawArgon2Rate();
}

/**
 * Waits out the sign-ins a finished load left in flight. autocannon stops sending, not the
 * service verifying: before the service dropped the queued sign-ins of departed clients, it spent
 * about a second more on them after a run at 128 connections, and a measured run that started at
 * once paid for them with no answer counted (a tenth of its throughput). Now the checks already
 * running finish and the dropped ones are audited; the pause keeps that out of the measured run.
 */
function drainBacklog(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, BACKLOG_DRAIN_MS));
}

/** Longer than the service takes to verify what 128 abandoned sign-ins left in flight. */
const BACKLOG_DRAIN_MS = 5_000;

/**
 * Verifies per second of the same parameters, one thread per core verifying back to back, in this
 * process while the service is idle, just before and just after the run it is compared with (the
 * machine's speed drifts: bracketedRawRate): what the machine's cores can verify, with no hand-over
 * between two verifies. Prints it with the CPU time (this process, all threads) one verify takes,
 * the kernel's part of it, the page faults (memory touched afresh) per verify and the share of the
 * machine left idle. Until the twenty-fourth round
 * (docs/performance-history.md) the loop kept two verifies in flight on this process's libuv pool
 * of four threads, which left the cores 5–15 % idle between verifies, as the service's pool of
 * four did.
 */
async function measureRawArgon2Rate(): Promise<number> {
  const stored = await hash(ADMIN.password, PASSWORD_HASH_PARAMETERS);
  const threads = await Promise.all(
    Array.from({ length: availableParallelism() }, () => startRawArgon2Thread(stored, ADMIN.password)),
  );
  const until = Date.now() + durationSeconds * 1000;
  const cpuBefore = process.cpuUsage();
  const faultsBefore = process.resourceUsage().minorPageFault;
  const machine = meterMachine();
  const counts = await Promise.all(threads.map((thread) => thread.verifyUntil(until)));
  const cpu = process.cpuUsage(cpuBefore);
  const faults = process.resourceUsage().minorPageFault - faultsBefore;
  const { machineIdleShare } = machine.read();
  const count = counts.reduce((sum, verified) => sum + verified, 0);
  const rate = count / durationSeconds;
  console.log(
    `Raw Argon2id verify rate (same parameters, ${threads.length} threads back to back): ${Math.round(rate)}/s, ` +
      `${Math.round((cpu.user + cpu.system) / count)} µs of CPU per verify (kernel ${Math.round(cpu.system / count)}; ${Math.round(faults / count)} page faults), machine idle ${Math.round(machineIdleShare * 100)} %`,
  );
  return rate;
}

/** A thread of bench/raw-argon2-thread.ts, started and ready; `verifyUntil` ends it. */
async function startRawArgon2Thread(
  stored: string,
  password: string,
): Promise<{ verifyUntil(until: number): Promise<number> }> {
  const worker = new Worker(new URL('./raw-argon2-thread.ts', import.meta.url), {
    workerData: { stored, password },
  });
  await once(worker, 'message');
  return {
    async verifyUntil(until) {
      worker.postMessage(until);
      const [verified] = (await once(worker, 'message')) as [number];
      await worker.terminate();
      return verified;
    },
  };
}

/**
 * A warm-up and a measured run of the bare Fastify server at `connections`, once the service
 * has finished what the previous run left it (a checkpoint, a collection): the floor is measured
 * on a quiet machine, as the scenario after it is. Prints what the service still spent meanwhile.
 * `cpuSeconds`: the baseline server's CPU time during the measured run (not the warm-up).
 */
async function runBaseline(
  connections: number,
  service: MeasuredProcess,
): Promise<{ result: LoadResult; cpuSeconds: number }> {
  await serviceQuiet(service);
  const url = `http://127.0.0.1:${baseline.port}/`;
  await runLoad({ url, connections, durationSeconds: warmupSeconds });
  const baselineCpuBefore = baseline.cpuSeconds();
  const serviceCpuBefore = service.cpuSeconds();
  const result = await runLoad({ url, connections, durationSeconds });
  const cpuSeconds = baseline.cpuSeconds() - baselineCpuBefore;
  const serviceCpuMs = Math.round((service.cpuSeconds() - serviceCpuBefore) * 1000);
  if (serviceCpuMs > QUIET_CPU_MS)
    console.log(`  (the service spent ${serviceCpuMs} ms of CPU during the baseline run)`);
  return { result, cpuSeconds };
}

/** Below this much CPU per second the service counts as quiet. */
const QUIET_CPU_MS = 20;

/** Waits (at most 20 s) until a second passes in which the service spends under 20 ms of CPU. */
async function serviceQuiet(service: MeasuredProcess): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const before = service.cpuSeconds();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    if ((service.cpuSeconds() - before) * 1000 < QUIET_CPU_MS) return;
  }
}

/** One measured run of a scenario, with its reference (bracketedRawRate for sign-ins). */
interface MeasuredRun {
  readonly result: LoadResult;
  readonly peakRssMb: number;
  readonly reference: Reference;
  readonly spending: Partial<ServiceSpending>;
}

/**
 * The ratio a target is judged on: the scenario's throughput over its reference's, both unrounded.
 * (Until the thirty-eighth round it divided the rates as shown, in whole requests a second: at about
 * 170 sign-ins and 200 raw verifies a second, that moved a sign-in ratio by up to 0.005.)
 */
const ratioOf = (result: LoadResult, reference: Reference) => exactRate(result) / reference.requestsPerSecond;

/** Answers a second, unrounded (`requestsPerSecond` is rounded for showing). */
const exactRate = (result: LoadResult) => result.total / result.loadSeconds;

const runRatio = ({ result, reference }: MeasuredRun) => ratioOf(result, reference);

/**
 * Records the run whose ratio is the median (for an even count, the lower middle), so that
 * neither a lucky nor an unlucky draw of the machine decides a scenario; the peak RSS is the
 * highest of all runs, as the memory target is a ceiling.
 */
function recordMedianRun(scenario: string, connections: number, runs: readonly MeasuredRun[]) {
  const median = medianBy(runs, runRatio);
  if (median === undefined) return;
  const runRatios = runs.length > 1 ? runs.map((run) => roundToThousandths(runRatio(run))) : null;
  const runP99s = runs.length > 1 ? runs.map((run) => run.result.p99) : null;
  if (runRatios !== null)
    for (const [index, run] of runs.entries())
      console.log(
        `  run ${index + 1} of ${runs.length}: ${run.result.requestsPerSecond} req/s${longLoad(run.result)}, ratio ${runRatios[index]} ` +
          `(to ${describeReference(run.reference)}), p99 ${run.result.p99} ms, non-2xx ${run.result.non2xx}`,
      );
  record(scenario, connections, median.result, Math.max(...runs.map((run) => run.peakRssMb)), {
    ...median.spending,
    reference: median.reference,
    runRatios,
    runP99s,
  });
}

/**
 * The reference as the JSON keeps it: its rates to the hundredth (a mean of two or answers over a
 * measured length come out as 88.44999999999999); the ratio beside it is divided before rounding.
 */
function keptReference({ name, requestsPerSecond, bracket }: Reference): Reference {
  return {
    name,
    requestsPerSecond: roundToHundredths(requestsPerSecond),
    ...(bracket === undefined
      ? {}
      : { bracket: [roundToHundredths(bracket[0]), roundToHundredths(bracket[1])] as const }),
  };
}

/** " (loaded 11.01 s)" when autocannon loaded a second longer than asked (`loadSeconds`). */
const longLoad = ({ loadSeconds }: LoadResult) =>
  loadSeconds > durationSeconds + 0.5 ? ` (loaded ${loadSeconds} s)` : '';

/** The item whose `key` is the median (for an even count, the lower middle); undefined when none. */
function medianBy<T>(items: readonly T[], key: (item: T) => number): T | undefined {
  return [...items].sort((a, b) => key(a) - key(b))[(items.length - 1) >> 1];
}

const medianOf = (values: readonly number[]) => medianBy(values, (value) => value) ?? Number.NaN;

/** "baseline 61226/s", or "raw Argon2id 171/s: 183 before, 160 after". */
function describeReference({ name, requestsPerSecond, bracket }: Reference): string {
  const rate = `${name} ${Math.round(requestsPerSecond)}/s`;
  return bracket === undefined
    ? rate
    : `${rate}: ${Math.round(bracket[0])} before, ${Math.round(bracket[1])} after`;
}

/**
 * Prints and keeps one run. `reference`: the rate it is compared with (the baseline's measured just
 * before it; the raw Argon2id loop's just before and after it). `cpuSeconds`: the service's CPU
 * time during the run, reported per request, which moves far less than throughput between runs on
 * a noisy machine.
 */
function record(
  scenario: string,
  connections: number,
  result: LoadResult,
  peakRssMb: number | null,
  {
    reference,
    cpuSeconds,
    meteredSeconds,
    threadPoolCpuSeconds,
    threadPoolSystemCpuSeconds,
    threadPoolMinorFaults,
    httpThreadBusy,
    instructions,
    fileWrites,
    fileReads,
    runRatios = null,
    runP99s = null,
  }: {
    reference: Reference;
    runRatios?: readonly number[] | null;
    runP99s?: readonly number[] | null;
  } & Partial<ServiceSpending>,
) {
  /** A figure per answered request, in `scale` units to `decimals` places (null where it was not measured). */
  const countPerRequest = (count: number | null | undefined, scale: number, decimals: number) =>
    count === undefined || count === null || result.total === 0
      ? null
      : Math.round((count / result.total / scale) * 10 ** decimals) / 10 ** decimals;
  /** CPU seconds per request, in whole microseconds. */
  const perRequest = (seconds: number | undefined) => countPerRequest(seconds, 1e-6, 0);
  const entry: ScenarioResult = {
    scenario,
    connections,
    ...result,
    ratio: roundToThousandths(ratioOf(result, reference)),
    reference: keptReference(reference),
    peakRssMb,
    cpuMicrosPerRequest: perRequest(cpuSeconds),
    threadPoolCpuMicrosPerRequest: perRequest(threadPoolCpuSeconds),
    threadPoolSystemCpuMicrosPerRequest: perRequest(threadPoolSystemCpuSeconds),
    threadPoolMinorFaultsPerRequest: countPerRequest(threadPoolMinorFaults, 1, 0),
    meteredSeconds: meteredSeconds === undefined ? null : roundToThousandths(meteredSeconds),
    serviceCores:
      meteredSeconds === undefined || cpuSeconds === undefined
        ? null
        : roundToHundredths(cpuSeconds / meteredSeconds),
    kiloInstructionsPerRequest: countPerRequest(instructions, 1000, 1),
    fileWritesPerRequest: countPerRequest(fileWrites, 1, 2),
    fileReadsPerRequest: countPerRequest(fileReads, 1, 2),
    httpThreadBusy: httpThreadBusy ?? null,
    runRatios,
    runP99s,
  };
  results.push(entry);
  console.log(
    `${scenario.padEnd(34)} c=${String(connections).padStart(3)}  ${String(result.requestsPerSecond).padStart(7)} req/s${longLoad(result)}  ` +
      `p50 ${result.p50} p95 ${result.p95} p99 ${result.p99} ms  non-2xx ${result.non2xx}  ` +
      `ratio ${entry.ratio} (to ${describeReference(reference)})${peakRssMb === null ? '' : `  peak RSS ${peakRssMb} MB`}` +
      `${entry.cpuMicrosPerRequest === null ? '' : `  CPU ${entry.cpuMicrosPerRequest} µs/req`}` +
      `${entry.threadPoolCpuMicrosPerRequest === null ? '' : ` (thread pool: ${entry.threadPoolCpuMicrosPerRequest}, kernel ${entry.threadPoolSystemCpuMicrosPerRequest}; ${entry.threadPoolMinorFaultsPerRequest} page faults)`}` +
      `${entry.serviceCores === null ? '' : `, ${entry.serviceCores} cores over ${entry.meteredSeconds} s`}` +
      `${entry.kiloInstructionsPerRequest === null ? '' : `  ${entry.kiloInstructionsPerRequest}k instructions/req`}` +
      `${entry.fileWritesPerRequest === null ? '' : `  pwrite ${entry.fileWritesPerRequest}/req`}` +
      `${entry.fileReadsPerRequest === null ? '' : `  pread ${entry.fileReadsPerRequest}/req`}` +
      `${entry.httpThreadBusy === null ? '' : `  HTTP threads busy: ${entry.httpThreadBusy.map(({ thread, shareOfCore }) => `${thread} ${Math.round(shareOfCore * 100)} %`).join(', ')}`}` +
      `  machine idle ${Math.round(result.machineIdleShare * 100)} %, load generator ${result.loadGeneratorCores} cores` +
      `${runRatios === null ? '' : `  (the median of ${runRatios.length} runs)`}` +
      `${runP99s === null ? '' : `  runs' p99: ${runP99s.join(', ')} ms, median ${medianOf(runP99s)}`}`,
  );
}

/** What the service spent during one measured run. */
interface ServiceSpending {
  /** All its threads, user and system. */
  readonly cpuSeconds: number;
  /** The wall time over which `cpuSeconds` was read. */
  readonly meteredSeconds: number;
  /** The part on libuv's thread pool. */
  readonly threadPoolCpuSeconds: number;
  /** The kernel's part of `threadPoolCpuSeconds`. */
  readonly threadPoolSystemCpuSeconds: number;
  /** The thread pool's minor page faults. */
  readonly threadPoolMinorFaults: number;
  readonly httpThreadBusy: readonly ThreadBusy[];
  /** With --instructions, the instructions its threads executed (null where perf cannot count). */
  readonly instructions: number | null;
  /** With --file-io, its `pwrite` calls (null where perf cannot count them). */
  readonly fileWrites: number | null;
  /** With --file-io, its `pread` calls. */
  readonly fileReads: number | null;
}

const INSTRUCTIONS = 'instructions';
const FILE_WRITES = 'syscalls:sys_enter_pwrite64';
const FILE_READS = 'syscalls:sys_enter_pread64';
/** The perf events the options ask for (none: perf is not started). */
const perfEvents = [
  ...(options.instructions ? [INSTRUCTIONS] : []),
  ...(options['file-io'] ? [FILE_WRITES, FILE_READS] : []),
];

/** Runs `run` and reads what the service spent meanwhile, in all and per HTTP thread. */
async function measured<T>(
  service: MeasuredProcess,
  run: () => Promise<T>,
): Promise<{ result: T; spent: ServiceSpending }> {
  const threadPoolBefore = service.threadPoolUsage();
  const threadsBefore = service.httpThreadCpuSeconds();
  // The process's CPU is read right at the window's ends, so that `meteredSeconds` is its window.
  const cpuBefore = service.cpuSeconds();
  const started = performance.now();
  const { result, counts } =
    perfEvents.length === 0
      ? { result: await run(), counts: {} as Record<string, number | null> }
      : await countPerfEvents(service.child.pid!, perfEvents, run);
  const cpuSeconds = service.cpuSeconds() - cpuBefore;
  const threadPoolAfter = service.threadPoolUsage();
  const elapsedSeconds = (performance.now() - started) / 1000;
  const httpThreadBusy = [...service.httpThreadCpuSeconds()]
    .map(([id, thread]) => ({
      thread: thread.name,
      shareOfCore: roundToHundredths(
        (thread.cpuSeconds - (threadsBefore.get(id)?.cpuSeconds ?? 0)) / elapsedSeconds,
      ),
    }))
    // The main thread first, then the busiest.
    .sort(
      (a, b) =>
        Number(b.thread === 'MainThread') - Number(a.thread === 'MainThread') ||
        b.shareOfCore - a.shareOfCore,
    );
  return {
    result,
    spent: {
      cpuSeconds,
      meteredSeconds: elapsedSeconds,
      threadPoolCpuSeconds: threadPoolAfter.cpuSeconds - threadPoolBefore.cpuSeconds,
      threadPoolSystemCpuSeconds: threadPoolAfter.systemCpuSeconds - threadPoolBefore.systemCpuSeconds,
      threadPoolMinorFaults: threadPoolAfter.minorFaults - threadPoolBefore.minorFaults,
      httpThreadBusy,
      instructions: counts[INSTRUCTIONS] ?? null,
      fileWrites: counts[FILE_WRITES] ?? null,
      fileReads: counts[FILE_READS] ?? null,
    },
  };
}

function printSummary() {
  // The perf columns only where they were counted (--instructions, --file-io).
  const perfColumns: Array<{ heading: string; value: (r: ScenarioResult) => number | null }> = [
    ...(options.instructions
      ? [{ heading: 'k instructions/req', value: (r: ScenarioResult) => r.kiloInstructionsPerRequest }]
      : []),
    ...(options['file-io']
      ? [
          { heading: 'pwrite/req', value: (r: ScenarioResult) => r.fileWritesPerRequest },
          { heading: 'pread/req', value: (r: ScenarioResult) => r.fileReadsPerRequest },
        ]
      : []),
  ];
  console.log(
    `\n| scenario | conns | req/s | p50 ms | p95 ms | p99 ms | runs' median p99 ms | non-2xx | ratio | reference req/s | peak RSS MB | CPU µs/req | machine idle % |${perfColumns.map((c) => ` ${c.heading} |`).join('')}`,
  );
  console.log(`|---|---|---|---|---|---|---|---|---|---|---|---|---|${'---|'.repeat(perfColumns.length)}`);
  for (const r of results) {
    console.log(
      `| ${r.scenario} | ${r.connections} | ${r.requestsPerSecond} | ${r.p50} | ${r.p95} | ${r.p99} | ${r.runP99s === null ? '' : medianOf(r.runP99s)} | ${r.non2xx} | ${r.ratio} | ${Math.round(r.reference.requestsPerSecond)} | ${r.peakRssMb ?? ''} | ${r.cpuMicrosPerRequest ?? ''} | ${Math.round(r.machineIdleShare * 100)} |` +
        perfColumns.map((c) => ` ${c.value(r) ?? ''} |`).join(''),
    );
  }
  const file = resultsFile(`latest-${dialect}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      {
        dialect,
        durationSeconds,
        runs: runCount,
        machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version, steadiness },
        results,
        refusalAccounts,
      },
      null,
      2,
    ),
  );
  console.log(`\nJSON: ${file}`);
}

async function prepareDatabase(): Promise<{ databaseUrl: string; cleanup: () => void }> {
  if (dialect === 'sqlite') {
    const directory = mkdtempSync(join(tmpdir(), 'portcullis-bench-'));
    return {
      databaseUrl: `sqlite:${join(directory, 'identity.db')}`,
      cleanup: () => rmSync(directory, { recursive: true, force: true }),
    };
  }
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await client.connect();
  await client.query(`drop database if exists ${BENCH_DATABASE} with (force)`);
  await client.query(`create database ${BENCH_DATABASE}`);
  await client.end();
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${BENCH_DATABASE}`;
  return { databaseUrl: url.toString(), cleanup: () => {} };
}

/**
 * Starts the service as `npm start` does (built, then run from dist/), and as a restarted
 * instance: a first start fills the compile cache, and is stopped (a deployment's every later
 * start finds the cache warm).
 */
async function startService(databaseUrl: string): Promise<MeasuredProcess> {
  await buildService();
  await (await startServiceProcess(databaseUrl)).stop();
  return startServiceProcess(databaseUrl);
}

function startServiceProcess(databaseUrl: string): Promise<MeasuredProcess> {
  return startProcess(
    join(DIST, 'server.js'),
    {
      ...process.env,
      ...SERVICE_PROCESS_ENVIRONMENT,
      NODE_COMPILE_CACHE: join(import.meta.dirname, '..', SERVICE_PROCESS_ENVIRONMENT.NODE_COMPILE_CACHE),
      SERVICE_ENVIRONMENT: 'production',
      SERVICE_DATABASE_URL: databaseUrl,
      SERVICE_AUTH_TOKEN_SECRET: SECRET,
      SERVICE_AUTH_TOKEN_ISSUER: 'https://portcullis.bench',
      SERVICE_AUTH_TOKEN_AUDIENCE: 'portcullis-bench',
      SERVICE_APPLICATION_TOKEN_AUDIENCE: 'portcullis-bench-applications',
      SERVICE_TRUSTED_CALLER_KEYS: CALLER_KEY,
      SERVICE_BOOTSTRAP_ADMIN_EMAIL: ADMIN.email,
      SERVICE_BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
      SERVICE_LOG_LEVEL: process.env.SERVICE_LOG_LEVEL ?? 'warn',
    },
    'SERVICE_PORT',
    '/api/healthcheck',
    [
      ...SERVICE_NODE_OPTIONS,
      ...(options.profile ? ['--cpu-prof', `--cpu-prof-dir=${join(import.meta.dirname, 'profiles')}`] : []),
      ...options['service-node-options'].split(' ').filter((flag) => flag !== ''),
    ],
  );
}

async function api(base: string, method: string, path: string, token: string | null, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      ...distinctClientAddress(),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return {
    status: response.status,
    body: (await response.json()) as { data: Record<string, unknown> | null },
  };
}

async function seedThroughApi(base: string): Promise<Seed> {
  const adminToken = await personToken(base, ADMIN);
  const adminId = JSON.parse(Buffer.from(adminToken.split('.')[1]!, 'base64url').toString()).sub as string;
  for (let index = 0; index < 60; index += 1) {
    await api(base, 'POST', '/api/scopes', adminToken, { name: `Seed scope ${index}`, ownerIds: [adminId] });
  }
  const scope = await api(base, 'POST', '/api/scopes', adminToken, {
    name: 'Bench scope',
    ownerIds: [adminId],
  });
  const scopeId = String(scope.body.data?.id);
  // Persons and applications arrive with their modules; a scenario whose seed fails is reported
  // as not available rather than measured against the wrong route.
  const userCredentials = { email: 'bench-user@example.test', password: 'bench user password 1', scopeId };
  const user = await api(base, 'POST', `/api/scopes/${scopeId}/persons`, adminToken, {
    name: 'Bench User',
    email: userCredentials.email,
    password: userCredentials.password,
  });
  const reader =
    user.status === 200
      ? { id: String(user.body.data?.id), credentials: userCredentials }
      : { id: adminId, credentials: ADMIN };
  let applicationSecret: string | null = null;
  const application = await api(base, 'POST', `/api/scopes/${scopeId}/applications`, adminToken, {
    name: 'Bench application',
    ownerId: adminId,
  });
  if (application.status === 200) {
    const applicationId = String(application.body.data?.id);
    const credential = await api(
      base,
      'POST',
      `/api/scopes/${scopeId}/applications/${applicationId}/credentials`,
      adminToken,
      {},
    );
    applicationSecret = credential.status === 200 ? String(credential.body.data?.secret) : null;
  }
  return { adminId, scopeId, reader, applicationSecret };
}

/** A fresh person token (they live an hour); the benchmark cannot go on without one. */
async function personToken(base: string, credentials: Credentials): Promise<string> {
  const signedIn = await api(base, 'POST', '/api/auth/login', null, credentials);
  if (signedIn.status !== 200) throw new Error(`Sign-in of ${credentials.email} answered ${signedIn.status}`);
  return String(signedIn.body.data?.token);
}

/** An application token for the secret, or null should the exchange fail. */
async function exchangeSecret(base: string, secret: string): Promise<string | null> {
  const exchanged = await api(base, 'POST', '/api/applications/token', null, { secret });
  return exchanged.status === 200 ? String(exchanged.body.data?.token) : null;
}

await main();
