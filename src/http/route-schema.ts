import type { TSchema } from 'typebox';
import { FailureOutput } from './envelope.ts';

/** Statuses every route that requires a token can answer, beyond its own. */
export const AUTHENTICATED_ERRORS = [400, 401, 403] as const;

/**
 * The response map of a route: its success schema, and FailureOutput for each status it can
 * refuse with (listed in OpenAPI, and serialized with data: null) plus 500.
 */
export function responses(success: TSchema, errorStatuses: readonly number[], successStatus = 200) {
  const map: Record<number, TSchema> = { [successStatus]: success };
  for (const status of new Set([...errorStatuses, 500])) map[status] = FailureOutput;
  return map;
}
