/**
 * The real server for `npm run bench:live`, compiled with esbuild like the peers: the
 * product's `createApp` as `main.ts` runs it, plus one JSON line a second on stdout
 * with what its live hub did (polls, store reads, rows, changes delivered) and its
 * RSS, for the benchmark to read. `BENCH_NO_CHANGE_LOG=1` drops the change log's
 * mutations from every batch (and turns nothing else off), to price the change log on
 * the write path.
 */
import { createApp } from '../../src/app.js';
import { createStore } from '../../src/composition-root.js';
import { loadConfig } from '../../src/config.js';
import type { PollReport } from '../../src/live/live-hub.js';
import { createLogger } from '../../src/observability/logger.js';
import { MonotonicClock } from '../../src/store/clock.js';
import type { Store } from '../../src/store/port.js';
import { WithoutChangeLog } from '../without-change-log.js';

const config = loadConfig();
const logger = createLogger({ level: config.logLevel, production: true });
const clock = new MonotonicClock();
const base = createStore(config, { clock, log: (m) => logger.info(m) });
const store: Store = process.env.BENCH_NO_CHANGE_LOG === '1' ? new WithoutChangeLog(base) : base;
const totals = { polls: 0, reads: 0, rows: 0, delivered: 0, shardPolls: 0 };
const app = await createApp(config, {
  logger,
  store,
  clock,
  onLivePoll(report: PollReport) {
    totals.polls++;
    totals.reads += report.reads;
    totals.rows += report.rows;
    totals.delivered += report.delivered;
    if (report.mode === 'shards') totals.shardPolls++;
  },
});
const port = await app.listen();
console.log(JSON.stringify({ ready: port }));
setInterval(() => {
  console.log(
    JSON.stringify({
      at: Date.now(),
      ...totals,
      feeds: app.services.live.activeFeeds,
      subscriptions: app.services.live.subscriptions,
      sockets: app.liveServer.sockets,
      rss: process.memoryUsage().rss,
    }),
  );
}, 1_000).unref();
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
