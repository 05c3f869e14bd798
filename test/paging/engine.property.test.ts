/**
 * Property tests of the paging engine against a reference model: random data, random
 * walks of forward and backward pages, random inserts and deletes between pages
 * (the cursor's own row included). Every page equals the model's answer, flags
 * included, and a full walk never skips or repeats a surviving row.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCursorCodec } from '../../src/paging/cursor.js';
import { pageFromSource, type PagingOptions } from '../../src/paging/engine.js';
import type { Page } from '../../src/paging/types.js';
import { ArraySource } from '../support/array-source.js';
import { modelPage } from '../support/paging-model.js';

const codec = createCursorCodec('property-test-secret');
const options: PagingOptions = { connectionName: 'numbers', codec };

const byNumber = (a: number, b: number) => a - b;

const step = fc.oneof(
  fc.record({ kind: fc.constant('next' as const), size: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('prev' as const), size: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('insert' as const), value: fc.integer({ min: 0, max: 120 }) }),
  fc.record({ kind: fc.constant('delete' as const), index: fc.nat() }),
  fc.record({ kind: fc.constant('deleteCursorRow' as const), atStart: fc.boolean() }),
);

describe('paging engine properties', () => {
  it('matches the reference model on random walks with concurrent inserts and deletes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 0, max: 120 }), { maxLength: 40 }),
        fc.boolean(),
        fc.integer({ min: 1, max: 7 }),
        fc.array(step, { maxLength: 30 }),
        async (initial, startBackward, startSize, steps) => {
          const source = new ArraySource(initial);
          let current: Page<number> = await pageFromSource(
            source,
            startBackward ? { last: startSize } : { first: startSize },
            options,
          );
          expect({
            nodes: current.edges.map((e) => e.node),
            hasPreviousPage: current.pageInfo.hasPreviousPage,
            hasNextPage: current.pageInfo.hasNextPage,
          }).toEqual(modelPage(source.all, byNumber, startBackward ? 'backward' : 'forward', startSize, undefined));
          // Where the walk stands when a page comes back empty.
          let anchor: { start: string; end: string } | null = current.edges.length
            ? { start: current.pageInfo.startCursor!, end: current.pageInfo.endCursor! }
            : null;
          for (const s of steps) {
            if (s.kind === 'insert') source.insert(s.value);
            else if (s.kind === 'delete') {
              if (source.all.length) source.remove(source.all[s.index % source.all.length]!);
            } else if (s.kind === 'deleteCursorRow') {
              const edge = s.atStart ? current.edges[0] : current.edges[current.edges.length - 1];
              if (edge) source.remove(edge.node);
            } else {
              if (!anchor) {
                current = await pageFromSource(source, { first: s.size }, options);
                expect(current.edges.map((e) => e.node)).toEqual(modelPage(source.all, byNumber, 'forward', s.size, undefined).nodes);
              } else {
                const forward = s.kind === 'next';
                const cursor = forward ? anchor.end : anchor.start;
                const cursorKey = codec.decodeCursor(source.id, cursor)![0] as number;
                current = await pageFromSource(
                  source,
                  forward ? { first: s.size, after: cursor } : { last: s.size, before: cursor },
                  options,
                );
                expect({
                  nodes: current.edges.map((e) => e.node),
                  hasPreviousPage: current.pageInfo.hasPreviousPage,
                  hasNextPage: current.pageInfo.hasNextPage,
                }).toEqual(modelPage(source.all, byNumber, forward ? 'forward' : 'backward', s.size, cursorKey));
              }
              if (current.edges.length) {
                anchor = { start: current.pageInfo.startCursor!, end: current.pageInfo.endCursor! };
              }
            }
          }
        },
      ),
      { numRuns: 400 },
    );
  });

  it('never skips or repeats a surviving row across a full walk, in either direction', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 0, max: 200 }), { maxLength: 60 }),
        fc.integer({ min: 1, max: 9 }),
        fc.boolean(),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 200 }), fc.boolean()), { maxLength: 40 }),
        async (initial, size, backward, mutations) => {
          const source = new ArraySource(initial);
          const removed = new Set<number>();
          const seen: number[] = [];
          let page = await pageFromSource(source, backward ? { last: size } : { first: size }, options);
          let i = 0;
          for (;;) {
            const nodes = page.edges.map((e) => e.node);
            seen.push(...(backward ? [...nodes].reverse() : nodes));
            const more = backward ? page.pageInfo.hasPreviousPage : page.pageInfo.hasNextPage;
            if (!more) break;
            // Mutate between pages: insert anywhere, delete anything (even the cursor row).
            const m = mutations[i++ % Math.max(1, mutations.length)];
            if (m && i <= mutations.length) {
              const [value, isInsert] = m;
              if (isInsert) source.insert(value);
              else {
                source.remove(value);
                removed.add(value);
              }
            }
            page = await pageFromSource(
              source,
              backward
                ? { last: size, before: page.pageInfo.startCursor! }
                : { first: size, after: page.pageInfo.endCursor! },
              options,
            );
          }
          // No repeats, in order.
          const ordered = backward ? [...seen].reverse() : seen;
          expect(ordered).toEqual([...new Set(ordered)].sort((a, b) => a - b));
          // Every row present from start to end was seen.
          for (const k of initial) if (!removed.has(k)) expect(seen).toContain(k);
        },
      ),
      { numRuns: 400 },
    );
  });
});
