import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const OPEN_DATABASE = new URL('../../src/db/open-database.ts', import.meta.url).href;

/**
 * How many of the PostgreSQL driver's files a fresh Node process has loaded after opening `url`
 * (opening a PostgreSQL pool connects to nothing until a query, so no server is needed).
 */
function pgFilesLoadedAfterOpening(url: string): number {
  const script = `
    import { createRequire } from 'node:module';
    const { openDatabase } = await import(${JSON.stringify(OPEN_DATABASE)});
    const handle = openDatabase(${JSON.stringify(url)});
    const files = Object.keys(createRequire(import.meta.url).cache);
    console.log(files.filter((file) => file.includes('/node_modules/pg/')).length);
    await handle.close();
  `;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  return Number(output.trim());
}

describe('the PostgreSQL driver', () => {
  it('is not loaded by a process that opens SQLite (each thread would carry it)', () => {
    expect(pgFilesLoadedAfterOpening('sqlite::memory:')).toBe(0);
  });

  it('is loaded once a PostgreSQL database is opened', () => {
    expect(pgFilesLoadedAfterOpening('postgres://127.0.0.1:1/unused')).toBeGreaterThan(0);
  });
});
