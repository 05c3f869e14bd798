/**
 * Request limits: depth, aliases, tokens and directives through graphql-armor, and a
 * query cost through graphql-query-complexity in which a connection's `first`/`last`
 * (or the default page size) multiplies the cost of what each edge selects, as does
 * the number of ids given to `nodes`, and an `offset` adds its reads (`OFFSET_COST`). Every refusal says which limit and by how much.
 */
import type { ApolloServerPlugin, BaseContext, GraphQLRequestContextDidResolveOperation, GraphQLRequestListener } from '@apollo/server';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import { MaxTokensParserWLexer } from '@escape.tech/graphql-armor-max-tokens';
import { GraphQLError, getNamedType, type DocumentNode, type GraphQLSchema, type OperationDefinitionNode, type ValidationRule } from 'graphql';
import { getComplexity, simpleEstimator, type ComplexityEstimator } from 'graphql-query-complexity';
import { DEFAULT_PAGE_SIZE } from '../paging/engine.js';
import { RANK_LEVEL_SHIFTS } from '../paging/ranked-index.js';
import { checkOperation } from './operation-guard.js';
import type { Budgeted } from './rate-limit.js';

/** The configured limits. */
export interface RequestLimits {
  readonly depth: number;
  readonly aliases: number;
  readonly tokens: number;
  readonly directives: number;
  readonly cost: number;
}

/**
 * What a jump (`offset` above 0) adds to a connection's cost: its store reads, one per
 * level of the counted index plus the cursor's rank and the page itself
 * (paging/ranked-index.ts), whatever the offset.
 */
export const OFFSET_COST = RANK_LEVEL_SHIFTS.length + 2;

/** Cost of a field: connections and `nodes` multiply their children's cost; a jump costs its reads. */
const connectionEstimator: ComplexityEstimator = ({ field, args, childComplexity }) => {
  if (getNamedType(field.type).name.endsWith('Connection')) {
    const size = Number(args.first ?? args.last ?? DEFAULT_PAGE_SIZE);
    const jump = Number(args.offset ?? 0) > 0 ? OFFSET_COST : 0;
    return 1 + jump + Math.max(0, size) * childComplexity;
  }
  if (Array.isArray(args.ids)) return 1 + args.ids.length * childComplexity;
  return undefined;
};

/** A bounded memo: the oldest entry goes first. */
function memo<V>(size: number) {
  const map = new Map<string, V>();
  return {
    get: (key: string) => map.get(key),
    set(key: string, value: V) {
      if (map.size >= size) map.delete(map.keys().next().value!);
      map.set(key, value);
    },
  };
}

/**
 * What of a variable's value the cost can depend on: the estimator reads numbers
 * (`first`, `last`) and list lengths (`ids`), nothing else. Strings, objects and the
 * items of lists are reduced to a tag, so the memo key stays a few bytes whatever the
 * request carries, and nothing here recurses into a value (a variable nested 100,000
 * levels deep costs one step).
 */
function costShape(value: unknown): string {
  // Booleans too: `@include(if: $b)` decides which fields count.
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.length}]`;
  if (value === null || value === undefined) return 'null';
  return typeof value === 'string' ? 's' : 'o';
}

/** What the cost check remembers of one operation (a node of a document Apollo caches). */
interface OperationCosts {
  /** The operation only reads introspection fields (the playground's schema fetch): not paged data. */
  readonly introspection: boolean;
  /** Its cost for each shape of its declared variables (`costShape`, joined). */
  readonly byShape: Map<string, number>;
}

/**
 * Computes each operation's cost once its variables are known, and refuses it above
 * the limit; returns the cost (0 for introspection alone, null when there is no
 * operation or its variables do not coerce). The cost depends only on the operation and the shape of the variables it
 * declares, so it is remembered with the operation's node (Apollo hands every request
 * of a cached query text the same document) under that shape: variables it does not
 * declare cannot change it and never reach the key.
 */
function costCheck(limit: number): (context: GraphQLRequestContextDidResolveOperation<BaseContext>) => number | null {
  const known = new WeakMap<OperationDefinitionNode, OperationCosts>();
  return ({ request, document, schema, operation }) => {
    // No operation: checkOperation (run first) refuses the request.
    if (!operation) return null;
    let costs = known.get(operation);
    if (!costs) {
      const fields = operation.selectionSet.selections;
      costs = { introspection: fields.every((f) => f.kind === 'Field' && f.name.value.startsWith('__')), byShape: new Map() };
      known.set(operation, costs);
    }
    if (costs.introspection) return 0;
    const variables = request.variables ?? {};
    const declared = operation.variableDefinitions ?? [];
    // Absent ('-': the declared default applies) and null differ.
    let shape = '';
    for (const d of declared) {
      const name = d.variable.name.value;
      shape += `${Object.hasOwn(variables, name) ? costShape(variables[name]) : '-'},`;
    }
    let cost = costs.byShape.get(shape);
    if (cost === undefined) try {
      const given = declared.map((d) => d.variable.name.value).filter((name) => Object.hasOwn(variables, name));
      cost = getComplexity({
        schema,
        query: document,
        operationName: request.operationName ?? undefined,
        // Only the declared variables: the others cannot change the cost.
        variables: Object.fromEntries(given.map((name) => [name, variables[name]])),
        estimators: [connectionEstimator, simpleEstimator({ defaultComplexity: 1 })],
      });
      // A bounded memo per operation: shapes of lists (`[n]`) can be many.
      if (costs.byShape.size >= 100) costs.byShape.delete(costs.byShape.keys().next().value!);
      costs.byShape.set(shape, cost);
    } catch {
      // Variables that do not coerce: execution refuses the request with
      // BAD_USER_INPUT before resolving anything, so there is no cost to guard.
      return null;
    }
    if (cost > limit) {
      throw new GraphQLError(`Query cost limit of ${limit} exceeded, found ${cost}.`, {
        extensions: { code: 'GRAPHQL_VALIDATION_FAILED', http: { status: 400 } },
      });
    }
    return cost;
  };
}

/**
 * The operation check first, then the cost check, then the cost charged to the
 * request's budget (when the context has one: `RATE_LIMITED` over it), all before
 * anything executes: one `didResolveOperation` hook. Each is synchronous (a refusal is
 * thrown), so the hook awaits nothing of its own.
 */
function resolveOperation(cost: ReturnType<typeof costCheck>): NonNullable<GraphQLRequestListener<BaseContext>['didResolveOperation']> {
  return async (context) => {
    checkOperation(context);
    const points = cost(context);
    (context.contextValue as Partial<Budgeted>).rateLimit?.charge(points ?? 0);
  };
}

/**
 * Refuse a query of more than `limit` tokens before anything parses it fully:
 * graphql-armor's lexer counts while reading and stops at the limit. Returns the
 * refusal message, or null (syntax errors are left to the real parser).
 */
export function tokenLimitViolation(query: unknown, limit: number): string | null {
  if (typeof query !== 'string') return null;
  // The same query text always has the same tokens: count it once.
  const seen = checkedQueries.get(query);
  if (seen !== undefined) return seen;
  let verdict: string | null = null;
  try {
    new MaxTokensParserWLexer(query, { n: limit, exposeLimits: true }).parseDocument();
  } catch (err) {
    verdict = err instanceof GraphQLError && /Token limit/.test(err.message) ? err.message : null;
  }
  // Only short texts are remembered, so the memo stays small.
  if (query.length <= 10_000) checkedQueries.set(query, verdict);
  return verdict;
}

const checkedQueries = memo<string | null>(2_000);

/** What enforces the limits: validation rules, and hooks for the server's one request plugin. */
export interface LimitProtections {
  readonly validationRules: ValidationRule[];
  /** Refuses an operation that cannot run here (`checkOperation`), then one whose cost exceeds the limit. */
  readonly didResolveOperation: NonNullable<GraphQLRequestListener<BaseContext>['didResolveOperation']>;
  /** Hides field suggestions from error messages (graphql-armor's plugin, run only when there are errors). */
  readonly didEncounterErrors: NonNullable<GraphQLRequestListener<BaseContext>['didEncounterErrors']>;
  /**
   * The cost check alone, for an operation that does not pass through Apollo (a
   * subscription over WebSocket): throws the same refusal as HTTP gets, or returns the
   * cost (null when the variables do not coerce) for the caller to charge.
   */
  readonly checkCost: (resolved: { schema: GraphQLSchema; document: DocumentNode; operation: OperationDefinitionNode; variables?: Record<string, unknown> | null; operationName?: string | null }) => number | null;
}

/** Validation rules and request hooks enforcing the limits. */
export function limitProtections(limits: RequestLimits, options: { hideSuggestions: boolean }): LimitProtections {
  const armor = new ApolloArmor({
    maxDepth: { n: limits.depth, exposeLimits: true },
    maxAliases: { n: limits.aliases, exposeLimits: true },
    // armor's token plugin lets syntax errors escape its hook (a 500); see tokenLimitViolation.
    maxTokens: { enabled: false },
    maxDirectives: { n: limits.directives, exposeLimits: true },
    // Cost is ours (connection sizes multiply); armor's would not know them.
    costLimit: { enabled: false },
    // "Did you mean …?" reveals the schema when introspection is off.
    blockFieldSuggestion: { enabled: options.hideSuggestions },
  });
  const { plugins, validationRules } = armor.protect();
  const cost = costCheck(limits.cost);
  // armor types its plugins against Apollo's CommonJS build; they are the same objects.
  const armorPlugins = plugins as unknown as ApolloServerPlugin[];
  return {
    validationRules,
    didResolveOperation: resolveOperation(cost),
    checkCost: ({ schema, document, operation, variables, operationName }) =>
      cost({ schema, document, operation, request: { variables: variables ?? undefined, operationName: operationName ?? undefined } } as unknown as GraphQLRequestContextDidResolveOperation<BaseContext>),
    // armor's plugins only rewrite errors: instead of one more plugin on every request,
    // they run here, on the requests that have errors.
    async didEncounterErrors(context) {
      for (const plugin of armorPlugins) {
        const listener = await plugin.requestDidStart?.(context);
        await listener?.didEncounterErrors?.(context);
      }
    },
  };
}
