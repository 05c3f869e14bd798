/**
 * The reserved CQL keywords: a table or column named after one of them breaks every
 * statement that names it unquoted (`CREATE TABLE … (…, token text, …)` is a syntax
 * error). Sources: appendix A of the CQL reference (cassandra.apache.org/doc/latest/
 * cql/appendices.html), Cassandra 4.0's `ReservedKeywords.java`, and the words later
 * parsers reserve as well (DEFAULT, UNSET, MBEAN, MBEANS, REPLACE, FOR, KEYSPACES), so
 * a name accepted here works on every Cassandra the product supports.
 */
const RESERVED = new Set(
  `add allow alter and apply asc authorize batch begin by columnfamily create default delete desc
   describe drop entries execute for from full grant if in index infinity insert into is keyspace
   keyspaces limit materialized mbean mbeans modify nan norecursive not null of on or order primary
   rename replace revoke schema select set table to token truncate unlogged unset update use using
   view where with`.split(/\s+/),
);

/** True for a word CQL reserves (any case): never a keyspace, table or column name. */
export function isReservedCqlKeyword(name: string): boolean {
  return RESERVED.has(name.toLowerCase());
}
