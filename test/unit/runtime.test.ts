import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import {
  assertNodeVersion,
  REQUIRED_NODE_MAJOR,
  SERVICE_NODE_OPTIONS,
  SERVICE_PROCESS_ENVIRONMENT,
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

  it('starts the built service with the environment and V8 options the benchmark measured (npm start and the bench agree)', () => {
    const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      scripts: Record<string, string>;
    };
    const environment = Object.entries(SERVICE_PROCESS_ENVIRONMENT).map(
      ([name, value]) => `${name}=${value}`,
    );
    expect(manifest.scripts.start).toBe(
      `${manifest.scripts.build} && ${environment.join(' ')} node ${SERVICE_NODE_OPTIONS.join(' ')} dist/server.js`,
    );
  });
});
