import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The file a worker thread starts from: the module named `name` beside `startingModule` (the
 * caller's `import.meta.url`).
 *
 * Run from source, that is the TypeScript file of that name in the caller's directory. Run from
 * the build (`npm start`), every module of a thread is bundled into one file in dist/, and each
 * worker entry is a bundle of its own there, under the same name (scripts/build.ts). The caller's
 * own extension tells the two apart: `.ts` in source, `.js` in the build.
 */
export function workerEntry(name: string, startingModule: string): URL {
  return new URL(`./${name}${extname(fileURLToPath(startingModule))}`, startingModule);
}
