/**
 * Bucketed connections fetch what one page needs in a bounded number of store round
 * trips (calls in flight together count once, as the benchmarks count them), whatever
 * the number of buckets, and the registry sheds the buckets renames emptied.
 */
import { describe, expect, it } from 'vitest';
import { lastNamePageCost, suspendedPageCost } from '../../bench/history/registries.js';

describe('round trips of a first page over many buckets', () => {
  it('reads a first page of suspendedUsers in at most 4 round trips with 50 buckets, 3 with one', async () => {
    const one = await suspendedPageCost(1);
    const fifty = await suspendedPageCost(50);
    expect({ edges: one.edges, roundTrips: one.roundTrips }).toEqual({ edges: 20, roundTrips: 3 });
    expect(fifty.edges).toBe(20);
    expect(fifty.roundTrips).toBeLessThanOrEqual(4);
  });

  it('reads a first page of usersByLastName("") in the same round trips with 10 or 500 last names, and after 300 renames', async () => {
    const ten = await lastNamePageCost(10);
    const many = await lastNamePageCost(500);
    const renamed = await lastNamePageCost(10, 300);
    expect(ten.roundTrips).toBeLessThanOrEqual(4);
    expect(many.roundTrips).toBe(ten.roundTrips);
    // The junk users' buckets were pruned as they emptied: the page reads what it did fresh.
    expect(renamed).toEqual(ten);
  }, 60_000);
});
