import { type Static, Type } from 'typebox';
import { Refusal } from './messages.ts';

/** DECISIONS §4: PageNumber default 1, at least 1; PageSize default 100, 1..100. */
export const DEFAULT_PAGE_SIZE = 100;
export const MAXIMUM_PAGE_SIZE = 100;
/** The largest row offset a page may start at (a signed 32-bit integer, as the contract's int32). */
export const MAXIMUM_OFFSET = 2 ** 31 - 1;

export const PageQuery = {
  PageNumber: Type.Optional(
    Type.Integer({ minimum: 1, errorMessage: 'Page number must be at least 1.', description: 'Default 1.' }),
  ),
  PageSize: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAXIMUM_PAGE_SIZE,
      errorMessage: 'Page size must be between 1 and 100.',
      description: 'Default 100, at most 100.',
    }),
  ),
};
export const PageQuerySchema = Type.Object(PageQuery);
export type PageQuery = Static<typeof PageQuerySchema>;

export interface PageRequest {
  readonly pageNumber: number;
  readonly pageSize: number;
  readonly offset: number;
}

/** The page asked for; 400 when its offset would overflow (checked before any query runs). */
export function pageRequest(query: PageQuery): PageRequest {
  const pageNumber = query.PageNumber ?? 1;
  const pageSize = query.PageSize ?? DEFAULT_PAGE_SIZE;
  const offset = (pageNumber - 1) * pageSize;
  if (offset > MAXIMUM_OFFSET) throw new Refusal('Page number is too large.');
  return { pageNumber, pageSize, offset };
}
