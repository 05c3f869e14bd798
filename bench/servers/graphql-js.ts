/**
 * The same schema, resolvers and store on bare graphql-js over node:http, with a parse
 * and validation cache per query text (as every peer has), executing with graphql-js.
 */
import { createServer } from 'node:http';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { execute, parse, validate, type DocumentNode, type GraphQLError } from 'graphql';
import { typeDefs } from '../../src/app.js';
import { createRequestContext } from '../../src/composition-root.js';
import { resolvers } from '../../src/graphql/resolvers/index.js';
import { benchServices } from '../fixture.js';

const { services } = await benchServices(process.argv[2]!);
const schema = makeExecutableSchema({ typeDefs, resolvers: resolvers as never });
const documents = new Map<string, { document: DocumentNode; errors: readonly GraphQLError[] }>();

function prepared(query: string) {
  let entry = documents.get(query);
  if (!entry) {
    const document = parse(query);
    entry = { document, errors: validate(schema, document) };
    if (documents.size >= 1_000) documents.delete(documents.keys().next().value!);
    documents.set(query, entry);
  }
  return entry;
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', async () => {
    const { query, variables, operationName } = JSON.parse(Buffer.concat(chunks).toString()) as {
      query: string;
      variables?: Record<string, unknown>;
      operationName?: string;
    };
    const { document, errors } = prepared(query);
    const result = errors.length
      ? { errors }
      : await execute({ schema, document, variableValues: variables, operationName, contextValue: createRequestContext(services, null) });
    const body = JSON.stringify(result);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
});
server.listen(Number(process.argv[3] ?? 0), '127.0.0.1', () => console.log(`READY ${(server.address() as { port: number }).port}`));
// Exit on SIGTERM through process.exit, so --cpu-prof writes its profile.
process.on('SIGTERM', () => process.exit(0));
