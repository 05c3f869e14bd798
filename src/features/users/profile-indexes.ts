/**
 * The indexes a profile change keeps, as the users feature needs them. Users declare
 * this port and the directory (features/directory) implements it; the composition root
 * hands the directory to Users. So imports and calls both run one way, directory ->
 * users: Users plan, write and finish a change through `ProfileIndexes` and never
 * import the directory, which takes `User` from here.
 */
import type { Mutation } from '../../store/port.js';

/** The indexes of the directory (`name`: the name index's versions). */
export type IndexName = 'location' | 'last_name' | 'name';

/** The profile fields the directory indexes, as Users name them. */
export type IndexedField = 'location' | 'lastName';

/** New values of indexed fields: `undefined` or null leaves a field unchanged; "" clears it. */
export type IndexedValues = { readonly [F in IndexedField]?: string | null };

/** A field's new value (null: cleared) and the version naming its current entry (null when cleared). */
export interface FieldChange {
  readonly value: string | null;
  readonly version: string | null;
}

/** The index writes of a profile change, and what the user row must now say. */
export interface IndexPlan {
  readonly fields: { readonly [F in IndexedField]?: FieldChange };
  readonly mutations: Mutation[];
  /** Registered buckets the plan writes an entry into: registered before and after the batch. */
  readonly bucketsWritten: string[];
  /** Registered buckets the plan removes an entry from: pruned after the batch if they emptied. */
  readonly bucketsLeft: string[];
}

/** The changed fields of a plan, as pairs. */
export function changesOf(plan: IndexPlan): Array<[IndexedField, FieldChange]> {
  return Object.entries(plan.fields) as Array<[IndexedField, FieldChange]>;
}

/** One of a user's current entries, from the entries table. */
export interface IndexEntry {
  readonly index: IndexName;
  readonly ts: string;
  readonly value: string;
  readonly bucket: string;
}

/** What a user's name entries show of them (the user row's values; a `User` is one). */
export interface NamedProfile {
  readonly id: string;
  readonly username: string;
  readonly displayName: string;
  readonly createdAt: Date;
  readonly location: string | null;
  readonly firstName: string | null;
  readonly lastName: string | null;
}

/**
 * What Users need of the indexes: planning, the entries a plan replaces, the registry
 * bookkeeping around the batch that writes a plan (`beforeWrite`, the batch, then
 * `afterWrite`), and the name index's entries of a change.
 */
export interface ProfileIndexes {
  plan(userId: string, values: IndexedValues, current: readonly IndexEntry[]): IndexPlan;
  currentEntries(userId: string): Promise<IndexEntry[]>;
  beforeWrite(plan: IndexPlan): Promise<void>;
  afterWrite(plan: IndexPlan): Promise<void>;
  /**
   * The name index's mutations that make `after` the user's name entries at `version`,
   * replacing the name versions in `current`, for the change's logged batch; none when
   * neither `before` (null for a new user) nor `after` has a name and nothing is to be replaced.
   */
  nameMutations(before: NamedProfile | null, after: NamedProfile, current: readonly IndexEntry[], version: bigint): Mutation[];
}
