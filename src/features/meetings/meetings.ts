/**
 * Meeting acceptances (seed 001): a unique counter without Paxos. Each acceptance is
 * written `USING TIMESTAMP (2^63-1 - now)`, so the first write of a (meeting, user)
 * wins; reading back the cell's write time (and our token) tells whether this request's
 * write won, and only then is the counter incremented. On many servers the counter is
 * made exact by the verifier (acceptance-verifier.ts).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { DomainError, checkText } from '../../errors.js';
import type { CursorCodec } from '../../paging/cursor.js';
import { pageFromSource } from '../../paging/engine.js';
import { sliceSource } from '../../paging/slice-source.js';
import type { Page, PageArgs } from '../../paging/types.js';
import type { Clock } from '../../store/clock.js';
import { MAX_TIMESTAMP, type Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import { requireAdmin, type Actor } from '../actor.js';
import type { KeyLoader } from '../key-loader.js';
import type { ClusterSettings } from '../../config.js';
import { ACCEPTANCE_WINDOW_MS, counterKeyOf, markOf, readAcceptanceCounts, settleMeeting, windowOf } from './acceptance-verifier.js';
import { meetingAcceptanceWindowsTable, meetingUsersTable, meetingsTable } from './meetings-tables.js';

export { readAcceptanceCounts };

/** A meeting as the API shows it. */
export interface Meeting {
  readonly meetingId: string;
  readonly title: string;
  readonly createdBy: string;
  readonly createdAt: Date;
}

/** One acceptance: who, and when their first acceptance was written. */
export interface Acceptance {
  readonly meetingId: string;
  readonly userId: string;
  readonly acceptedAt: Date;
}

/**
 * How acceptances are made unique: seed 001's first-write-wins timestamps, or a
 * lightweight transaction (`INSERT … IF NOT EXISTS`, Paxos) for comparison.
 */
export type AcceptanceStrategy = 'first-write-wins' | 'lwt';

/** The loaders Meetings reads and keeps true. */
export interface MeetingLoaders {
  readonly meetingById: KeyLoader<string, Meeting | null>;
  readonly acceptanceCount: KeyLoader<string, number>;
}

/** What the feature needs. */
export interface MeetingsDeps {
  readonly store: Store;
  readonly codec: CursorCodec;
  readonly actor: Actor | null;
  readonly loaders: MeetingLoaders;
  /** Shared by the whole process: its timestamps never repeat. */
  readonly clock: Clock;
  /** Shared by the whole process: hands out the decreasing part of tokens. */
  readonly tokens: TokenSequence;
  readonly strategy: AcceptanceStrategy;
  readonly cluster: ClusterSettings;
}

/**
 * Tokens that sort lower the later they are made (in one process). On a timestamp tie
 * Cassandra keeps the greater value; with decreasing tokens a later request loses the
 * tie even when an earlier one has already read back its win and counted.
 */
export class TokenSequence {
  private next = 0n;
  private static readonly TOP = (1n << 64n) - 1n;

  /** A token: 16 hex digits decreasing per call, then random hex for uniqueness across processes. */
  take(): string {
    const seq = TokenSequence.TOP - this.next++;
    return `${seq.toString(16).padStart(16, '0')}${randomBytes(8).toString('hex')}`;
  }
}

function meetingFromRow(row: Row): Meeting {
  return {
    meetingId: row.meeting_id as string,
    title: row.title as string,
    createdBy: row.created_by as string,
    createdAt: row.created_at as Date,
  };
}

function acceptanceFromRow(row: Row): Acceptance {
  return { meetingId: row.meeting_id as string, userId: row.user_id as string, acceptedAt: row.accepted_at as Date };
}

/** Meetings by id, in order, null for misses (one round trip). */
export async function readMeetings(store: Store, ids: readonly string[]): Promise<Array<Meeting | null>> {
  const rows = await store.getMany(meetingsTable, ids.map((meeting_id) => ({ meeting_id })));
  return rows.map((r) => (r ? meetingFromRow(r) : null));
}

/** The meetings feature. */
export class Meetings {
  constructor(private readonly deps: MeetingsDeps) {}

  /** Create a meeting. */
  async create(input: { title: string }, createdBy: string, now = new Date()): Promise<Meeting> {
    const title = checkText('title', input.title, 1, 200);
    const meeting: Meeting = { meetingId: randomUUID(), title, createdBy, createdAt: now };
    await this.deps.store.upsert(meetingsTable, {
      meeting_id: meeting.meetingId,
      title,
      created_by: createdBy,
      created_at: now,
    });
    this.deps.loaders.meetingById.prime(meeting.meetingId, meeting);
    return meeting;
  }

  /** Acceptance counts by meeting id, in order (0 when none; one round trip). */
  countsByIds(ids: readonly string[]): Promise<number[]> {
    return readAcceptanceCounts(this.deps.store, ids);
  }

  /**
   * Accept a meeting as `userId`. Returns the meeting and whether this request was
   * counted: true for the user's first acceptance, false for a repeat. Acceptances are
   * final.
   */
  async accept(meetingId: string, userId: string): Promise<{ meeting: Meeting; counted: boolean }> {
    const meeting = await this.requireMeeting(meetingId);
    const { store } = this.deps;
    const key = { meeting_id: meetingId, user_id: userId };
    const token = this.deps.tokens.take();
    // One clock reading gives the timestamp, `accepted_at` and the counter window, so
    // the verifier's count by `accepted_at` matches the windows the requests counted in.
    const micros = this.deps.clock.nowMicros();
    const acceptedAt = new Date(Number(micros / 1000n));
    const mark = markOf(meetingId, acceptedAt.getTime());
    let won: boolean;
    if (this.deps.strategy === 'lwt') {
      await store.batch([mark]);
      const result = await store.insertIfNotExists(meetingUsersTable, { ...key, accepted_at: acceptedAt, token });
      won = result.applied;
    } else {
      // seed 001: the earlier the write, the higher its timestamp, so the first write wins.
      // The verifier's mark travels in the same logged batch: if the acceptance lands,
      // so does the mark, even if this process dies before counting.
      const timestamp = MAX_TIMESTAMP - micros;
      await store.batch([mark, { kind: 'upsert', table: meetingUsersTable, row: { ...key, accepted_at: acceptedAt, token }, options: { timestamp } }]);
      // Did my write win? Its write time and its token must both be mine: two requests
      // in one microsecond share a timestamp, and then the token decides.
      const cells = await store.readCells(meetingUsersTable, key, ['token']);
      won = cells.writetime.token === timestamp && cells.row?.token === token;
    }
    if (won) await store.increment(meetingAcceptanceWindowsTable, counterKeyOf(meetingId, acceptedAt.getTime()), { acceptance_count: 1 });
    this.deps.loaders.acceptanceCount.clear(meetingId);
    return { meeting, counted: won };
  }

  /**
   * Settle a meeting's count now, from its acceptances (admins only). The verifier does
   * this by itself for closed windows; this settles through the end of the window the
   * skew bound reaches beyond now, so every acceptance already made counts exactly,
   * including those whose increment was lost. An acceptance still in flight is left to
   * the verifier, which settles a later `through` once its window closes. Safe while
   * acceptances go on.
   */
  async reconcile(meetingId: string): Promise<{ meeting: Meeting; previousCount: number; acceptanceCount: number }> {
    requireAdmin(this.deps.actor);
    const meeting = await this.requireMeeting(meetingId);
    const { store } = this.deps;
    const [previous] = await this.countsByIds([meetingId]);
    const nowMs = Number(this.deps.clock.nowMicros() / 1000n);
    await settleMeeting(store, meetingId, windowOf(nowMs + this.deps.cluster.clockSkewMs) + ACCEPTANCE_WINDOW_MS);
    const [actual] = await this.countsByIds([meetingId]);
    this.deps.loaders.acceptanceCount.clear(meetingId);
    this.deps.loaders.acceptanceCount.prime(meetingId, actual!);
    return { meeting, previousCount: previous!, acceptanceCount: actual! };
  }

  /** The meeting, through the request's loader; NOT_FOUND when there is none. */
  private async requireMeeting(meetingId: string): Promise<Meeting> {
    const meeting = await this.deps.loaders.meetingById.load(meetingId);
    if (!meeting) throw new DomainError('NOT_FOUND', 'no such meeting', 'meetingId');
    return meeting;
  }

  /** One page of the users who accepted, in clustering order (by user id). */
  acceptedBy(meetingId: string, args: PageArgs): Promise<Page<Acceptance>> {
    const source = sliceSource<Acceptance>({
      id: `Meeting.acceptedBy:${meetingId}`,
      store: this.deps.store,
      table: meetingUsersTable,
      partition: { meeting_id: meetingId },
      toNode: acceptanceFromRow,
      rowOf: (a) => ({ user_id: a.userId }),
    });
    return pageFromSource(source, args, { connectionName: 'acceptedBy', codec: this.deps.codec });
  }
}
