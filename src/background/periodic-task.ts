/**
 * A background job on a timer (the list applier, saga recovery). A pass that is still
 * running when the timer fires again is not started twice: the tick is skipped, so a
 * slow store never piles passes up. Errors are the task's to report (`onError`); the
 * timer keeps going. A tick while `runsWhen` says no (the process's presence lapsed)
 * is skipped too.
 */

/** A started periodic task. */
export interface PeriodicTask {
  /** Stop the timer; a pass already running finishes on its own. */
  stop(): void;
}

/** Run `pass` every `intervalMs` (first run after one interval) until stopped. */
export function startPeriodicTask(options: {
  readonly intervalMs: number;
  readonly pass: () => Promise<void>;
  readonly onError: (err: unknown) => void;
  /** Whether a pass may run now (absent: always). */
  readonly runsWhen?: () => boolean;
}): PeriodicTask {
  let running = false;
  const tick = async () => {
    if (running || options.runsWhen?.() === false) return;
    running = true;
    try {
      await options.pass();
    } catch (err) {
      options.onError(err);
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void tick(), options.intervalMs);
  // A background job never keeps the process alive on its own.
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
