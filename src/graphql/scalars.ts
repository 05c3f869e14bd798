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

/** The last instant `isoOf` writes itself: 9999-12-31T23:59:59.999Z. */
const LAST_FOUR_DIGIT_YEAR_MS = 253_402_300_799_999;

const twoDigits = (n: number) => (n < 10 ? `0${n}` : `${n}`);

/**
 * `new Date(ms).toISOString()`, the same text, for instants from 1970 to the year 9999
 * (others go to `toISOString`): the date from the day count by Howard Hinnant's
 * `civil_from_days`. `toISOString` is a call into V8's runtime, about 0.35 µs against
 * 0.12 here, and a timeline page serialises 20 of them (docs/benchmarks-history.md,
 * issue 39 over HTTP, round two).
 */
export function isoOf(ms: number): string {
  if (!(ms >= 0 && ms <= LAST_FOUR_DIGIT_YEAR_MS) || !Number.isInteger(ms)) return new Date(ms).toISOString();
  const days = Math.floor(ms / 86_400_000);
  let rest = ms - days * 86_400_000;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1_460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const shifted = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * shifted + 2) / 5) + 1;
  const month = shifted < 10 ? shifted + 3 : shifted - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const hour = Math.floor(rest / 3_600_000);
  rest -= hour * 3_600_000;
  const minute = Math.floor(rest / 60_000);
  rest -= minute * 60_000;
  const second = Math.floor(rest / 1_000);
  const milli = rest - second * 1_000;
  const millis = milli < 10 ? `00${milli}` : milli < 100 ? `0${milli}` : `${milli}`;
  return `${year}-${twoDigits(month)}-${twoDigits(day)}T${twoDigits(hour)}:${twoDigits(minute)}:${twoDigits(second)}.${millis}Z`;
}

/** DateTime as a graphql-js scalar. */
export const DateTimeScalar = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  description: 'An instant in time, as an ISO 8601 string with a time zone (UTC on output).',
  serialize(value) {
    if (value instanceof Date) {
      const ms = value.getTime();
      if (!Number.isNaN(ms)) return isoOf(ms);
    }
    throw new GraphQLError('DateTime cannot represent a non-date value');
  },
  parseValue: parse,
  parseLiteral(ast) {
    if (ast.kind !== Kind.STRING) throw new GraphQLError('DateTime must be a string');
    return parse(ast.value);
  },
});
