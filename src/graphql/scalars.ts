/** The DateTime scalar: ISO 8601 with a time zone in, UTC ISO 8601 out. */
import { GraphQLError, GraphQLScalarType, Kind } from 'graphql';

const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

/** Days in a month of the proleptic Gregorian calendar. */
function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/**
 * An ISO 8601 instant that names a real calendar date and clock time. `Date` would
 * roll "2026-02-30" over to March 2nd and "24:00" to the next day; refuse them instead.
 */
function parse(value: unknown): Date {
  const m = typeof value === 'string' ? ISO.exec(value) : null;
  if (!m) {
    throw new GraphQLError(
      `DateTime must be an ISO 8601 string with a time zone, e.g. "2026-01-31T12:00:00Z", got ${JSON.stringify(value)?.slice(0, 60)}`,
    );
  }
  const [year, month, day, hour, minute, second = 0, offsetHours = 0, offsetMinutes = 0] = m
    .slice(1)
    .map((part) => (part === undefined ? undefined : Number(part))) as number[];
  const real =
    month! >= 1 &&
    month! <= 12 &&
    day! >= 1 &&
    day! <= daysIn(year!, month!) &&
    hour! <= 23 &&
    minute! <= 59 &&
    second <= 59 &&
    offsetHours <= 23 &&
    offsetMinutes <= 59;
  const d = new Date(value as string);
  if (!real || Number.isNaN(d.getTime())) throw new GraphQLError(`DateTime must be a real calendar date and time, got ${JSON.stringify(value)}`);
  return d;
}

/** DateTime as a graphql-js scalar. */
export const DateTimeScalar = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  description: 'An instant in time, as an ISO 8601 string with a time zone (UTC on output).',
  serialize(value) {
    if (value instanceof Date && !Number.isNaN(value.getTime())) return value.toISOString();
    throw new GraphQLError('DateTime cannot represent a non-date value');
  },
  parseValue: parse,
  parseLiteral(ast) {
    if (ast.kind !== Kind.STRING) throw new GraphQLError('DateTime must be a string');
    return parse(ast.value);
  },
});
