import { type Static, type TSchema, Type } from 'typebox';

/**
 * The two answer envelopes of the contract (spec §Resources). Success answers are serialized
 * with `data` of the operation's own schema; failures always with `data: null` (FailureOutput),
 * so each status has one exact schema in the OpenAPI document.
 */

const Messages = Type.Array(Type.String());

export const DataOutput = <T extends TSchema>(data: T) =>
  Type.Object({ data, messages: Messages, errors: Messages, success: Type.Boolean() });

export const PaginatedOutput = <T extends TSchema>(item: T) =>
  Type.Object({
    data: Type.Array(item),
    pageNumber: Type.Integer(),
    pageSize: Type.Integer(),
    totalRecords: Type.Integer(),
    messages: Messages,
    errors: Messages,
    success: Type.Boolean(),
  });

export const FailureOutput = Type.Object(
  { data: Type.Null(), messages: Messages, errors: Messages, success: Type.Literal(false) },
  { $id: 'FailureOutput', description: 'Any refusal or failure: the reasons are in errors.' },
);
export type FailureOutput = Static<typeof FailureOutput>;

export interface Page<T> {
  readonly items: readonly T[];
  readonly pageNumber: number;
  readonly pageSize: number;
  readonly totalRecords: number;
}

export const ok = <T>(data: T, message: string) =>
  ({ data, messages: [message], errors: [], success: true }) as const;

export const okPage = <T>(page: Page<T>, message: string) => ({
  data: page.items,
  pageNumber: page.pageNumber,
  pageSize: page.pageSize,
  totalRecords: page.totalRecords,
  messages: [message],
  errors: [],
  success: true,
});

export const failure = (errors: readonly string[]): FailureOutput => ({
  data: null,
  messages: [],
  errors: [...errors],
  success: false,
});

/** A nullable value, written as a JSON Schema type list (fast to serialize, exact in OpenAPI 3.1). */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
