/** The DateTime scalar: ISO 8601 with a time zone in, UTC ISO 8601 out. */
import { GraphQLError, GraphQLScalarType, Kind } from 'graphql';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

function parse(value: unknown): Date {
  if (typeof value !== 'string' || !ISO.test(value)) {
    throw new GraphQLError(
      `DateTime must be an ISO 8601 string with a time zone, e.g. "2026-01-31T12:00:00Z", got ${JSON.stringify(value)?.slice(0, 60)}`,
    );
  }
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) throw new GraphQLError(`DateTime is not a real instant: ${value}`);
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
