/**
 * Meeting acceptances (seed 001): a unique counter without Paxos. Each acceptance is
 * written `USING TIMESTAMP (2^63-1 - now)`, so the first write of a (meeting, user)
 * wins; reading back the cell's write time (and our token) tells whether this request's
 * write won, and only then does the count's live cell move. The count is one of the
 * connection counts (counts/connection-counts.ts): its verifier makes it exact on any
 * number of servers, and `acceptedBy.totalCount` is the same number.
 */
import { randomBytes } from 'node:crypto';
import { DomainError, checkText } from '../../errors.js';
import type { Change, ChangeWriter } from '../../live/change-log.js';
import type { Admission, FeedSpec } from '../../live/live-hub.js';
import type { CursorCodec } from '../../paging/cursor.js';
import { edgeFromNode, pageFromSource } from '../../paging/engine.js';
import { sliceSource } from '../../paging/slice-source.js';
import { uuidAscending } from '../../paging/rank-orders.js';
import type { RankCache } from '../../paging/ranked-index.js';
import { countedIndex, rankOfSpelt, type ListSpelling } from '../../counts/count-ranks.js';
import type { Edge, OrderedSource, Page, PageArgs } from '../../paging/types.js';
import type { KeyedLock } from '../../saga/keyed-lock.js';
import type { Clock } from '../../store/clock.js';
import type { IdSource } from '../../store/id-source.js';
import { MAX_TIMESTAMP, type Mutation, type Store } from '../../store/port.js';
import type { Row } from '../../store/table.js';
import { requireAdmin, type Actor } from '../actor.js';
import type { KeyLoader } from '../key-loader.js';
import type { ClusterSettings } from '../../config.js';
import { reverseLookupPage } from '../reverse-lookup.js';
import { backfillItems, reconcileCount, type CountAttempt, type Counted, type CountWriter } from '../../counts/connection-counts.js';
import { membershipsOfTable, type Membership } from '../../counts/recount.js';
import { closedThrough } from '../../background/windowed-job.js';
import { partitionChunks } from '../../paging/partition-chunks.js';
import { meetingUsersTable, meetingsByUserTable, meetingsTable } from './meetings-tables.js';

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

/** A meeting a user created or accepted, as `User.meetings` pages it: the meeting is read through the loader. */
export interface UserMeetingRef {
  readonly userId: string;
  readonly meetingId: string;
  /** The meeting's creation time (the lookup's order). */
  readonly createdAt: Date;
}

/**
 * How acceptances are made unique: seed 001's first-write-wins timestamps, or a
 * lightweight transaction (`INSERT … IF NOT EXISTS`, Paxos) for comparison.
 */
export type AcceptanceStrategy = 'first-write-wins' | 'lwt';

/** The loaders Meetings reads and keeps true. */
export interface MeetingLoaders {
  readonly meetingById: KeyLoader<string, Meeting | null>;
  /** Connection counts by count key (one batched read per request). */
  readonly connectionCount: KeyLoader<string, number>;
}

/** What the feature needs. */
export interface MeetingsDeps {
  readonly store: Store;
  readonly codec: CursorCodec;
  /** The request's signal: a page stops reading once its client has gone (`PagingOptions.signal`). */
  readonly signal?: AbortSignal;
  readonly actor: Actor | null;
  readonly loaders: MeetingLoaders;
  /** Shared by the whole process: its timestamps never repeat. */
  readonly clock: Clock;
  /** Shared by the whole process: hands out the decreasing part of tokens. */
  readonly tokens: TokenSequence;
  /** Shared by the whole process: one first-write-wins acceptance of a user at a time (`accept`). */
  readonly lock: KeyedLock;
  readonly strategy: AcceptanceStrategy;
  readonly cluster: ClusterSettings;
  /** Appends acceptances to the meeting's live feed. */
  readonly changes: ChangeWriter;
  /** Records each acceptance in the meeting's count. */
  readonly counts: CountWriter;
  /** How a reconcile spells the counted index's lists it rebuilds (COUNT_LISTS_SPARSE); dense where valid without it. */
  readonly countLists?: ListSpelling;
  /** The process's kept bucket lists of counted indexes (`offset`); without it, every page reads them. */
  readonly rankCache?: RankCache;
  /** New ids, token bytes and "now": fresh, or an idempotency key's plan (a redo makes the same). */
  readonly ids: IdSource;
}

/** A page of a meeting's acceptors, with the key its `totalCount` is read by. */
export type AcceptorPage = Page<Acceptance> & Counted;

/**
 * The rank of an acceptor in `Meeting.acceptedBy` (by user id), by which the meeting's
 * count keeps its counted index (`offset`): the count's items are the acceptors' ids.
 */
export function acceptorRank(userId: string): bigint {
  return uuidAscending.rankOf([userId]);
}

/** The count key of a meeting's acceptors (`acceptanceCount`, `acceptedBy.totalCount`). */
export function acceptanceCountKey(meetingId: string): string {
  return `accepted:${meetingId}`;
}

/** Every meeting's acceptors, for recounts: a scan of the acceptances. */
export function acceptanceMemberships(store: Store): AsyncIterable<Membership> {
  return membershipsOfTable(store, meetingUsersTable, (r) => acceptanceCountKey(r.meeting_id as string), (r) => r.user_id as string);
}

/** The live feed's name of a meeting's acceptances. */
function meetingFeed(meetingId: string): string {
  return `meeting:${meetingId}`;
}

/** A newly counted acceptor of a meeting, as a subscriber sees it. */
export interface AcceptanceChange {
  readonly acceptance: Acceptance;
}

/** A change read from a meeting's feed, in the feature's own terms. */
export function acceptanceChangeFrom(meetingId: string, change: Change): AcceptanceChange {
  const p = change.payload as { userId: string; acceptedAt: number };
  return { acceptance: { meetingId, userId: p.userId, acceptedAt: new Date(p.acceptedAt) } };
}

/**
 * Which announced acceptances to deliver: the one whose write won, once per user. Every
 * attempt announces itself in the batch that writes it (a process may die before it
 * learns whether it won), with its token; the winner is the attempt whose token the
 * (meeting, user) row holds. A row not there yet (a batch is not isolated across
 * partitions) is asked about again at the next poll; a losing attempt never wins later
 * (only an earlier timestamp could displace the winner, and the loser's is later).
 */
async function admitAcceptances(store: Store, meetingId: string, changes: readonly Change[]): Promise<Admission[]> {
  const rows = await store.getMany(
    meetingUsersTable,
    changes.map((c) => ({ meeting_id: meetingId, user_id: (c.payload as { userId: string }).userId })),
  );
  return changes.map((c, i) => {
    const row = rows[i];
    if (!row) return 'wait';
    return row.write_token === (c.payload as { writeToken: string }).writeToken ? 'deliver' : 'skip';
  });
}

/**
 * Tokens that sort lower the later they are made (in one process). On a timestamp tie
 * Cassandra keeps the greater value; with decreasing tokens a later request loses the
 * tie even when an earlier one has already read back its win and counted.
 */
export class TokenSequence {
  private next = 0n;
  private static readonly TOP = (1n << 64n) - 1n;

  /**
   * A token: 16 hex digits decreasing per call, then random hex (`random`'s 8 bytes) for
   * uniqueness across processes: the part an idempotent redo draws again alike
   * (`sameAttempt`).
   */
  take(random: (n: number) => Buffer = randomBytes): string {
    const seq = TokenSequence.TOP - this.next++;
    return `${seq.toString(16).padStart(16, '0')}${random(8).toString('hex')}`;
  }

  /** Whether two tokens share their random part: one attempt and its redo under one idempotency key. */
  static sameAttempt(a: unknown, b: string): boolean {
    return typeof a === 'string' && a.length === b.length && a.slice(16) === b.slice(16);
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

/** The lookup row that makes `meeting` one of `userId`'s meetings. */
function userMeetingRow(userId: string, meeting: Meeting): Row {
  return { user_id: userId, created_at: meeting.createdAt, meeting_id: meeting.meetingId };
}

/** Meetings by id, in order, null for misses (one round trip). */
export async function readMeetings(store: Store, ids: readonly string[]): Promise<Array<Meeting | null>> {
  const rows = await store.getMany(meetingsTable, ids.map((meeting_id) => ({ meeting_id })));
  return rows.map((r) => (r ? meetingFromRow(r) : null));
}

/** The meetings feature. */
export class Meetings {
  constructor(private readonly deps: MeetingsDeps) {}

  /**
   * Create a meeting. The meeting row and its creator's lookup row go in one logged
   * batch: both or neither, so a meeting is never unreachable from `User.meetings`.
   */
  async create(input: { title: string }, createdBy: string, now = this.deps.ids.now()): Promise<Meeting> {
    const title = checkText('title', input.title, 1, 200);
    const meeting: Meeting = { meetingId: this.deps.ids.uuid(), title, createdBy, createdAt: now };
    await this.deps.store.batch([
      { kind: 'upsert', table: meetingsByUserTable, row: userMeetingRow(createdBy, meeting) },
      { kind: 'upsert', table: meetingsTable, row: { meeting_id: meeting.meetingId, title, created_by: createdBy, created_at: now } },
    ]);
    this.deps.loaders.meetingById.prime(meeting.meetingId, meeting);
    return meeting;
  }

  /** How many distinct users accepted (read with every other count of the request). */
  acceptanceCount(meetingId: string): Promise<number> {
    return this.deps.loaders.connectionCount.load(acceptanceCountKey(meetingId));
  }

  /**
   * Accept a meeting as `userId`. Returns the meeting and whether this request was
   * counted: true for the user's first acceptance, false for a repeat. Acceptances are
   * final.
   */
  async accept(meetingId: string, userId: string): Promise<{ meeting: Meeting; counted: boolean }> {
    const meeting = await this.requireMeeting(meetingId);
    const { store } = this.deps;
    // The user's lookup row first: its key is fixed by the meeting, so every attempt
    // rewrites the same row (no duplicate edges), and a failure after it leaves a row
    // that `ofUser` skips until an acceptance exists, never an unreachable acceptance.
    // It takes the ordinary timestamp, not seed 001's near-2^63 one: it holds no value a
    // timestamp could decide, and a later cleanup must still be able to delete it.
    await store.upsert(meetingsByUserTable, userMeetingRow(userId, meeting));
    // Within this process, one first-write-wins acceptance of a user at a time, from its
    // clock reading to its read-back: otherwise a request that read the clock earlier
    // (so writes the higher timestamp) can land after a later one has read back its win,
    // and both would answer `counted`. The LWT decides in Cassandra and needs no turn.
    const attemptIt = () => this.attempt(meetingId, userId);
    const { won, attempt } = this.deps.strategy === 'lwt' ? await attemptIt() : await this.deps.lock.with(`${meetingId}:${userId}`, attemptIt);
    // Only the winner moves the live count, so a repeated accept shows no change even
    // before the verifier settles (which would rule the repeat out anyway). An upsert:
    // retried or lost, it never counts twice; a lost one is made up by the settlement.
    if (won && attempt) {
      const { table, row, options } = this.deps.counts.live(attempt) as Mutation & { kind: 'upsert' };
      await store.upsert(table, row, options);
    }
    this.deps.loaders.connectionCount.clear(acceptanceCountKey(meetingId));
    return { meeting, counted: won };
  }

  /**
   * One acceptance written and decided (seed 001, or the LWT): whether it won, and its
   * count attempt (none when nothing was written).
   */
  private async attempt(meetingId: string, userId: string): Promise<{ won: boolean; attempt: CountAttempt | null }> {
    const { store } = this.deps;
    const key = { meeting_id: meetingId, user_id: userId };
    // An acceptance acknowledged before this request began must keep winning, whatever
    // the clocks: the first write wins by the clock that stamped it, so a repeat from a
    // server whose clock is behind would carry the higher timestamp and take the row
    // over (its time, its token: delivered again to subscribers, counted again). A
    // repeat that finds the acceptance writes nothing; only concurrent first acceptances
    // are left for the timestamps to decide (docs/how-it-works.md, "Ordering writes
    // across servers").
    const token = this.deps.tokens.take((n) => this.deps.ids.bytes(n));
    if (this.deps.strategy !== 'lwt') {
      const existing = await store.get(meetingUsersTable, key);
      // Unless it is this idempotency key's own earlier attempt, found by a redo: that one
      // counted (its live count, if it was lost, the settlement makes up).
      if (existing) return { won: this.deps.ids.redo && TokenSequence.sameAttempt(existing.write_token, token), attempt: null };
    }
    // One clock reading gives the timestamp, `accepted_at` and the count's attempt, so
    // the count's ledger keeps the same attempt as the acceptance row (the first).
    const micros = this.deps.clock.nowMicros();
    const acceptedAt = new Date(Number(micros / 1000n));
    // The count's record of this attempt (its ledger cell, event and mark), stamped with
    // the acceptance's own time: the count's ledger keeps the first attempt, as the row does.
    const attempt = this.deps.counts.attempt({ key: acceptanceCountKey(meetingId), item: userId, sign: 1 }, micros);
    const marks = this.deps.counts.recorded(attempt);
    // Every attempt is announced to the meeting's feed with its token, in the batch
    // that writes it; readers deliver only the winner's (admitAcceptances).
    const announced = this.deps.changes.mutations({
      feed: meetingFeed(meetingId),
      id: this.deps.changes.nextId(),
      kind: 'accepted',
      item: userId,
      payload: { userId, writeToken: token, acceptedAt: acceptedAt.getTime() },
    });
    if (this.deps.strategy === 'lwt') {
      await store.batch([...marks, ...announced]);
      const result = await store.insertIfNotExists(meetingUsersTable, { ...key, accepted_at: acceptedAt, write_token: token });
      // A redo finds the acceptance of the attempt it redoes: that one counted.
      const redone = this.deps.ids.redo && TokenSequence.sameAttempt(result.existing?.write_token, token);
      return { won: result.applied || redone, attempt };
    }
    // seed 001: the earlier the write, the higher its timestamp, so the first write wins.
    // The verifier's marks travel in the same logged batch: if the acceptance lands,
    // so do they, even if this process dies before counting.
    const timestamp = MAX_TIMESTAMP - micros;
    await store.batch([
      ...marks,
      ...announced,
      { kind: 'upsert', table: meetingUsersTable, row: { ...key, accepted_at: acceptedAt, write_token: token }, options: { timestamp } },
    ]);
    // Did my write win? Its write time and its token must both be mine: two requests
    // in one microsecond share a timestamp, and then the token decides.
    const cells = await store.readCells(meetingUsersTable, key, ['write_token']);
    // A redo (an idempotency key's attempt after one whose outcome is unknown) takes a
    // later clock reading, so it loses to the attempt it redoes if that one landed: the
    // acceptance standing is then this key's own, and it counted.
    const mine = cells.writetime.write_token === timestamp && cells.row?.write_token === token;
    const redone = this.deps.ids.redo && TokenSequence.sameAttempt(cells.row?.write_token, token);
    return { won: mine || redone, attempt };
  }

  /**
   * Settle a meeting's count now, from its acceptances (admins only). The verifiers do
   * this by themselves a few seconds after each acceptance; this settles the closed
   * windows from the whole ledger, counts acceptances made before counts existed, and
   * brings the open windows' live cells in line with the acceptances made so far
   * (counts/connection-counts.ts, `reconcileCount`). Safe while acceptances go on.
   */
  async reconcile(meetingId: string): Promise<{ meeting: Meeting; previousCount: number; acceptanceCount: number }> {
    requireAdmin(this.deps.actor);
    const meeting = await this.requireMeeting(meetingId);
    const { store, counts, cluster, clock, loaders } = this.deps;
    const key = acceptanceCountKey(meetingId);
    const previous = await loaders.connectionCount.load(key);
    for await (const rows of partitionChunks(store, meetingUsersTable, { meeting_id: meetingId })) {
      await backfillItems(store, counts, key, rows.map((r) => r.user_id as string));
    }
    // With its counted index: rebuilt with the settlement, or its buckets would lack what the head holds.
    const rankOf = rankOfSpelt((k) => (k === key ? acceptorRank : null), this.deps.countLists ?? {});
    const actual = await reconcileCount(store, counts, key, closedThrough(clock, cluster), rankOf);
    loaders.connectionCount.clear(key);
    loaders.connectionCount.prime(key, actual);
    return { meeting, previousCount: previous, acceptanceCount: actual };
  }

  /** The meeting, through the request's loader; NOT_FOUND when there is none. */
  private async requireMeeting(meetingId: string): Promise<Meeting> {
    const meeting = await this.deps.loaders.meetingById.load(meetingId);
    if (!meeting) throw new DomainError('NOT_FOUND', 'no such meeting', 'meetingId');
    return meeting;
  }

  /**
   * One page of the meetings `userId` created or accepted, newest meeting first
   * (`User.meetings`). Meetings are read through the request's loader, acceptances in
   * one read, both once per page; a lookup row is skipped while its meeting is missing
   * or the user neither created it nor has an acceptance (an accept that failed after
   * writing the lookup row).
   */
  ofUser(userId: string, args: PageArgs): Promise<Page<UserMeetingRef>> {
    const { store, loaders } = this.deps;
    return reverseLookupPage<UserMeetingRef>(
      {
        id: `User.meetings:${userId}`,
        connectionName: 'meetings',
        store,
        codec: this.deps.codec,
        signal: this.deps.signal,
        table: meetingsByUserTable,
        partition: { user_id: userId },
        toNode: (row) => ({ userId, meetingId: row.meeting_id as string, createdAt: row.created_at as Date }),
        rowOf: (ref) => ({ created_at: ref.createdAt, meeting_id: ref.meetingId }),
        async visible(refs) {
          const meetings = await Promise.all(refs.map((r) => loaders.meetingById.load(r.meetingId)));
          // Only meetings the user did not create need their acceptance proven.
          const unproven = refs.filter((r, i) => meetings[i] !== null && meetings[i]!.createdBy !== userId);
          const accepted = new Set<string>();
          if (unproven.length > 0) {
            const rows = await store.getMany(meetingUsersTable, unproven.map((r) => ({ meeting_id: r.meetingId, user_id: userId })));
            for (const row of rows) if (row) accepted.add(row.meeting_id as string);
          }
          return refs.map((r, i) => meetings[i] !== null && (meetings[i]!.createdBy === userId || accepted.has(r.meetingId)));
        },
      },
      args,
    );
  }

  /** The connection of a meeting's acceptors (`Meeting.acceptedBy`). */
  private acceptedBySource(meetingId: string): OrderedSource<Acceptance> {
    return sliceSource<Acceptance>({
      id: `Meeting.acceptedBy:${meetingId}`,
      store: this.deps.store,
      table: meetingUsersTable,
      partition: { meeting_id: meetingId },
      toNode: acceptanceFromRow,
      rowOf: (a) => ({ user_id: a.userId }),
    });
  }

  /**
   * One page of the users who accepted, in clustering order (by user id), with its
   * count's key; an `offset` is found through the count's counted index (an acceptor's
   * rank is its user id's, `acceptorRank`).
   */
  async acceptedBy(meetingId: string, args: PageArgs): Promise<AcceptorPage> {
    const countKey = acceptanceCountKey(meetingId);
    // Acceptances are final (never deleted): a cursor's acceptance is always there.
    const index = countedIndex(this.deps.store, countKey, uuidAscending, this.deps.rankCache, true);
    const page = await pageFromSource(this.acceptedBySource(meetingId), args, { connectionName: 'acceptedBy', codec: this.deps.codec, index, signal: this.deps.signal });
    return { ...page, countKey };
  }

  /** The `Meeting.acceptedBy` edge of an acceptance, as a page of that connection gives it. */
  acceptedEdge(acceptance: Acceptance): Edge<Acceptance> {
    return edgeFromNode(this.acceptedBySource(acceptance.meetingId), acceptance, this.deps.codec);
  }

  /** The live feed of a meeting's newly counted acceptors. NOT_FOUND for an unknown meeting. */
  async feed(meetingId: string): Promise<FeedSpec> {
    await this.requireMeeting(meetingId);
    const { store } = this.deps;
    return { feed: meetingFeed(meetingId), admit: (changes) => admitAcceptances(store, meetingId, changes) };
  }
}
