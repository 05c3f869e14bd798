/**
 * Cursor signing: what the codec costs to sign, and to verify, the 20 cursors of a
 * timeline page (a connection id of `User.posts:<uuid>`, each key one timeuuid), in µs
 * of CPU a page, the median of 7 rounds of 20,000 pages. Every edge of every page
 * carries a cursor, so this is paid on every request that lists edges. The same file
 * runs against any codec with the `encodeCursor`/`decodeCursor` interface, so a
 * checkout of an earlier release gives the figure before a change.
 */
import { randomUUID } from 'node:crypto';
import { createCursorCodec } from '../src/paging/cursor.js';
import { newTimeuuid } from '../src/store/timeuuid.js';
import { BENCH_SECRETS } from './fixture.js';

const EDGES = 20;
const PAGES = 20_000;
const ROUNDS = 7;

/** The median µs a page of `work` over `ROUNDS` rounds, after one warm-up round. */
function medianMicrosPerPage(work: () => void): number {
  const times: number[] = [];
  for (let r = 0; r <= ROUNDS; r++) {
    const start = process.cpuUsage();
    for (let p = 0; p < PAGES; p++) work();
    const used = process.cpuUsage(start);
    if (r > 0) times.push((used.user + used.system) / PAGES);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

export async function runCursorSigning(
  progress: (m: string) => void,
  row: (figure: string, value: string, target?: string, met?: boolean | null) => void,
) {
  const codec = createCursorCodec(BENCH_SECRETS.CURSOR_SECRET);
  const connection = `User.posts:${randomUUID()}`;
  const keys = Array.from({ length: EDGES }, () => [newTimeuuid()]);
  const cursors = keys.map((k) => codec.encodeCursor(connection, k));
  let sink = 0;
  progress(`cursor signing: ${EDGES}-edge pages, ${ROUNDS} rounds of ${PAGES} pages`);
  const signMicros = medianMicrosPerPage(() => {
    for (const k of keys) sink += codec.encodeCursor(connection, k).length;
  });
  const verifyMicros = medianMicrosPerPage(() => {
    for (const c of cursors) sink += codec.decodeCursor(connection, c)?.length ?? 0;
  });
  if (sink === 0) throw new Error('nothing was signed');
  const format = Buffer.from(cursors[0]!, 'base64url')[0];
  row(`cursor signing, ${EDGES}-edge page (format ${format}, ${cursors[0]!.length} characters a cursor)`, `${signMicros.toFixed(1)} µs CPU a page`);
  row(`cursor verifying, ${EDGES} cursors`, `${verifyMicros.toFixed(1)} µs CPU`);
  return { edges: EDGES, format, cursorLength: cursors[0]!.length, signMicrosPerPage: signMicros, verifyMicrosPerPage: verifyMicros };
}
