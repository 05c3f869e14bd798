/**
 * Runs the store contract against every store in STORES: SQLite always; Cassandra
 * when a Docker engine is reachable (testcontainers) or CASSANDRA_CONTACT_POINTS is
 * set. Otherwise the Cassandra run is reported as skipped, with the reason.
 */
import { defineStoreContract } from './store-contract.js';
import { describeEachStore } from '../support/stores.js';

describeEachStore('store contract', (target) => defineStoreContract(target.name, target.create, { ddlTimeoutMs: target.ddlTimeoutMs }));
