/**
 * The same schema and resolvers on bare graphql-js over node:http: parse, validate and
 * execute on every request, no cache (the peer the target compares against).
 */
import { createServer } from 'node:http';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { graphql } from 'graphql';
import { typeDefs } from '../../src/app.js';
import { createRequestContext } from '../../src/composition-root.js';
import { resolvers } from '../../src/graphql/resolvers/index.js';
import { benchServices } from '../fixture.js';

const { services } = await benchServices(process.argv[2]!);
const schema = makeExecutableSchema({ typeDefs, resolvers: resolvers as never });
const server = createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const { query, variables } = JSON.parse(Buffer.concat(chunks).toString()) as { query: string; variables?: Record<string, unknown> };
  const result = await graphql({ schema, source: query, variableValues: variables, contextValue: createRequestContext(services, null) });
  const body = JSON.stringify(result);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.listen(0, '127.0.0.1', () => console.log(`READY ${(server.address() as { port: number }).port}`));
