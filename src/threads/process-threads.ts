import { readdirSync, readFileSync } from 'node:fs';

/** One thread of a process, as Linux's /proc shows it. */
export interface ProcessThread {
  readonly id: number;
  /**
   * Its name (`comm`, at most 15 characters): Node's are `MainThread`, `libuv-worker`,
   * `V8Worker`…, and a worker thread's is the name it was started with (`WorkerThread` without).
   */
  readonly name: string;
  /** Its CPU time so far, user and system. */
  readonly cpuSeconds: number;
  /** The part of `cpuSeconds` spent in the kernel (system time). */
  readonly systemCpuSeconds: number;
  /** Its page faults so far that needed no read from disk (minor faults): memory first touched. */
  readonly minorFaults: number;
  readonly niceness: number;
}

/** Linux's USER_HZ, the unit of /proc's CPU times: 100 on every mainstream kernel. */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * The threads of process `pid` (`self`: this one), read from /proc (Linux only). A thread that
 * ends while they are read is left out.
 */
export function processThreads(pid: number | 'self' = 'self'): ProcessThread[] {
  const threads: ProcessThread[] = [];
  for (const entry of readdirSync(`/proc/${pid}/task`)) {
    try {
      threads.push({
        id: Number(entry),
        ...parseStat(readFileSync(`/proc/${pid}/task/${entry}/stat`, 'utf8')),
      });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return threads;
}

/**
 * The name, CPU time, minor faults and niceness in the text of a /proc `stat` file (a process's or
 * a thread's).
 */
export function parseStat(text: string): Omit<ProcessThread, 'id'> {
  // The name (field 2) is in parentheses and may itself hold spaces or parentheses: the last
  // ')' ends it. The fields after it start at field 3, so field n is at index n - 3.
  const nameEnd = text.lastIndexOf(')');
  const fields = text.slice(nameEnd + 2).split(' ');
  return {
    name: text.slice(text.indexOf('(') + 1, nameEnd),
    // Field 10.
    minorFaults: Number(fields[7]),
    // Fields 14 and 15: user and system time, in clock ticks.
    cpuSeconds: (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND,
    systemCpuSeconds: Number(fields[12]) / CLOCK_TICKS_PER_SECOND,
    // Field 19.
    niceness: Number(fields[16]),
  };
}
