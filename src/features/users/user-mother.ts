/** Object mothers for tests and seeding: users with sensible defaults. */

let counter = 0;

/** A valid `createUser` input; override what the test is about. */
export function aUser(overrides: Partial<{ username: string; displayName: string }> = {}) {
  counter++;
  return { username: `user_${counter}_${process.pid % 1000}`, displayName: `User ${counter}`, ...overrides };
}
