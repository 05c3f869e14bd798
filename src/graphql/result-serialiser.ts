/**
 * A serialiser compiled for one operation's response shape (fast-json-stringify, as
 * graphql-jit's `customJSONSerializer` builds it), describing our custom scalars too:
 * graphql-jit's own description refuses any scalar but the five built-in ones, so every
 * operation selecting a `DateTime` fell back to `JSON.stringify`.
 *
 * The text is exactly what `JSON.stringify` writes for the same result: properties in
 * the order of the selection (graphql-jit builds results in that order), every null
 * written as null, absent fields (`@skip`) left out. Operations with fragments get no serialiser: the
 * fields of a fragment on an abstract type depend on the runtime type.
 */
import fastJson from 'fast-json-stringify';
import {
  getNullableType,
  isEnumType,
  isListType,
  isNonNullType,
  isObjectType,
  isScalarType,
  Kind,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';

/** A compiled serialiser of `{ data }`. */
export type ResultSerialiser = (result: { data: unknown }) => string;

/** The JSON type each scalar serialises to (custom scalars named here are safe to describe). */
const SCALARS: Record<string, string> = {
  Int: 'integer',
  Float: 'number',
  String: 'string',
  Boolean: 'boolean',
  ID: 'string',
  // src/graphql/scalars.ts: always an ISO 8601 string.
  DateTime: 'string',
};

type JsonSchema = Record<string, unknown>;

/** Thrown inside the walk when the operation cannot be described; caught below. */
class Undescribable extends Error {}

function describeSelection(schema: GraphQLSchema, type: GraphQLObjectType, selectionSet: SelectionSetNode): JsonSchema {
  const properties: Record<string, JsonSchema> = {};
  for (const selection of selectionSet.selections) {
    if (selection.kind !== Kind.FIELD) throw new Undescribable();
    const name = selection.alias?.value ?? selection.name.value;
    // The same response name twice merges selections: not described here.
    if (Object.hasOwn(properties, name)) throw new Undescribable();
    if (selection.name.value === '__typename') {
      properties[name] = { type: 'string', nullable: true };
      continue;
    }
    const field = type.getFields()[selection.name.value];
    if (!field) throw new Undescribable();
    properties[name] = describeType(schema, field.type, selection.selectionSet);
  }
  return { type: 'object', properties, nullable: true };
}

function describeType(schema: GraphQLSchema, type: GraphQLOutputType, selectionSet: SelectionSetNode | undefined): JsonSchema {
  // Described as nullable still: a null is then written as null whatever the schema
  // promises (fast-json-stringify would write a non-nullable null as "" or {}).
  if (isNonNullType(type)) return describeType(schema, type.ofType, selectionSet);
  if (isListType(type)) return { type: 'array', items: describeType(schema, type.ofType, selectionSet), nullable: true };
  if (isObjectType(type) && selectionSet) return describeSelection(schema, type, selectionSet);
  if (isEnumType(type)) return { type: 'string', nullable: true };
  if (isScalarType(type) && Object.hasOwn(SCALARS, type.name)) return { type: SCALARS[type.name], nullable: true };
  // Interfaces and unions (their fields depend on the runtime type), unknown scalars.
  throw new Undescribable();
}

/**
 * The serialiser of `{ data }` for the results of `operation`, or null when its shape
 * cannot be described (fragments, abstract types, unknown scalars, merged fields).
 */
export function resultSerialiser(schema: GraphQLSchema, operation: OperationDefinitionNode): ResultSerialiser | null {
  const root = schema.getRootType(operation.operation);
  if (!root) return null;
  try {
    const data = describeSelection(schema, getNullableType(root) as GraphQLObjectType, operation.selectionSet);
    return fastJson({ type: 'object', properties: { data } }) as ResultSerialiser;
  } catch (err) {
    if (err instanceof Undescribable) return null;
    throw err;
  }
}
