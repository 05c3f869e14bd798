/**
 * Runs the store contract against every store in STORES: SQLite always; Cassandra
 * when a Docker engine is reachable (testcontainers) or CASSANDRA_CONTACT_POINTS is
 * set. Otherwise the Cassandra run is reported as skipped, with the reason.
 */
import { describe, it } from 'vitest';
import { defineStoreContract } from './store-contract.js';
import { STORES } from '../support/stores.js';

for (const target of STORES) {
  if (target.available) {
    defineStoreContract(target.name, target.create);
  } else {
    // Visible in the test output as a skipped suite whose title carries the reason.
    console.warn(`[contract] ${target.name} store contract SKIPPED: ${target.reason}`);
    describe.skipIf(true)(`${target.name} store contract (skipped: ${target.reason})`, () => {
      it('runs only where a Cassandra is reachable', () => {});
    });
  }
}
