import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import {
  assertNodeVersion,
  COMPILE_CACHE_DIRECTORY,
  REQUIRED_NODE_MAJOR,
  SERVICE_NODE_OPTIONS,
} from '../../src/runtime.ts';

describe('assertNodeVersion', () => {
  it('accepts the pinned major version', () => {
    expect(() => assertNodeVersion(`${REQUIRED_NODE_MAJOR}.0.0`)).not.toThrow();
    expect(() => assertNodeVersion(`${REQUIRED_NODE_MAJOR}.21.3`)).not.toThrow();
  });

  it('accepts the runtime the tests run on (the pinned one)', () => {
    expect(() => assertNodeVersion()).not.toThrow();
  });

  it.each(['22.11.0', '23.9.0', '25.0.0', '2.4.0', 'garbage', ''])(
    'refuses Node %s, naming both versions',
    (version) => {
      expect(() => assertNodeVersion(version)).toThrow(
        `Portcullis needs Node ${REQUIRED_NODE_MAJOR} LTS; this is Node ${version}.`,
      );
    },
  );

  it('starts the service with the V8 options and compile cache the benchmark measured (npm start and the bench agree)', () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(manifest.scripts.start).toBe(
      `NODE_COMPILE_CACHE=${COMPILE_CACHE_DIRECTORY} node ${SERVICE_NODE_OPTIONS.join(' ')} src/server.ts`,
    );
  });
});
