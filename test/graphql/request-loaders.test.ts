/**
 * The request's loaders hand out what the request already read without a promise
 * (`loadNow`), and never a value their cache no longer holds: the same answers as
 * `load`, in fewer promises.
 */
import { expect, it } from 'vitest';
import { RequestLoader } from '../../src/graphql/loaders.js';

/** A loader over `values`, counting its batches. */
function loaderOver(values: Record<string, string | Error>, cache = true) {
  const batches: string[][] = [];
  const loader = new RequestLoader<string, string | null>(
    async (keys) => {
      batches.push([...keys]);
      return keys.map((k) => values[k] ?? null);
    },
    { cache },
  );
  return { loader, batches };
}

it('answers a key it has not read with a promise, in one batch, and with the value itself once read', async () => {
  const { loader, batches } = loaderOver({ a: 'A', b: 'B' });
  const first = [loader.loadNow('a'), loader.loadNow('b'), loader.loadNow('c')];
  expect(first.every((f) => f instanceof Promise)).toBe(true);
  expect(await Promise.all(first)).toEqual(['A', 'B', null]);
  expect([loader.loadNow('a'), loader.loadNow('b'), loader.loadNow('c')]).toEqual(['A', 'B', null]);
  expect(batches).toEqual([['a', 'b', 'c']]);
});

it('forgets a cleared key, and answers a primed one with the primed value', async () => {
  const { loader, batches } = loaderOver({ a: 'A' });
  await loader.load('a');
  loader.clear('a');
  const again = loader.loadNow('a');
  expect(again).toBeInstanceOf(Promise);
  expect(await again).toBe('A');
  expect(batches).toEqual([['a'], ['a']]);
  loader.clear('a').prime('a', 'primed');
  await Promise.resolve();
  expect(loader.loadNow('a')).toBe('primed');
  loader.clearAll();
  expect(loader.loadNow('a')).toBeInstanceOf(Promise);
});

it('leaves a failed read to load, which rejects as it did', async () => {
  const { loader } = loaderOver({ bad: new Error('read failed') });
  loader.prime('bad', new Error('read failed'));
  await Promise.resolve();
  const answer = loader.loadNow('bad');
  expect(answer).toBeInstanceOf(Promise);
  await expect(answer).rejects.toThrow('read failed');
});

it('keeps no value without a cache: every ask is a read', async () => {
  const { loader, batches } = loaderOver({ a: 'A' }, false);
  expect(await loader.loadNow('a')).toBe('A');
  const again = loader.loadNow('a');
  expect(again).toBeInstanceOf(Promise);
  expect(await again).toBe('A');
  expect(batches).toEqual([['a'], ['a']]);
});

it('holds what was primed while a batch was in flight, not what that batch read', async () => {
  let answer!: () => void;
  const answered = new Promise<void>((resolve) => (answer = resolve));
  const loader = new RequestLoader<string, string | null>(
    async (keys) => {
      await answered;
      return keys.map((k) => `read ${k}`);
    },
    { cache: true },
  );
  const first = loader.load('a');
  const other = loader.load('b');
  await new Promise((resolve) => setImmediate(resolve));
  // The batch of a and b is dispatched and waiting; a is cleared and primed meanwhile.
  loader.clear('a').prime('a', 'primed');
  expect(loader.loadNow('a')).toBe('primed');
  answer();
  expect(await Promise.all([first, other])).toEqual(['read a', 'read b']);
  expect([loader.loadNow('a'), loader.loadNow('b')]).toEqual(['primed', 'read b']);
});
