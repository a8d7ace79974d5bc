import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { build, stop } from 'esbuild';

/**
 * Bundles the service for `npm start`: each thread's entry and everything it imports, the
 * dependencies included, becomes one JavaScript file in dist/ (docs/performance-history.md, tenth
 * round).
 *
 * Why: a thread that loads the service as separate modules keeps every module's own records and
 * source in its heap: about a thousand files, TypeBox alone 684. Bundled, a thread's heap is about
 * 11 MB smaller once the app is ready (19 MB against 30), and every HTTP thread has one.
 *
 * Run from source (`node src/server.ts`), the service still works as it always did; the worker
 * threads find their entries either way (src/threads/worker-entry.ts).
 */

const ROOT = resolve(import.meta.dirname, '..');

/** The default output directory, the one `npm start` runs from. */
export const DIST = join(ROOT, 'dist');

/** The process entry and every module a worker thread starts from, each bundled on its own. */
const ENTRIES = ['src/server.ts', 'src/threads/http-thread.ts', 'src/db/sqlite-checkpointer.ts'];

/** Files that modules read beside themselves at run time (`new URL('./…', import.meta.url)`). */
const ASSETS = ['src/crypto/common-passwords.txt'];

/**
 * Left to load from node_modules at run time:
 * - native addons, which find their compiled part beside their own files;
 * - what loads only when configured (PostgreSQL, Redis, SMTP), so it costs nothing otherwise;
 * - the OpenAPI plugins, which read their package.json and the explorer's static files from
 *   their own directory.
 */
const EXTERNAL = [
  'better-sqlite3',
  '@node-rs/argon2',
  'pg',
  'ioredis',
  'nodemailer',
  '@fastify/swagger',
  '@fastify/swagger-ui',
];

/**
 * Bundled CommonJS dependencies call `require` for Node's own modules; an ES module has none, so
 * each bundle makes one (under a name no bundled module uses for its own import).
 */
const REQUIRE_FOR_COMMONJS =
  "import { createRequire as createRequireForBundle } from 'node:module';\n" +
  'const require = createRequireForBundle(import.meta.url);';

/**
 * Builds the bundles into `outdir`. Each file is written beside its place and renamed into it,
 * so an instance starting from the same directory meanwhile reads either the old file or the
 * new one, never half of one.
 */
export async function buildService(outdir: string = DIST): Promise<void> {
  const { outputFiles } = await build({
    entryPoints: ENTRIES.map((entry) => join(ROOT, entry)),
    outdir,
    write: false,
    // Flat: every entry lands beside the others, as worker-entry.ts expects.
    entryNames: '[name]',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    external: EXTERNAL,
    banner: { js: REQUIRE_FOR_COMMONJS },
    // Not minified: stack traces keep readable names and lines. Names are not pinned with
    // `keepNames`: it wraps every function and class in a call that sets its name, which cost
    // about a fifth more CPU per health check (docs/performance-history.md, tenth round). A
    // top-level name that two modules share gets a number appended in the bundle; nothing reads
    // such names (jose's errors, named after their classes, are logged by their codes).
    minify: false,
    // Read only when Node runs with --enable-source-maps (README, deployment).
    sourcemap: 'linked',
    logLevel: 'warning',
  });
  // esbuild builds in a child process of its own, which would otherwise live on beside the caller
  // (the benchmark's measurements, a test run).
  await stop();
  mkdirSync(outdir, { recursive: true });
  for (const file of outputFiles) replaceFile(file.path, file.contents);
  for (const asset of ASSETS) replaceFile(join(outdir, basename(asset)), readFileSync(join(ROOT, asset)));
}

function replaceFile(path: string, contents: Uint8Array): void {
  const written = `${path}.${process.pid}.tmp`;
  writeFileSync(written, contents);
  renameSync(written, path);
}

if (import.meta.main) await buildService();
