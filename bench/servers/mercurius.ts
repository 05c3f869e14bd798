/** The same schema and resolvers on mercurius with graphql-jit, on fastify. */
import Fastify from 'fastify';
import mercurius from 'mercurius';
import { typeDefs } from '../../src/app.js';
import { createRequestContext } from '../../src/composition-root.js';
import { resolvers } from '../../src/graphql/resolvers/index.js';
import { benchServices } from '../fixture.js';

const { services } = await benchServices(process.argv[2]!);
const app = Fastify({ logger: false });
await app.register(mercurius, {
  schema: typeDefs,
  resolvers: resolvers as never,
  context: () => createRequestContext(services, null),
  jit: 1,
});
await app.listen({ port: 0, host: '127.0.0.1' });
console.log(`READY ${(app.server.address() as { port: number }).port}`);
