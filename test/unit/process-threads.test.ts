import { describe, expect, it } from 'vitest';
import { parseStat, processThreads } from '../../src/threads/process-threads.ts';

/**
 * A thread's /proc stat line as Linux writes it (proc(5)): pid, (comm), state, then the numeric
 * fields; 1200 minor faults (field 10), utime 700 and stime 250 ticks (fields 14 and 15), niceness
 * 19 (field 19).
 */
const STAT_LINE =
  '4242 (a (b) c) S 4200 4200 4200 0 -1 4194368 1200 0 0 0 700 250 0 0 39 19 6 0 1234 ' +
  '1099511627776 51200 18446744073709551615 0 0 0 0 0 16781312 0 0 0 0 -1 1 0 0 0 0 0';

describe("a thread's CPU time from /proc (process-threads.ts)", () => {
  it('reads the name up to the last parenthesis, however many it holds', () => {
    expect(parseStat(STAT_LINE).name).toBe('a (b) c');
  });

  it('adds user and system time, keeps the system part apart, in seconds', () => {
    const stat = parseStat(STAT_LINE);
    expect(stat.cpuSeconds).toBe(9.5);
    expect(stat.systemCpuSeconds).toBe(2.5);
    expect(stat.niceness).toBe(19);
  });

  it("reads the minor faults, not the children's or the major ones beside them", () => {
    const line = STAT_LINE.replace(' 4194368 1200 0 0 0 ', ' 4194368 1200 7 3 5 ');
    expect(parseStat(line).minorFaults).toBe(1200);
  });

  it("lists this process's own threads, the main one among them", () => {
    const threads = processThreads();
    const main = threads.find((thread) => thread.id === process.pid);
    expect(main).toBeDefined();
    expect(main!.systemCpuSeconds).toBeGreaterThanOrEqual(0);
    expect(main!.systemCpuSeconds).toBeLessThanOrEqual(main!.cpuSeconds);
    // A running Node process has touched memory: its main thread has faulted pages in.
    expect(main!.minorFaults).toBeGreaterThan(0);
  });
});
