import Fastify from 'fastify';

// The physical floor on this machine: a bare Fastify server answering a constant JSON document,
// with no logging, authentication or database. Every scenario is reported as a ratio to it.
const app = Fastify({ logger: false });
const document = { data: { status: 'ok' }, messages: [], errors: [], success: true };
app.get('/', async () => document);
await app.listen({ host: '127.0.0.1', port: Number(process.env.BASELINE_PORT ?? 0) });
