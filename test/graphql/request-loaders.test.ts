/**
 * The request's loaders hand out what the request already read without a promise
 * (`loadNow`), and never a value their cache no longer holds: the same answers as
 * `load`, in fewer promises.
 */
import { describe, expect, it } from 'vitest';
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

it('holds a value read as undefined as that value, not as a key it has not read', async () => {
  const batches: string[][] = [];
  const loader = new RequestLoader<string, string | undefined>(
    async (keys) => {
      batches.push([...keys]);
      return keys.map((k) => (k === 'none' ? undefined : k));
    },
    { cache: true },
  );
  expect(await loader.load('none')).toBeUndefined();
  expect(loader.loadNow('none')).toBeUndefined();
  expect(await loader.loadAll(['none', 'x'])).toEqual([undefined, 'x']);
  expect(await loader.load('none')).toBeUndefined();
  expect(batches).toEqual([['none'], ['x']]);
});

/** A loader whose batches wait for `answer`, each key read as `read <key>`, counting its batches. */
function gatedLoader() {
  let answer!: () => void;
  const answered = new Promise<void>((resolve) => (answer = resolve));
  const batches: string[][] = [];
  const loader = new RequestLoader<string, string | null>(
    async (keys) => {
      batches.push([...keys]);
      await answered;
      return keys.map((k) => `read ${k}`);
    },
    { cache: true },
  );
  return { loader, batches, answer };
}

describe('loadAll', () => {
  it('answers many keys in order, in the batch of loads made beside it, each key read once, and holds what it read', async () => {
    const { loader, batches } = loaderOver({ a: 'A', b: 'B', c: 'C' });
    await loader.load('c');
    const single = loader.load('b');
    const all = loader.loadAll(['a', 'b', 'c', 'a', 'missing']);
    const after = loader.load('missing');
    expect(await all).toEqual(['A', 'B', 'C', 'A', null]);
    expect(await single).toBe('B');
    expect(await after).toBeNull();
    // One batch for the loads of that tick, a, b and missing once each; c was read before.
    expect(batches).toEqual([['c'], ['b', 'a', 'missing']]);
    expect(['a', 'b', 'c', 'missing'].map((k) => loader.loadNow(k))).toEqual(['A', 'B', 'C', null]);
    expect(await loader.load('a')).toBe('A');
    expect(batches).toHaveLength(2);
  });

  it('gives a key asked for while its bulk is read the same value, without another read', async () => {
    const { loader, batches, answer } = gatedLoader();
    const all = loader.loadAll(['a', 'b']);
    await new Promise((resolve) => setImmediate(resolve));
    const b = loader.loadNow('b');
    expect(b).toBeInstanceOf(Promise);
    answer();
    expect(await all).toEqual(['read a', 'read b']);
    expect(await b).toBe('read b');
    expect(batches).toEqual([['a', 'b']]);
    expect(loader.loadNow('b')).toBe('read b');
  });

  it('holds neither a key cleared nor one primed while its bulk was read: the primed value stands, the cleared key is read again', async () => {
    const { loader, batches, answer } = gatedLoader();
    const all = loader.loadAll(['a', 'b', 'c']);
    await new Promise((resolve) => setImmediate(resolve));
    loader.clear('a').prime('a', 'primed');
    loader.clear('b');
    answer();
    expect(await all).toEqual(['read a', 'read b', 'read c']);
    expect(loader.loadNow('a')).toBe('primed');
    expect(loader.loadNow('c')).toBe('read c');
    const b = loader.loadNow('b');
    expect(b).toBeInstanceOf(Promise);
    expect(await b).toBe('read b');
    expect(batches).toEqual([['a', 'b', 'c'], ['b']]);
  });

  it('rejects as load does when a key reads an error, and when the batch fails, after which its keys are read again', async () => {
    const { loader } = loaderOver({ a: 'A', bad: new Error('read failed') });
    await expect(loader.loadAll(['a', 'bad'])).rejects.toThrow('read failed');
    expect(loader.loadNow('a')).toBe('A');
    await expect(loader.loadNow('bad')).rejects.toThrow('read failed');

    let fail = true;
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const batches: string[][] = [];
    const flaky = new RequestLoader<string, string>(
      async (keys) => {
        batches.push([...keys]);
        await answered;
        if (fail) throw new Error('store down');
        return keys.map((k) => k.toUpperCase());
      },
      { cache: true },
    );
    const all = flaky.loadAll(['x', 'y']);
    await new Promise((resolve) => setImmediate(resolve));
    // Asked for while the bulk is read: it shares the bulk's fate.
    const y = flaky.load('y');
    answer();
    await expect(all).rejects.toThrow('store down');
    await expect(y).rejects.toThrow('store down');
    fail = false;
    expect(await flaky.loadAll(['x', 'y'])).toEqual(['X', 'Y']);
    expect(batches).toEqual([['x', 'y'], ['x', 'y']]);
  });

  it('without a cache, reads every key as load does', async () => {
    const { loader, batches } = loaderOver({ a: 'A' }, false);
    expect(await loader.loadAll(['a', 'a'])).toEqual(['A', 'A']);
    expect(batches).toEqual([['a', 'a']]);
  });
});
