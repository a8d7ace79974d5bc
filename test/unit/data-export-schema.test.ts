import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DataExport } from '../../src/modules/privacy/privacy.schemas.ts';

/** docs/data-subject-rights.md publishes the export's JSON Schema: it must be the one the code uses. */
describe('the published data-export schema', () => {
  it('equals the DataExport schema that shapes the answer', () => {
    const document = readFileSync(new URL('../../docs/data-subject-rights.md', import.meta.url), 'utf8');
    const block = /## The export's JSON Schema[\s\S]*?```json\n([\s\S]*?)\n```/.exec(document);
    expect(block, 'a json block under the schema heading').not.toBeNull();
    const { $schema, ...published } = JSON.parse(block![1]!) as Record<string, unknown>;
    expect($schema).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(published).toEqual(JSON.parse(JSON.stringify(DataExport)));
  });
});
