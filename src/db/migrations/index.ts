import { foundation } from './0001-foundation.ts';
import { extidp } from './0005-extidp.ts';
import type { Migration } from './migration.ts';

/** Every migration, in order. Names never change once released. */
export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  '0001-foundation': foundation,
  '0005-extidp': extidp,
};
