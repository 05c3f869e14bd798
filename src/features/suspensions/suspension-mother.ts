/** Object mothers for suspension tests and seeding. */

let n = 0;

/** A valid suspension input for a user; override what the test is about. */
export function aSuspension(userId: string, overrides: Partial<{ reason: string; suspendedAt: Date }> = {}) {
  n++;
  return { userId, reason: `reason ${n}`, ...overrides };
}
