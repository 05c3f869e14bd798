/**
 * `npm run seed -- --users N --posts-per-user M --seed S`: fill every feature of the
 * configured store (SQLite by default, or STORE=cassandra) with realistic,
 * deterministic data: users with locations and last names, posts, suspensions across
 * months, meetings and their acceptances, ordered lists with moves. Shows a progress
 * bar and a final summary. The same seed gives the same content.
 */
import { parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import pino from 'pino';
import { ALL_TABLES, createListApplier, createRequestContext, createServices, createStore } from '../composition-root.js';
import { loadConfig } from '../config.js';

const { values } = parseArgs({
  options: {
    users: { type: 'string', default: '100' },
    'posts-per-user': { type: 'string', default: '10' },
    seed: { type: 'string', default: '1' },
  },
});

function count(name: string, raw: string, max: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > max) {
    console.error(`--${name} must be an integer between 0 and ${max}, got "${raw}"`);
    process.exit(2);
  }
  return n;
}

const USERS = count('users', values.users!, 1_000_000);
const POSTS = count('posts-per-user', values['posts-per-user']!, 10_000);
const SEED = count('seed', values.seed!, 2 ** 31 - 1);

/** mulberry32: a small, well-known deterministic generator. */
function generator(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(xs: readonly T[]) => xs[Math.floor(next() * xs.length)]! };
}

const FIRST = ['Ada', 'Alan', 'Grace', 'Linus', 'Margaret', 'Dennis', 'Barbara', 'Ken', 'Frances', 'Edsger', 'Radia', 'Niklaus', 'Hedy', 'Tim', 'Sophie', 'Yukihiro', 'Anita', 'Guido', 'Shafi', 'Leslie'];
const LAST = ['Lovelace', 'Turing', 'Hopper', 'Torvalds', 'Hamilton', 'Ritchie', 'Liskov', 'Thompson', 'Allen', 'Dijkstra', 'Perlman', 'Wirth', 'Lamarr', 'Berners-Lee', 'Wilson', 'Matsumoto', 'Borg', 'van Rossum', 'Goldwasser', 'Lamport', 'Müller', 'Ødegaard', 'Nguyễn', 'Silva'];
const CITIES = ['Paris', 'Lyon', 'Berlin', 'Lisbon', 'São Paulo', 'Tokyo', 'Kyoto', 'Oslo', 'Lagos', 'Nairobi', 'Toronto', 'Austin', 'Melbourne', 'Zürich', 'Kraków'];
const TOPICS = ['shipped a release', 'fixed a flaky test', 'read a paper on consensus', 'tuned compaction', 'paired on a refactor', 'wrote docs', 'reviewed a pull request', 'drew a data model'];
const REASONS = ['spam', 'abuse reported by several members', 'impersonation', 'automated posting', 'payment fraud'];
const GROCERIES = ['milk', 'eggs', 'bread', 'coffee', 'apples', 'rice', 'lentils', 'tea', 'cheese', 'olive oil', 'tomatoes', 'basil'];

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = pino({ level: 'warn' });
  const store = createStore(config);
  await store.ensureTables(ALL_TABLES);
  const services = createServices(config, { store, logger });
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
    let id: string;
    try {
      id = (await ctx.users.create({ username, displayName: `${first} ${last}`, location, lastName: last })).id;
      summary.users++;
    } catch (err) {
      // Seeding again with the same seed: the user is there already.
      if ((err as { code?: string }).code !== 'CONFLICT') throw err;
      summary.existing++;
      bar.increment(1 + POSTS);
      continue;
    }
    userIds.push(id);
    bar.increment();
    for (let k = 0; k < POSTS; k++) {
      await ctx.timeline.createPost(id, `${first} ${topics[k]} (#${k + 1})`, new Date(postsAt[k]!));
      summary.posts++;
      bar.increment();
    }
    // About one user in twenty is suspended, at a time in the last six months.
    if (suspended) {
      await ctx.suspensions.suspend({ userId: id, reason, suspendedAt });
      summary.suspensions++;
    }
  }

  bar.update({ stage: 'meetings' });
  for (let m = 0; m < meetings && userIds.length > 0; m++) {
    const meeting = await ctx.meetings.create({ title: `Sync #${m + 1}` }, rng.pick(userIds));
    summary.meetings++;
    const attendees = new Set(Array.from({ length: 1 + rng.int(Math.min(30, userIds.length)) }, () => rng.pick(userIds)));
    for (const u of attendees) {
      if ((await ctx.meetings.accept(meeting.meetingId, u)).counted) summary.acceptances++;
    }
    bar.increment();
  }

  bar.update({ stage: 'lists' });
  const applier = createListApplier(services);
  for (let l = 0; l < lists && userIds.length > 0; l++) {
    const list = await ctx.lists.create(`Groceries ${l + 1}`, rng.pick(userIds));
    summary.lists++;
    const items: string[] = [];
    for (let k = 0; k < 10 + rng.int(20); k++) {
      items.push((await ctx.lists.add(list.listId, rng.pick(GROCERIES))).itemId);
      summary.items++;
    }
    for (let k = 0; k < 5; k++) {
      const a = rng.pick(items);
      const b = rng.pick(items);
      if (a !== b) {
        await ctx.lists.move(list.listId, a, { beforeItemId: b });
        summary.moves++;
      }
    }
    await applier.drain(list.listId);
    bar.increment();
  }
  bar.update(total, { stage: 'done' });
  bar.stop();

  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const where = config.store === 'sqlite' ? config.sqlitePath : `${config.cassandra.keyspace} on ${config.cassandra.contactPoints.join(',')}`;
  console.log(`\nSeeded ${where} with seed ${SEED} in ${seconds} s:`);
  console.table(summary);
  await store.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
