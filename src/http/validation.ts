import type { FastifyRequest, FastifySchemaCompiler, RouteOptions } from 'fastify';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import type { TValidationError } from 'typebox/error';
import { InvalidField } from './messages.ts';

/**
 * Binding (spec §Errors, "Binding rules"; DECISIONS §2):
 * - a wrong-typed value in the path, query or body answers 400 `The request is malformed.`;
 * - a non-nullable query parameter sent empty or unparseable is 400, never its default;
 *   a nullable one sent empty binds to null and is ignored;
 * - a missing required field keeps the validator's message (`Name is required.`);
 * - body keys and query names match case-insensitively; unknown body keys are ignored.
 * Query strings are converted here rather than by Ajv-style coercion, which would quietly read
 * `includeDeleted=1` as true and an empty PageSize as 0.
 */

export const MALFORMED = 'The request is malformed.';

/** A schema node as binding reads it. `errorMessage` (ours): the message for a constraint it fails. */
interface SchemaNode {
  type?: string | string[];
  anyOf?: SchemaNode[];
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  format?: string;
  errorMessage?: string;
}

type HttpPart = 'body' | 'querystring' | 'params' | 'headers';

export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = Compile(schema);
  const part = (httpPart ?? 'body') as HttpPart;
  return (input: unknown) => {
    const value = part === 'querystring' || part === 'params' ? convertStrings(schema, input) : input;
    if (check.Check(value)) return { value: lowercaseGuids(schema, value) };
    return { error: bindingError(schema, part, value, check.Errors(value)) };
  };
};

/** The message of the first error, by the rules above. */
function bindingError(
  schema: TSchema,
  part: HttpPart,
  value: unknown,
  errors: readonly TValidationError[],
): Error {
  const malformed = new InvalidField(MALFORMED);
  if (part === 'params' || part === 'headers') return malformed;
  // A value of a type its field does not allow makes the whole request malformed, whatever
  // else is wrong with it. (A union reports its other branches' type errors too, so the test
  // is whether the value fits any allowed type, not whether a "type" error was reported.)
  for (const error of errors) {
    if (error.keyword === 'required') continue;
    const node = schemaAt(schema, error.instancePath);
    if (node !== undefined && !fitsSomeType(node, valueAt(value, error.instancePath))) return malformed;
    // An id that is not a GUID is a wrong-typed value too (spec: "a non-GUID id"), in the body as
    // in the path, not a field message.
    if (error.keyword === 'format' && node !== undefined && isGuidNode(node)) return malformed;
  }
  const required = errors.find((error) => error.keyword === 'required');
  if (required !== undefined) {
    const missing = (required.params as { requiredProperties?: string[] }).requiredProperties?.[0];
    return new InvalidField(missing === undefined ? MALFORMED : `${fieldName(missing)} is required.`);
  }
  const first = errors.find((error) => !STRUCTURAL_KEYWORDS.has(error.keyword)) ?? errors[0];
  if (first === undefined) return malformed;
  const field = lastSegment(first.instancePath);
  const custom = messageOf(schemaAt(schema, first.instancePath));
  if (custom !== undefined) return new InvalidField(custom);
  if (part === 'querystring' || field === null) return malformed;
  return new InvalidField(constraintMessage(fieldName(field), first));
}

/** Keywords that only say "a branch failed"; the branch's own error says why. */
const STRUCTURAL_KEYWORDS = new Set(['anyOf', 'oneOf', 'type']);

function messageOf(node: SchemaNode | undefined): string | undefined {
  if (node === undefined) return undefined;
  return node.errorMessage ?? node.anyOf?.map(messageOf).find((message) => message !== undefined);
}

function isGuidNode(node: SchemaNode): boolean {
  return node.format === 'uuid' || (node.anyOf?.some(isGuidNode) ?? false);
}

function valueAt(value: unknown, instancePath: string): unknown {
  let current = value;
  for (const segment of instancePath.split('/').filter((s) => s !== '')) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

function fitsSomeType(node: SchemaNode, value: unknown): boolean {
  const allowed = typesOf(node);
  if (allowed.size === 0) return true;
  if (value === null) return allowed.has('null');
  if (Array.isArray(value)) return allowed.has('array');
  if (typeof value === 'number')
    return allowed.has('number') || (allowed.has('integer') && Number.isInteger(value));
  return allowed.has(typeof value);
}

function constraintMessage(field: string, error: TValidationError): string {
  const params = error.params as { limit?: number };
  switch (error.keyword) {
    case 'minLength':
      return params.limit === 1
        ? `${field} is required.`
        : `${field} must be at least ${params.limit} characters.`;
    case 'maxLength':
      return `${field} must be at most ${params.limit} characters.`;
    case 'minItems':
      return `${field} must have at least ${params.limit} item${params.limit === 1 ? '' : 's'}.`;
    case 'maxItems':
      return `${field} must have at most ${params.limit} items.`;
    case 'minimum':
      return `${field} must be at least ${params.limit}.`;
    case 'maximum':
      return `${field} must be at most ${params.limit}.`;
    default:
      return `${field} is not valid.`;
  }
}

function fieldName(key: string): string {
  return key.charAt(0).toUpperCase() + key.slice(1);
}

function lastSegment(instancePath: string): string | null {
  const segments = instancePath.split('/').filter((segment) => segment !== '' && !/^\d+$/.test(segment));
  return segments.at(-1) ?? null;
}

function schemaAt(schema: TSchema, instancePath: string): SchemaNode | undefined {
  let current: SchemaNode | undefined = schema as SchemaNode;
  for (const segment of instancePath.split('/').filter((s) => s !== '')) {
    if (current === undefined) return undefined;
    current = /^\d+$/.test(segment) ? current.items : current.properties?.[segment];
  }
  return current;
}

// ---------------------------------------------------------------------------------------------
// Query and path conversion: text → typed values, strictly.

function allowsNull(schema: SchemaNode): boolean {
  if (schema.type === 'null' || (Array.isArray(schema.type) && schema.type.includes('null'))) return true;
  return schema.anyOf?.some(allowsNull) ?? false;
}

function typesOf(schema: SchemaNode): Set<string> {
  const types = new Set<string>();
  const visit = (node: SchemaNode) => {
    if (typeof node.type === 'string') types.add(node.type);
    else if (Array.isArray(node.type)) for (const type of node.type) types.add(type);
    for (const inner of node.anyOf ?? []) visit(inner);
  };
  visit(schema);
  return types;
}

function convertStrings(schema: TSchema, input: unknown): unknown {
  if (input === null || typeof input !== 'object') return input;
  const properties = (schema as { properties?: Record<string, SchemaNode> }).properties ?? {};
  const output: Record<string, unknown> = {};
  for (const [key, raw] of Object.entries(input as Record<string, unknown>)) {
    const property = properties[key];
    // Unknown parameters are ignored; a repeated one (an array) cannot bind to a single value.
    if (property === undefined) continue;
    output[key] = Array.isArray(raw) ? raw : convertOne(property, raw);
  }
  return output;
}

/** Converts one text value; what cannot convert stays text and fails the type check (400). */
function convertOne(schema: SchemaNode, raw: unknown): unknown {
  if (typeof raw !== 'string') return raw;
  const types = typesOf(schema);
  // Empty: null for a nullable parameter (then ignored); otherwise kept, so it fails as malformed
  // instead of silently falling back to the default.
  if (raw.trim() === '') return allowsNull(schema) ? null : raw;
  if (types.has('integer') && /^[+-]?\d{1,15}$/.test(raw)) return Number(raw);
  if (types.has('number') && Number.isFinite(Number(raw))) return Number(raw);
  if (types.has('boolean')) {
    const lowered = raw.toLowerCase();
    if (lowered === 'true') return true;
    if (lowered === 'false') return false;
  }
  return raw;
}

/** GUIDs compare case-insensitively; stored ids are lower case, so bound ones are made so too. */
function lowercaseGuids(schema: unknown, value: unknown): unknown {
  const node = schema as {
    format?: string;
    properties?: Record<string, unknown>;
    items?: unknown;
    anyOf?: unknown[];
  };
  if (typeof value === 'string') {
    const isGuid =
      node.format === 'uuid' || node.anyOf?.some((inner) => (inner as { format?: string }).format === 'uuid');
    return isGuid ? value.toLowerCase() : value;
  }
  if (Array.isArray(value))
    return node.items === undefined ? value : value.map((item) => lowercaseGuids(node.items, item));
  if (value !== null && typeof value === 'object' && node.properties !== undefined) {
    const record = value as Record<string, unknown>;
    for (const [key, inner] of Object.entries(node.properties)) {
      if (key in record) record[key] = lowercaseGuids(inner, record[key]);
    }
  }
  return value;
}

// ---------------------------------------------------------------------------------------------
// Case-insensitive keys: rename incoming keys to the schema's spelling before validation.

type KeyMap = ReadonlyMap<string, string>;

function keyMapOf(schema: unknown): KeyMap | null {
  const properties = (schema as { properties?: Record<string, unknown> } | undefined)?.properties;
  if (properties === undefined) return null;
  return new Map(Object.keys(properties).map((key) => [key.toLowerCase(), key]));
}

function renameKeys(value: unknown, keys: KeyMap): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const renamed: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value as Record<string, unknown>)) {
    const canonical = keys.get(key.toLowerCase()) ?? key;
    // An exact spelling wins over a case variant if a client sends both.
    if (canonical in renamed && key !== canonical) continue;
    renamed[canonical] = inner;
  }
  return renamed;
}

/** onRoute hook: adds a preValidation step that renames body and query keys for this route. */
export function addCaseInsensitiveKeys(route: RouteOptions): void {
  const bodyKeys = keyMapOf(route.schema?.body);
  const queryKeys = keyMapOf(route.schema?.querystring);
  if (bodyKeys === null && queryKeys === null) return;
  const rename = async (request: FastifyRequest) => {
    if (bodyKeys !== null) request.body = renameKeys(request.body, bodyKeys);
    if (queryKeys !== null) request.query = renameKeys(request.query, queryKeys);
  };
  const existing = route.preValidation;
  route.preValidation =
    existing === undefined ? [rename] : [rename, ...(Array.isArray(existing) ? existing : [existing])];
}
