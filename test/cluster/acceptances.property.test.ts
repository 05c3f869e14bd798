/**
 * Meeting acceptances on a simulated cluster (seed 001's unique counter): instances
 * with clocks up to ±1 s apart accept concurrently, writes land late and out of order,
 * an instance may crash. After settling, every meeting's count equals its distinct
 * acceptors, and every acknowledged acceptance is there.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { acceptanceCountKey } from '../../src/features/meetings/meetings.js';
import { meetingUsersTable } from '../../src/features/meetings/meetings-tables.js';
import { armCrash, assertSim, crashPoint, offsets, runAll, scheduled } from '../support/sim-arbitraries.js';
import { SimCluster } from '../support/sim-cluster.js';

const USERS = Array.from({ length: 5 }, (_, i) => `00000000-0000-4000-8000-00000000000${i}`);

describe('meeting acceptances on a simulated cluster', () => {
  it('count every acceptor exactly once after settling, whatever the skew, delays and crashes', async () => {
    await assertSim(
      'acceptances',
      fc.asyncProperty(
        fc.integer(),
        offsets,
        crashPoint,
        fc.array(fc.record({ ...scheduled, user: fc.nat(USERS.length - 1), meeting: fc.nat(1) }), { minLength: 4, maxLength: 24 }),
        async (seed, offsetsMs, crash, ops) => {
          const cluster = await SimCluster.create({ seed, offsetsMs });
          try {
            const meetings: string[] = [];
            for (let m = 0; m < 2; m++) {
              const made = await cluster.at(0).run((ctx) => ctx.meetings.create({ title: `m${m}` }, USERS[0]!));
              if (made.kind !== 'ok') throw new Error('setup failed');
              meetings.push(made.value.meetingId);
            }
            armCrash(cluster, crash);
            const outcomes = await runAll(cluster, ops, (op, instance) =>
              instance.run((ctx) => ctx.meetings.accept(meetings[op.meeting]!, USERS[op.user]!)),
            );
            await cluster.settle({ rounds: 5 });
            for (const [m, meetingId] of meetings.entries()) {
              const rows = await cluster.base.slice(meetingUsersTable, { partition: { meeting_id: meetingId }, limit: 100 });
              const acceptors = rows.map((r) => r.user_id as string).sort();
              const acknowledged = [...new Set(ops.filter((op, i) => op.meeting === m && outcomes[i]!.kind === 'ok').map((op) => USERS[op.user]!))];
              for (const user of acknowledged) expect(acceptors).toContain(user);
              const count = await cluster.count(acceptanceCountKey(meetingId));
              expect(count, `meeting ${m}: counted ${count}, acceptors ${acceptors.length}`).toBe(acceptors.length);
            }
          } finally {
            await cluster.close();
          }
        },
      ),
    );
  }, 60_000);
});
