import { foundation } from './0001-foundation.ts';
import { persons } from './0002-persons.ts';
import type { Migration } from './migration.ts';

/** Every migration, in order. Names never change once released. */
export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  '0001-foundation': foundation,
  '0002-persons': persons,
};
