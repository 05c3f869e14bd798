/**
 * The in-flight gate on its own: slots, the queue, its timeout, and fairness between
 * principals (a freed slot goes to the lightest waiting principal; the heaviest is shed
 * first when the queue is full).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { InFlightGate, ServerBusyError, type Release } from '../../src/transport/in-flight-gate.js';

/** Which of the pending acquisitions have settled, and how. */
function track(promise: Promise<Release>) {
  const state: { release: Release | null; error: unknown } = { release: null, error: null };
  promise.then((r) => (state.release = r), (e) => (state.error = e));
  return state;
}

describe('the in-flight gate', () => {
  it('holds a principal to a quarter of the slots: its next request waits while slots are free, and another principal goes ahead', async () => {
    const gate = new InFlightGate({ maxInFlight: 8, maxQueued: 10, queueTimeoutMs: 5_000 });
    expect(gate.perPrincipal).toBe(2);
    const f1 = await gate.acquire('flooder');
    await gate.acquire('flooder');
    const f3 = track(gate.acquire('flooder'));
    const other = track(gate.acquire('other'));
    await sleep(0);
    expect(other.release).not.toBeNull();
    expect(f3.release).toBeNull();
    expect([gate.executing, gate.queued]).toEqual([3, 1]);
    f1();
    await sleep(0);
    expect(f3.release).not.toBeNull();
  });

  it('gives a freed slot to the waiting principal with the fewest requests in flight, not the oldest waiter', async () => {
    const gate = new InFlightGate({ maxInFlight: 8, maxQueued: 10, queueTimeoutMs: 5_000 });
    const held: Release[] = [];
    for (const principal of ['x', 'y', 'y', 'z', 'z', 'w', 'w', 'v']) held.push(await gate.acquire(principal));
    const x2 = track(gate.acquire('x'));
    const u1 = track(gate.acquire('u'));
    await sleep(0);
    expect([gate.executing, gate.queued]).toEqual([8, 2]);
    held[1]!();
    await sleep(0);
    expect(u1.release).not.toBeNull();
    expect(x2.release).toBeNull();
    held[2]!();
    await sleep(0);
    expect(x2.release).not.toBeNull();
  });

  it('sheds the heaviest principal first when the queue is full: its newest waiter, or the newcomer when it is that principal', async () => {
    const gate = new InFlightGate({ maxInFlight: 1, maxQueued: 2, queueTimeoutMs: 5_000 });
    await gate.acquire('flooder');
    const q1 = track(gate.acquire('flooder'));
    const q2 = track(gate.acquire('flooder'));
    const more = track(gate.acquire('flooder'));
    await sleep(0);
    expect(more.error).toBeInstanceOf(ServerBusyError);
    expect((more.error as ServerBusyError).reason).toBe('queue-full');
    const other = track(gate.acquire('other'));
    await sleep(0);
    // The flooder's newest waiter made room for the other principal.
    expect((q2.error as ServerBusyError).reason).toBe('shed');
    expect(q1.error).toBeNull();
    expect(other.error).toBeNull();
    expect(gate.queued).toBe(2);
  });

  it('answers a waiter busy at the queue timeout, and forgets one whose client went away', async () => {
    const gate = new InFlightGate({ maxInFlight: 1, maxQueued: 5, queueTimeoutMs: 50 });
    const held = await gate.acquire('a');
    const late = track(gate.acquire('b'));
    const controller = new AbortController();
    const gone = track(gate.acquire('c', controller.signal));
    controller.abort(new Error('client gone'));
    await sleep(0);
    expect((gone.error as Error).message).toBe('client gone');
    expect(gate.queued).toBe(1);
    await sleep(80);
    expect((late.error as ServerBusyError).reason).toBe('queue-timeout');
    expect(gate.queued).toBe(0);
    held();
    held();
    expect(gate.executing).toBe(0);
  });

  it('admits everything when MAX_IN_FLIGHT is 0', async () => {
    const gate = new InFlightGate({ maxInFlight: 0, maxQueued: 0, queueTimeoutMs: 1 });
    const releases = await Promise.all(Array.from({ length: 100 }, () => gate.acquire('one')));
    expect(gate.executing).toBe(100);
    for (const release of releases) release();
    expect(gate.executing).toBe(0);
  });
});
