import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildService } from '../scripts/build.ts';

/**
 * Builds the service once per run, as `npm start` does, for the tests that start the real process
 * (helpers/server-process.ts). Inside the project, so the bundles find the packages they leave to
 * node_modules; in a directory of its own, so a run never touches dist/.
 */
export default async function buildForProcessTests(project: TestProject): Promise<() => void> {
  const cache = resolve(import.meta.dirname, '..', 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  const directory = mkdtempSync(join(cache, 'portcullis-test-build-'));
  await buildService(directory);
  project.provide('serviceBuild', directory);
  return () => rmSync(directory, { recursive: true, force: true });
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The directory the service was built into for this run (its entry: server.js). */
    serviceBuild: string;
  }
}
