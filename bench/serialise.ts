/**
 * `npx tsx bench/serialise.ts`: what writing a response costs, JSON.stringify against
 * graphql-jit's compiled serialiser (fast-json-stringify), on real results of the
 * timeline workload's query executed over the benchmark fixture. graphql-jit cannot
 * describe `createdAt` (the DateTime scalar) to its serialiser, so both write the same
 * query without it. Each text's UTF-8 length is taken, as the HTTP handler does: a text
 * built by concatenation (the compiled serialiser's) is flattened then, and that is
 * part of its cost. Run it pinned (`taskset -c 0`) for steady figures.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { parse } from 'graphql';
import { compileQuery, isCompiledQuery } from 'graphql-jit';
import { typeDefs } from '../src/app.js';
import { createRequestContext } from '../src/composition-root.js';
import { resolvers } from '../src/graphql/resolvers/index.js';
import { benchServices, prepareOverheadFixture } from './fixture.js';

const QUERY = `query Timeline { userByUsername(username: "bench") { posts(first: 20) {
  edges { cursor node { id content author { username displayName } } }
  pageInfo { hasNextPage hasPreviousPage endCursor } } } }`;

const dir = mkdtempSync(join(tmpdir(), 'serialise-'));
const file = join(dir, 'fixture.db');
await prepareOverheadFixture(file);
const { services, store } = await benchServices(file);
const schema = makeExecutableSchema({ typeDefs, resolvers: resolvers as never });
const compiled = compileQuery(schema, parse(QUERY), undefined, { customJSONSerializer: true });
if (!isCompiledQuery(compiled)) throw new Error('the query did not compile');
const results: Array<{ data: unknown }> = [];
for (let i = 0; i < 500; i++) {
  const { data } = await compiled.query(undefined, createRequestContext(services, null), {});
  results.push({ data });
}
if (compiled.stringify(results[0]!) !== JSON.stringify(results[0])) throw new Error('the two serialisers disagree');

const writers: Array<[string, (r: { data: unknown }) => string]> = [
  ['JSON.stringify', (r) => JSON.stringify(r)],
  ["graphql-jit's compiled serialiser", (r) => compiled.stringify(r)],
];
const ROUNDS = 5;
const best = new Map<string, { alone: number; written: number }>();
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, write] of writers) {
    // The text alone, then the text and its UTF-8 length (flattened, as before a write).
    let started = process.hrtime.bigint();
    let chars = 0;
    for (let k = 0; k < 40; k++) for (const r of results) chars += write(r).length;
    const alone = Number(process.hrtime.bigint() - started) / (40 * results.length) / 1000;
    started = process.hrtime.bigint();
    let bytes = 0;
    for (let k = 0; k < 40; k++) for (const r of results) bytes += Buffer.byteLength(write(r));
    const written = Number(process.hrtime.bigint() - started) / (40 * results.length) / 1000;
    if (chars === 0 || bytes === 0) throw new Error('nothing written');
    const previous = best.get(name);
    best.set(name, { alone: Math.min(previous?.alone ?? Infinity, alone), written: Math.min(previous?.written ?? Infinity, written) });
  }
}
for (const [name, { alone, written }] of best) {
  console.log(`${name}: ${alone.toFixed(2)} µs per 20-edge timeline result; ${written.toFixed(2)} µs with its byte length (best of ${ROUNDS} rounds)`);
}
await store.close();
rmSync(dir, { recursive: true, force: true });
