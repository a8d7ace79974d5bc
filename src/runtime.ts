export const REQUIRED_NODE_MAJOR = 24;

/** Fails loudly on the wrong runtime (the machine's own Node may be older than the pinned one). */
export function assertNodeVersion(version: string = process.versions.node): void {
  const major = Number(version.split('.')[0]);
  if (major !== REQUIRED_NODE_MAJOR) {
    throw new Error(
      `Portcullis needs Node ${REQUIRED_NODE_MAJOR} LTS; this is Node ${version}. Run it through npm (npm start), which uses the pinned runtime.`,
    );
  }
}

/**
 * V8 options the service runs with (`npm start` passes them; the benchmark starts the service
 * with the same; docs/performance.md has the measurements). They apply to every thread's heap.
 * - A 4 MB semi-space keeps the young generation small: the request path allocates short-lived
 *   objects only, so a larger nursery bought no throughput on this machine kind but cost about
 *   50 MB of resident memory under load.
 * - A 512 MB old generation, over ten times a thread's live data. The limit matters less
 *   than what V8 derives from it: after each full collection it lets the heap grow by a factor
 *   of the live data, up to 4 when the maximum is 2 GiB or more (as by default on this machine
 *   kind, 24 GiB); below that the factor shrinks with the maximum, from 2 towards 1.3 (1.6 at
 *   1 GiB, 1.4 at 512 MB). Under write load a thread promotes objects steadily, and V8 came to
 *   choose the factor 4: the process then kept about 100 MB more for the rest of the run. At
 *   1 GiB the largest step between two collections fell from 3.2–4.1 to 2.1–2.4 times, and no
 *   benchmark scenario before the sign-ins passed 278 MB (up to 399 without); at 512 MB the live
 *   check after the writes and the exchange peaked at 244–256 MB in three runs, against 260–266
 *   at 1 GiB in three runs of the same hour, for no CPU per request measurably spent (later runs
 *   at 512 MB: 249–265 MB, so about 10 MB lower, not always under 256).
 */
export const SERVICE_NODE_OPTIONS: readonly string[] = [
  '--max-semi-space-size=4',
  '--max-old-space-size=512',
];

/**
 * Environment the service process starts with (the start script sets it; the benchmark too).
 * - NODE_COMPILE_CACHE: Node's on-disk compile cache. On every start after the first, the
 *   bundles (scripts/build.ts) load from it compiled, so start-up compiles nothing; run from
 *   source, it also spares every thread the TypeScript type-stripper (about 15 MB each).
 *   Deleting it is harmless; the next start fills it again.
 * - MALLOC_MMAP_THRESHOLD_: by default glibc raises its mmap threshold each time a large block
 *   is freed, so later large blocks come from the heap of whichever thread allocated them and
 *   stay resident there after use. A fixed threshold hands every block of 128 KiB or more back
 *   to the system when it is freed (measured under the 128-connection read benchmark after a
 *   few sign-ins: 234–238 MB peak with it, 237–268 MB without). Argon2id's own 19 MiB per hash
 *   does not go through glibc: the library's allocator (mimalloc) maps it for each hash and
 *   unmaps it after, with or without this setting.
 */
export const SERVICE_PROCESS_ENVIRONMENT = {
  NODE_COMPILE_CACHE: 'node_modules/.cache/portcullis-compile-cache',
  MALLOC_MMAP_THRESHOLD_: String(128 * 1024),
} as const;
