/**
 * The same schema, resolvers and store on mercurius with graphql-jit, on fastify
 * (mercurius caches parsing and validation per query text itself).
 */
import { makeExecutableSchema } from '@graphql-tools/schema';
import Fastify from 'fastify';
import mercurius from 'mercurius';
import { typeDefs } from '../../src/app.js';
import { createRequestContext } from '../../src/composition-root.js';
import { resolvers } from '../../src/graphql/resolvers/index.js';
import { benchServices } from '../fixture.js';

const { services } = await benchServices(process.argv[2]!);
const app = Fastify({ logger: false });
await app.register(mercurius, {
  // The executable schema every server builds (resolvers attached, Node's resolveType included).
  schema: makeExecutableSchema({ typeDefs, resolvers: resolvers as never }),
  context: () => createRequestContext(services, null),
  jit: 1,
});
await app.listen({ port: Number(process.argv[3] ?? 0), host: '127.0.0.1' });
console.log(`READY ${(app.server.address() as { port: number }).port}`);
// Exit on SIGTERM through process.exit, so --cpu-prof writes its profile.
process.on('SIGTERM', () => process.exit(0));
