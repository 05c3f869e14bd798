/**
 * The name index on a simulated cluster (seed 004's lock-free index entries, derived
 * and denormalized): renames, removals and other profile changes of the same users from
 * instances with clocks up to ±1 s apart, landing late and out of order (some minutes
 * past their window), an instance crashing. After settling and the trailing passes, the index holds exactly the entries the user rows derive:
 * one version per user, the one its row names, with the row's values; and searches find
 * exactly the users whose names match.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { scanRows } from '../../src/counts/recount.js';
import { userNameIndexTable } from '../../src/features/directory/directory-tables.js';
import { foldName, matchesTerms, namePartsOf, parseNameQuery } from '../../src/features/directory/name-index.js';
import { aUser } from '../../src/features/users/user-mother.js';
import { readUsers, type User } from '../../src/features/users/users.js';
import { armCrash, assertSim, crashPoint, lateLanding, offsets, runAll, scheduled } from '../support/sim-arbitraries.js';
import { SimCluster } from '../support/sim-cluster.js';

const USERS = 3;
const FIRST = ['Ada', 'Zoë', 'Jo', ''];
const LAST = ['Smith', 'Müller', 'van Dijk', ''];
const PLACES = ['Kyoto', 'Lagos'];
const QUERIES = ['smi', 'jo', 'a', 'muller zoe', 'dijk', 'z'];

/** The entries a user row derives, as comparable strings: partition, key, and what each shows. */
function derived(user: User): string[] {
  const parts = namePartsOf(user.firstName, user.lastName);
  const prefixes = new Set(parts.flatMap((p) => [1, 2, 3].filter((n) => n <= [...p].length || n === 1).map((n) => [...p].slice(0, n).join(''))));
  return [...prefixes].map((prefix) =>
    JSON.stringify([prefix, foldName(user.lastName ?? ''), foldName(user.firstName ?? ''), user.id, String(user.nameVersion), user.displayName, user.location, user.firstName, user.lastName]),
  );
}

describe('the name index on a simulated cluster', () => {
  it('holds exactly the entries the user rows derive after concurrent renames, and finds exactly the matching users', async () => {
    await assertSim(
      'names',
      fc.asyncProperty(
        fc.integer(),
        offsets,
        crashPoint,
        fc.array(
          fc.record({ ...scheduled, user: fc.nat(USERS - 1), first: fc.nat(FIRST.length - 1), last: fc.nat(LAST.length - 1), place: fc.option(fc.nat(PLACES.length - 1), { nil: undefined }) }),
          { minLength: 2, maxLength: 14 },
        ),
        lateLanding,
        async (seed, offsetsMs, crash, ops, lateLandingMs) => {
          const cluster = await SimCluster.create({ seed, offsetsMs, lateLandingMs });
          try {
            const ids: string[] = [];
            for (let i = 0; i < USERS; i++) {
              const made = await cluster.at(i).run((ctx) => ctx.users.create({ ...aUser(), firstName: 'Start', lastName: 'Startup' }));
              if (made.kind !== 'ok') throw new Error('setup failed');
              ids.push(made.value.id);
            }
            armCrash(cluster, crash);
            cluster.armLate();
            await runAll(cluster, ops, (o, instance) =>
              instance.run((ctx) =>
                ctx.users.update(ids[o.user]!, {
                  firstName: FIRST[o.first]!,
                  lastName: LAST[o.last]!,
                  ...(o.place !== undefined && { location: PLACES[o.place]! }),
                }),
              ),
            );
            await cluster.settle({ rounds: 4 });
            // Renames held back land minutes past their windows; the trailing passes sweep them.
            await cluster.settleLate();
            const users = (await readUsers(cluster.base, ids)).map((u) => u!);
            const entries: string[] = [];
            for await (const rows of scanRows(cluster.base, userNameIndexTable)) {
              for (const r of rows) {
                entries.push(JSON.stringify([r.prefix, r.last_key, r.first_key, r.user_id, String(r.version), r.display_name, r.location, r.first_name, r.last_name]));
              }
            }
            expect(entries.sort()).toEqual(users.flatMap(derived).sort());
            for (const query of QUERIES) {
              const terms = parseNameQuery(query);
              const want = users.filter((u) => matchesTerms(terms, namePartsOf(u.firstName, u.lastName))).map((u) => u.id).sort();
              const page = await cluster.at(0).run((ctx) => ctx.directory.byName(query, { first: 50 }));
              if (page.kind !== 'ok') throw new Error(`search failed: ${String((page as { error?: unknown }).error)}`);
              expect(page.value.edges.map((e) => e.node.userId).sort(), query).toEqual(want);
            }
          } finally {
            await cluster.close();
          }
        },
      ),
    );
  }, 120_000);
});
