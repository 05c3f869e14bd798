/** The benchmarks' environment settings, read alike by every command. */

/** A positive number from the environment variable `name`, or `fallback`; exits 2 naming the variable otherwise. */
export function positive(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback);
  if (!(value > 0)) {
    console.error(`${name} must be a positive number, got ${JSON.stringify(process.env[name])}`);
    process.exit(2);
  }
  return value;
}
