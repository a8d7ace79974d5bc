import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

export const OPENAPI_VERSION_LABEL = 'v1';

/** Keywords of ours that steer binding messages; not part of the published schemas. */
const INTERNAL_KEYWORDS = new Set(['errorMessage']);

/**
 * OpenAPI 3.1 at /openapi.json, generated from the route schemas, and the explorer at /swagger.
 * Routes with `schema.hide` (the root health aliases, the document itself) stay out of it.
 */
export async function registerOpenApi(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Portcullis identity service',
        version: OPENAPI_VERSION_LABEL,
        description:
          'Scope-based multi-tenant identity management. Every answer is a DataOutput or PaginatedOutput envelope; the status comes from the message.',
      },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A person token.' },
          applicationBearer: {
            type: 'http',
            scheme: 'bearer',
            bearerFormat: 'JWT',
            description: 'An application token from POST /api/applications/token.',
          },
        },
      },
    },
    transformObject: (documentObject) =>
      stripInternalKeywords((documentObject as { openapiObject: object }).openapiObject),
  });
  await app.register(swaggerUi, { routePrefix: '/swagger' });
  app.get('/openapi.json', { schema: { hide: true }, config: { access: 'anonymous' } }, async () =>
    app.swagger(),
  );
}

function stripInternalKeywords<T>(value: T): T {
  if (Array.isArray(value)) return value.map(stripInternalKeywords) as T;
  if (value === null || typeof value !== 'object') return value;
  const copy: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (!INTERNAL_KEYWORDS.has(key)) copy[key] = stripInternalKeywords(inner);
  }
  return copy as T;
}
