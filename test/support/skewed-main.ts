/**
 * A test-only entry point: the real server with its clock TEST_CLOCK_OFFSET_MS away
 * from the machine's, as if run under `faketime`, without needing it (CI has no apt).
 * Every reading of the time in the process is shifted: `Date.now()` and `new Date()`,
 * so write timestamps, timeuuids and defaults all come from the skewed clock, as on a
 * server whose NTP has drifted. Only tests start this entry.
 */
const offsetMs = Number(process.env.TEST_CLOCK_OFFSET_MS ?? '0');
if (!Number.isFinite(offsetMs)) throw new Error(`TEST_CLOCK_OFFSET_MS must be a number of ms, got ${process.env.TEST_CLOCK_OFFSET_MS}`);

const RealDate = Date;
class SkewedDate extends RealDate {
  constructor(...args: unknown[]) {
    if (args.length === 0) super(RealDate.now() + offsetMs);
    else super(...(args as [string | number | Date]));
  }
  static override now(): number {
    return RealDate.now() + offsetMs;
  }
}
globalThis.Date = SkewedDate as DateConstructor;

// Imported after the clock is replaced, so every module reads the skewed time.
const { serve } = await import('../../src/serve.js');
serve().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
