import { sql } from 'kysely';
import type { TestApp, TestResponse } from './app.ts';
import { freshClientAddress } from './extidp.ts';

/** Signs in by email and password from a fresh client address (not the test's subject: its budget). */
export function signIn(
  test: TestApp,
  body: { email: string; password: string; scopeId?: string | null },
): Promise<TestResponse> {
  return test.request({ method: 'POST', url: '/api/auth/login', body, remoteAddress: freshClientAddress() });
}

/** POST to a subject-rights route as the token's holder, from a fresh client address. */
export function postAs(test: TestApp, url: string, token: string, body: unknown = {}): Promise<TestResponse> {
  return test.request({ method: 'POST', url, token, body, remoteAddress: freshClientAddress() });
}

/** Every table of the test database (Kysely's own migration tables included). */
export async function allTables(test: TestApp): Promise<string[]> {
  const { db } = test.services;
  if (test.dialect === 'sqlite') {
    const { rows } = await sql<{ name: string }>`select name from sqlite_master where type = 'table'`.execute(
      db,
    );
    return rows.map((row) => row.name);
  }
  const { rows } = await sql<{ name: string }>`
    select table_name as name from information_schema.tables
    where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(db);
  return rows.map((row) => row.name);
}

/**
 * Every cell of every table that contains one of the needles (case-insensitively), as
 * `table.column = value`: what a search of the whole database for someone's data would find.
 */
export async function cellsContaining(test: TestApp, needles: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  const wanted = needles.map((needle) => needle.toLowerCase());
  for (const table of await allTables(test)) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(
      test.services.db,
    );
    for (const row of rows) {
      for (const [column, value] of Object.entries(row)) {
        if (value === null || value === undefined) continue;
        const text = String(value).toLowerCase();
        for (const needle of wanted) {
          if (text.includes(needle)) found.push(`${table}.${column} = ${String(value)}`);
        }
      }
    }
  }
  return found;
}
