import { loadConfig } from '../config/config.ts';
import { assertNodeVersion } from '../runtime.ts';
import { migrateToLatest } from './migrate.ts';
import { openDatabase } from './open-database.ts';

// `npm run db:migrate`: applies pending migrations and exits. The service also migrates at start.
assertNodeVersion();
const config = loadConfig(process.env, (warning) => console.warn(warning));
const handle = openDatabase(config.databaseUrl);
try {
  const applied = await migrateToLatest(handle.db);
  console.log(applied.length === 0 ? 'Database is up to date.' : `Applied: ${applied.join(', ')}`);
} finally {
  await handle.close();
}
