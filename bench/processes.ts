import { type ChildProcess, fork } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** A child process we measure: its port and a way to read its peak resident memory. */
export interface MeasuredProcess {
  readonly child: ChildProcess;
  readonly port: number;
  /** Peak resident set size since the last reset (VmHWM), in megabytes. */
  peakRssMb(): number;
  /** Resets the peak to the current size, so each scenario reports its own (Linux: clear_refs). */
  resetPeakRss(): void;
  /** CPU time the process has used so far, all its threads, user and system, in seconds. */
  cpuSeconds(): number;
  /**
   * The part of `cpuSeconds` spent on libuv's thread pool (threads named `libuv-worker`), where
   * Argon2id runs: a sign-in's CPU splits into the hash and everything around it.
   */
  threadPoolCpuSeconds(): number;
  /**
   * CPU time so far of each HTTP thread, by thread id: Node names the main thread `MainThread`
   * and every worker thread `WorkerThread` (the service's other HTTP threads, and its SQLite
   * checkpointer, which spends little).
   */
  httpThreadCpuSeconds(): Map<number, ThreadCpu>;
  /** The process's memory map with each mapping's resident size (Linux: /proc/<pid>/smaps). */
  memoryMap(): string;
  stop(): Promise<void>;
}

export interface ThreadCpu {
  readonly name: string;
  readonly seconds: number;
}

/** Linux's USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every mainstream kernel. */
const CLOCK_TICKS_PER_SECOND = 100;

/** A port that is free now (the OS picks it; we release it for the child to bind). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** User and system time from a /proc `stat` file (fields 14 and 15, after the command name). */
function cpuSecondsOf(statFile: string): number {
  const fields = readFileSync(statFile, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

/** CPU time so far of each thread of `pid` whose name (/proc's `comm`) is one of `names`. */
function threadsNamed(pid: number, names: readonly string[]): Map<number, ThreadCpu> {
  const threads = new Map<number, ThreadCpu>();
  for (const thread of readdirSync(`/proc/${pid}/task`)) {
    try {
      const task = `/proc/${pid}/task/${thread}`;
      const name = readFileSync(`${task}/comm`, 'utf8').trim();
      if (names.includes(name)) threads.set(Number(thread), { name, seconds: cpuSecondsOf(`${task}/stat`) });
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return threads;
}

/** Starts `script` with PORT in its environment and waits until `readyPath` answers 200. */
export async function startProcess(
  script: string,
  env: NodeJS.ProcessEnv,
  portVariable: string,
  readyPath: string,
  nodeOptions: readonly string[] = [],
): Promise<MeasuredProcess> {
  const port = await freePort();
  const child = fork(script, [], {
    execArgv: [...process.execArgv, ...nodeOptions],
    env: { ...env, [portVariable]: String(port) },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  child.stderr?.on('data', (chunk: Buffer) => process.stderr.write(chunk));
  let exited: number | null = null;
  child.once('exit', (code) => {
    exited = code ?? -1;
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited !== null) throw new Error(`${script} exited with ${exited}`);
    if (Date.now() > deadline) throw new Error(`${script} did not start in 30 s`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}${readyPath}`)).status === 200) break;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    child,
    port,
    peakRssMb: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kilobytes = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
      return Math.round(kilobytes / 1024);
    },
    resetPeakRss: () => writeFileSync(`/proc/${child.pid}/clear_refs`, '5'),
    cpuSeconds: () => cpuSecondsOf(`/proc/${child.pid}/stat`),
    threadPoolCpuSeconds: () => {
      let seconds = 0;
      for (const thread of threadsNamed(child.pid!, ['libuv-worker']).values()) seconds += thread.seconds;
      return seconds;
    },
    httpThreadCpuSeconds: () => threadsNamed(child.pid!, ['MainThread', 'WorkerThread']),
    memoryMap: () => readFileSync(`/proc/${child.pid}/smaps`, 'utf8'),
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
