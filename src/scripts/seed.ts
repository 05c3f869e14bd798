/**
 * `npm run seed -- --users N --posts-per-user M --seed S`: fill every feature of the
 * configured store (SQLite by default, or STORE=cassandra) with realistic,
 * deterministic data: users with locations and names, posts, suspensions across
 * months, meetings and their acceptances, ordered lists with moves. Shows a progress
 * bar and a final summary. The same seed gives the same content.
 *
 * `npm run seed -- --recount` instead recounts every connection's `totalCount` (data
 * written before counts existed, or after every server was down for a day:
 * counts/recount.ts).
 *
 * Safe beside a running server (the embedded store waits for the other process's
 * writes), and resumable: progress is recorded per unit of work in `seed_progress`, so
 * a run that was interrupted completes when run again with the same options. Like a
 * server, it claims a clock node (presence.ts) for the while it runs.
 */
import cliProgress from 'cli-progress';
import pino from 'pino';
import { hostname } from 'node:os';
import { ALL_TABLES, createListApplier, createRequestContext, createServices, createStore, type Services } from '../composition-root.js';
import { loadConfig } from '../config.js';
import { recountConnections, scanRows } from '../counts/recount.js';
import { sweepUser } from '../features/directory/name-index.js';
import { usersTable } from '../features/users/users-tables.js';
import { readUserForChange } from '../features/users/users.js';
import { listMemberships } from '../features/lists/lists.js';
import { acceptanceMemberships } from '../features/meetings/meetings.js';
import { suspensionMemberships } from '../features/suspensions/suspensions.js';
import { postMemberships } from '../features/timeline/timeline.js';
import { Presence } from '../background/presence.js';
import { mulberry32 } from '../seed/random.js';
import { MonotonicClock } from '../store/clock.js';
import { seedProgressTable } from '../seed/seed-tables.js';
import type { Store } from '../store/port.js';
import { parseCli, runScript, usageError } from './cli.js';

const USAGE = `usage: npm run seed -- [--users N] [--posts-per-user M] [--seed S]
       npm run seed -- --recount
       npm run seed -- --reindex

Fills the configured store (SQLITE_PATH, or STORE=cassandra) with deterministic demo
data: N users (default 100) with M posts each (default 10), suspensions, meetings with
acceptances, and ordered lists. The same seed S (default 1) gives the same data; running
again with the same options completes an interrupted run and adds nothing twice.

--recount   seed nothing; recount every connection's totalCount (posts, list items,
            suspended users, meeting acceptances) from what the store holds: for data
            written before this version, or after every server was down for over a
            day. Safe while servers run; running it again changes nothing.
--reindex   seed nothing; write the name index (usersByName) of every user whose
            entries are missing or differ from the user (users written before this
            version). Safe while servers run; running it again changes nothing.`;

const { values } = parseCli(USAGE, {
  users: { type: 'string', default: '100' },
  'posts-per-user': { type: 'string', default: '10' },
  seed: { type: 'string', default: '1' },
  recount: { type: 'boolean', default: false },
  reindex: { type: 'boolean', default: false },
});

function count(name: string, raw: string, max: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > max) usageError(`--${name} must be an integer between 0 and ${max}, got "${raw}"`, USAGE);
  return n;
}

const USERS = count('users', values.users!, 1_000_000);
const POSTS = count('posts-per-user', values['posts-per-user']!, 10_000);
const SEED = count('seed', values.seed!, 2 ** 31 - 1);

/** A deterministic generator (mulberry32) and the draws the seed makes with it. */
function generator(seed: number) {
  const next = mulberry32(seed);
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]! };
}

const FIRST = ['Ada', 'Alan', 'Grace', 'Linus', 'Margaret', 'Dennis', 'Barbara', 'Ken', 'Frances', 'Edsger', 'Radia', 'Niklaus', 'Hedy', 'Tim', 'Sophie', 'Yukihiro', 'Anita', 'Guido', 'Shafi', 'Leslie'];
const LAST = ['Lovelace', 'Turing', 'Hopper', 'Torvalds', 'Hamilton', 'Ritchie', 'Liskov', 'Thompson', 'Allen', 'Dijkstra', 'Perlman', 'Wirth', 'Lamarr', 'Berners-Lee', 'Wilson', 'Matsumoto', 'Borg', 'van Rossum', 'Goldwasser', 'Lamport', 'Müller', 'Ødegaard', 'Nguyễn', 'Silva'];
const CITIES = ['Paris', 'Lyon', 'Berlin', 'Lisbon', 'São Paulo', 'Tokyo', 'Kyoto', 'Oslo', 'Lagos', 'Nairobi', 'Toronto', 'Austin', 'Melbourne', 'Zürich', 'Kraków'];
const TOPICS = ['shipped a release', 'fixed a flaky test', 'read a paper on consensus', 'tuned compaction', 'paired on a refactor', 'wrote docs', 'reviewed a pull request', 'drew a data model'];
const REASONS = ['spam', 'abuse reported by several members', 'impersonation', 'automated posting', 'payment fraud'];
const GROCERIES = ['milk', 'eggs', 'bread', 'coffee', 'apples', 'rice', 'lentils', 'tea', 'cheese', 'olive oil', 'tomatoes', 'basil'];

/** True once the seed has begun writing (a failure then leaves a partial, resumable data set). */
let writing = false;

/** One unit's progress row (see seed-tables.ts). */
interface Progress {
  readonly ref: string | null;
  readonly step: number;
  readonly detail?: string | null;
  readonly done: boolean;
}

/** Progress of this run's units: read, and recorded after each step that cannot be read back. */
function progressOf(store: Store) {
  const run = `seed ${SEED}, ${USERS} users, ${POSTS} posts per user`;
  return {
    async get(unit: string): Promise<Progress> {
      const row = await store.get(seedProgressTable, { run, unit });
      return {
        ref: (row?.ref as string | null | undefined) ?? null,
        step: Number(row?.step ?? 0),
        detail: (row?.detail as string | null | undefined) ?? null,
        done: row?.done === true,
      };
    },
    async set(unit: string, progress: Progress): Promise<void> {
      await store.upsert(seedProgressTable, { run, unit, ref: progress.ref, step: progress.step, detail: progress.detail ?? null, done: progress.done });
    },
  };
}

/** The number in the newest post's "(#k)": how many of a user's seeded posts exist. */
function postsDone(newest: string | undefined): number {
  return Number(/\(#(\d+)\)$/.exec(newest ?? '')?.[1] ?? 0);
}

/** The store and the services of this process, with a clock node of its own (as a server's). */
async function open(name: string): Promise<{ services: Services; close: () => Promise<void> }> {
  const config = loadConfig();
  const logger = pino({ level: 'warn' });
  const clock = new MonotonicClock();
  const store = createStore(config, { clock });
  await store.ensureTables(ALL_TABLES);
  const presence = await Presence.claim(store, `${name}@${hostname()}:${process.pid}`);
  clock.useNode(presence.identity.node);
  presence.start();
  const services = createServices(config, { store, logger, clock, presence });
  return {
    services,
    async close() {
      presence.stop();
      await store.close();
    },
  };
}

/** `--recount`: every connection's count, from what the store holds (counts/recount.ts). */
async function recount(): Promise<void> {
  const started = Date.now();
  const { services, close } = await open('recount');
  writing = true;
  const { store } = services;
  process.stderr.write('recounting: scanning posts, list items, suspensions and acceptances\n');
  const report = await recountConnections(
    store,
    services.counts,
    [postMemberships(store), listMemberships(store), suspensionMemberships(store), acceptanceMemberships(store)],
    {
      clock: services.clock,
      cluster: services.cluster,
      rankOf: services.rankedCounts,
      onProgress: (done) => done % 1_000 === 0 && process.stderr.write(`recounting: ${done} counts settled\n`),
    },
  );
  console.log(`\nRecounted in ${((Date.now() - started) / 1000).toFixed(1)} s:`);
  console.table({ counts: report.counts, 'items not counted before': report.backfilled });
  await close();
}

/** `--reindex`: every user's name-index entries, from the user row (name-index.ts, `sweepUser`). */
async function reindex(): Promise<void> {
  const started = Date.now();
  const { services, close } = await open('reindex');
  writing = true;
  const { store, clock } = services;
  const readUser = (id: string) => readUserForChange(store, id);
  const tally = { users: 0, 'entries written': 0 };
  for await (const rows of scanRows(store, usersTable)) {
    for (const row of rows) {
      tally.users++;
      if ((await sweepUser({ store, clock, readUser }, row.user_id as string)) === 'rewritten') tally['entries written']++;
    }
    process.stderr.write(`reindexing: ${tally.users} users\n`);
  }
  console.log(`\nReindexed in ${((Date.now() - started) / 1000).toFixed(1)} s:`);
  console.table(tally);
  await close();
}

async function main(): Promise<void> {
  if (values.recount && values.reindex) usageError('give --recount or --reindex, not both (run one, then the other)', USAGE);
  if (values.recount) return recount();
  if (values.reindex) return reindex();
  const config = loadConfig();
  const { services, close } = await open('seed');
  const { store } = services;
  writing = true;
  const progress = progressOf(store);
  // One long job: the loaders batch but keep nothing.
  const ctx = createRequestContext(services, { username: 'seed', isAdmin: true }, { cache: false });
  const rng = generator(SEED);
  const started = Date.now();
  const now = Date.now();

  const meetings = Math.max(1, Math.floor(USERS / 10));
  const lists = Math.max(1, Math.floor(USERS / 20));
  const total = USERS * (1 + POSTS) + meetings + lists;
  const bar = new cliProgress.SingleBar(
    {
      format: 'seeding [{bar}] {percentage}% | {value}/{total} | {stage}',
      hideCursor: true,
      stream: process.stderr,
      // Show progress in CI logs too, not only on a terminal.
      noTTYOutput: true,
      notTTYSchedule: 1000,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0, { stage: 'users and posts' });

  const summary = { users: 0, existing: 0, posts: 0, suspensions: 0, meetings: 0, acceptances: 0, lists: 0, items: 0, moves: 0 };
  const userIds: string[] = [];
  for (let i = 0; i < USERS; i++) {
    const first = rng.pick(FIRST);
    const last = rng.pick(LAST);
    const username = `${first}_${i}_s${SEED}`.toLowerCase().slice(0, 32);
    const location = rng.pick(CITIES);
    const postsAt = Array.from({ length: POSTS }, (_, k) => now - (POSTS - k) * 3_600_000 - rng.int(3_600_000));
    const topics = postsAt.map(() => rng.pick(TOPICS));
    // Every draw happens before any write, so a re-run produces the same sequence.
    const suspended = rng.next() < 0.05;
    const suspendedAt = new Date(now - rng.int(180) * 86_400_000 - rng.int(86_400_000));
    const reason = rng.pick(REASONS);
    const unit = `user ${username}`;
    const state = await progress.get(unit);
    if (state.done) {
      userIds.push(state.ref!);
      summary.existing++;
      bar.increment(1 + POSTS);
      continue;
    }
    let id = state.ref;
    if (!id) {
      try {
        id = (await ctx.users.create({ username, displayName: `${first} ${last}`, location, firstName: first, lastName: last })).id;
        summary.users++;
      } catch (err) {
        // Created by an interrupted run just before it could record its progress.
        if ((err as { code?: string }).code !== 'CONFLICT') throw err;
        id = (await ctx.users.idsByUsername([username]))[0] ?? null;
        if (!id) throw err;
      }
      await progress.set(unit, { ref: id, step: 0, done: false });
    }
    userIds.push(id);
    bar.increment();
    // Posts are written oldest first, so the newest one says how many exist.
    const newest = await ctx.timeline.posts(id, { first: 1 });
    const done = postsDone(newest.edges[0]?.node.content);
    bar.increment(done);
    for (let k = done; k < POSTS; k++) {
      await ctx.timeline.createPost(id, `${first} ${topics[k]} (#${k + 1})`, new Date(postsAt[k]!));
      summary.posts++;
      bar.increment();
    }
    // About one user in twenty is suspended, at a time in the last six months.
    if (suspended) {
      try {
        await ctx.suspensions.suspend({ userId: id, reason, suspendedAt });
        summary.suspensions++;
      } catch (err) {
        // Suspended by the interrupted run already.
        if ((err as { code?: string }).code !== 'CONFLICT') throw err;
      }
    }
    await progress.set(unit, { ref: id, step: POSTS, done: true });
  }

  bar.update({ stage: 'meetings' });
  for (let m = 0; m < meetings && userIds.length > 0; m++) {
    const creator = rng.pick(userIds);
    const attendees = new Set(Array.from({ length: 1 + rng.int(Math.min(30, userIds.length)) }, () => rng.pick(userIds)));
    const unit = `meeting ${m}`;
    const state = await progress.get(unit);
    if (!state.done) {
      let meetingId = state.ref;
      if (!meetingId) {
        meetingId = (await ctx.meetings.create({ title: `Sync #${m + 1}` }, creator)).meetingId;
        summary.meetings++;
        await progress.set(unit, { ref: meetingId, step: 0, done: false });
      }
      // Accepting twice counts once (first write wins): resuming repeats them safely.
      for (const u of attendees) {
        if ((await ctx.meetings.accept(meetingId, u)).counted) summary.acceptances++;
      }
      await progress.set(unit, { ref: meetingId, step: attendees.size, done: true });
    }
    bar.increment();
  }

  bar.update({ stage: 'lists' });
  const applier = createListApplier(services);
  for (let l = 0; l < lists && userIds.length > 0; l++) {
    const owner = rng.pick(userIds);
    const labels = Array.from({ length: 10 + rng.int(20) }, () => rng.pick(GROCERIES));
    // Moves name items by position: the k-th item added, before the j-th.
    const moves = Array.from({ length: 5 }, () => [rng.int(labels.length), rng.int(labels.length)] as const);
    const unit = `list ${l}`;
    const state = await progress.get(unit);
    if (!state.done) {
      let listId = state.ref;
      if (!listId) {
        listId = (await ctx.lists.create(`Groceries ${l + 1}`, owner)).listId;
        summary.lists++;
        await progress.set(unit, { ref: listId, step: 0, done: false });
      }
      let items: string[];
      if (state.step === 0) {
        // Before any move the list holds the items added so far, in the order added.
        items = (await ctx.lists.items(listId, { first: 100 })).edges.map((e) => e.node.itemId);
        for (let k = items.length; k < labels.length; k++) {
          items.push((await ctx.lists.add(listId, labels[k]!)).itemId);
          summary.items++;
        }
      } else {
        items = JSON.parse(state.detail!) as string[];
      }
      const detail = JSON.stringify(items);
      await progress.set(unit, { ref: listId, step: Math.max(1, state.step), detail, done: false });
      // Step 1 + k: k moves done. A move repeated after an interruption changes nothing.
      for (let k = Math.max(1, state.step) - 1; k < moves.length; k++) {
        const [a, b] = moves[k]!;
        if (a !== b) {
          await ctx.lists.move(listId, items[a]!, { beforeItemId: items[b]! });
          summary.moves++;
        }
        await progress.set(unit, { ref: listId, step: k + 2, detail, done: false });
      }
      await applier.drain(listId);
      await progress.set(unit, { ref: listId, step: moves.length + 1, detail, done: true });
    }
    bar.increment();
  }
  bar.update(total, { stage: 'done' });
  bar.stop();

  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const where = config.store === 'sqlite' ? config.sqlitePath : `${config.cassandra.keyspace} on ${config.cassandra.contactPoints.join(',')}`;
  console.log(`\nSeeded ${where} with seed ${SEED} in ${seconds} s:`);
  console.table(summary);
  await close();
}

runScript('seed', main, (err) => {
  const code = (err as { code?: string }).code;
  if (code === 'SQLITE_CANTOPEN') return `check SQLITE_PATH: "${process.env.SQLITE_PATH ?? './data/app.db'}" must be a file in a writable folder`;
  if (code === 'SQLITE_BUSY') return 'another process held the database longer than the busy timeout; run the same command again to complete the seed';
  return writing ? 'what was written is kept; run the same command again to complete the seed' : undefined;
});
