/**
 * The compiled result serialiser writes exactly what JSON.stringify writes, for
 * results graphql-jit builds from the real schema, and refuses shapes it cannot
 * describe.
 */
import { makeExecutableSchema } from '@graphql-tools/schema';
import fc from 'fast-check';
import { getOperationAST, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { typeDefs } from '../../src/app.js';
import { resolvers } from '../../src/graphql/resolvers/index.js';
import { resultSerialiser } from '../../src/graphql/result-serialiser.js';

const schema = makeExecutableSchema({ typeDefs, resolvers: resolvers as never });

function serialiserOf(query: string) {
  const operation = getOperationAST(parse(query));
  if (!operation) throw new Error('no operation');
  return resultSerialiser(schema, operation);
}

describe('the compiled result serialiser', () => {
  it('writes what JSON.stringify writes for any strings, nulls, booleans and numbers, in selection order', () => {
    const serialise = serialiserOf(`{ a: userByUsername(username: "x") { displayName id username createdAt
      posts(first: 2) { edges { cursor node { content createdAt } } pageInfo { hasPreviousPage hasNextPage endCursor } } } }`);
    expect(serialise).not.toBeNull();
    const text = fc.string({ unit: 'binary' });
    const edge = fc.record({ cursor: text, node: fc.option(fc.record({ content: text, createdAt: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()) })) });
    const user = fc.record({
      displayName: text,
      id: text,
      username: text,
      createdAt: fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
      posts: fc.record({
        edges: fc.array(edge, { maxLength: 3 }),
        pageInfo: fc.record({ hasPreviousPage: fc.boolean(), hasNextPage: fc.boolean(), endCursor: fc.option(text) }),
      }),
    });
    fc.assert(
      fc.property(fc.option(user), (a) => {
        const result = { data: { a } };
        expect(serialise!(result)).toBe(JSON.stringify(result));
      }),
      { numRuns: 300 },
    );
  });

  it('leaves out a skipped field, as JSON.stringify does, and writes a null object as null', () => {
    const serialise = serialiserOf(`query ($skip: Boolean!) { userByUsername(username: "x") { username displayName @skip(if: $skip) } }`)!;
    for (const data of [{ userByUsername: { username: 'x' } }, { userByUsername: { username: 'x', displayName: 'X "Y"' } }, { userByUsername: null }]) {
      expect(serialise({ data })).toBe(JSON.stringify({ data }));
    }
  });

  it('describes no shape that depends on the runtime type or merges fields', () => {
    expect(serialiserOf(`{ node(id: "x") { id } }`)).toBeNull(); // an interface
    expect(serialiserOf(`{ userByUsername(username: "x") { ...F } } fragment F on User { id }`)).toBeNull();
    expect(serialiserOf(`{ userByUsername(username: "x") { ... on User { id } } }`)).toBeNull();
    expect(serialiserOf(`{ userByUsername(username: "x") { id id } }`)).toBeNull();
    expect(serialiserOf(`{ userByUsername(username: "x") { __typename id } }`)).not.toBeNull();
  });
});
