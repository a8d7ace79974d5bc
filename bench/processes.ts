import { type ChildProcess, fork } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { parseStat, type ProcessThread, processThreads } from '../src/threads/process-threads.ts';
import { HTTP_THREAD_NAME } from '../src/threads/http-threads.ts';
import { POOL_THREAD_NAME } from '../src/threads/thread-pool.ts';

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
   * What libuv's thread pool (threads named `libuv-worker`), where Argon2id runs, has spent so
   * far, its threads summed: `cpuSeconds` is the part of the process's CPU time spent on the
   * pool (a sign-in's CPU splits into the hash and everything around it), `systemCpuSeconds` the
   * kernel's part of that (a verify maps its 19 MiB afresh and unmaps it after), and `minorFaults`
   * the pages the pool's threads touched for the first time (faulted in).
   */
  threadPoolUsage(): ThreadUsage;
  /**
   * CPU time so far of each HTTP thread, by thread id: the main thread (`MainThread`) and the
   * others (named by the service, `HTTP_THREAD_NAME`).
   */
  httpThreadCpuSeconds(): Map<number, ProcessThread>;
  /** The process's memory map with each mapping's resident size (Linux: /proc/<pid>/smaps). */
  memoryMap(): string;
  stop(): Promise<void>;
}

/** What a thread (or several, summed) has spent so far: CPU time, its kernel part, page faults. */
export type ThreadUsage = Pick<ProcessThread, 'cpuSeconds' | 'systemCpuSeconds' | 'minorFaults'>;

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

/** The threads of `pid` whose name is one of `names`, with what each has spent so far, by id. */
function threadsNamed(pid: number, names: readonly string[]): Map<number, ProcessThread> {
  return new Map(
    processThreads(pid)
      .filter((thread) => names.includes(thread.name))
      .map((thread) => [thread.id, thread]),
  );
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
    cpuSeconds: () => parseStat(readFileSync(`/proc/${child.pid}/stat`, 'utf8')).cpuSeconds,
    threadPoolUsage: () => {
      let cpuSeconds = 0;
      let systemCpuSeconds = 0;
      let minorFaults = 0;
      for (const thread of threadsNamed(child.pid!, [POOL_THREAD_NAME]).values()) {
        cpuSeconds += thread.cpuSeconds;
        systemCpuSeconds += thread.systemCpuSeconds;
        minorFaults += thread.minorFaults;
      }
      return { cpuSeconds, systemCpuSeconds, minorFaults };
    },
    httpThreadCpuSeconds: () => threadsNamed(child.pid!, ['MainThread', HTTP_THREAD_NAME]),
    memoryMap: () => readFileSync(`/proc/${child.pid}/smaps`, 'utf8'),
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
