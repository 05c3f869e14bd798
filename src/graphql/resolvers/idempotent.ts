/**
 * `clientMutationId` as an idempotency key (docs/api.md, "Retries and idempotency
 * keys"): every mutation resolver is wrapped so that, given a key, it runs once per
 * (viewer, mutation field, key) and a retry gets the first attempt's payload. Without a
 * key, or without a viewer (the mutation refuses anyway), the resolver runs as it is.
 */
import { createHash } from 'node:crypto';
import type { GraphQLResolveInfo } from 'graphql';
import type { MutationResolvers } from '../__generated__/resolvers-types.js';
import type { RequestContext } from '../context.js';
import { DomainError } from '../../errors.js';

type KeyedInput = { readonly clientMutationId?: string | null };
type MutationFn = (root: unknown, args: { input: KeyedInput }, ctx: RequestContext, info: GraphQLResolveInfo) => Promise<unknown>;

/**
 * The digest of a mutation's input, `clientMutationId` aside: the same input in any key
 * order gives the same digest (a client's retry need not serialise it alike).
 */
export function inputFingerprint(field: string, input: KeyedInput): string {
  const { clientMutationId: _key, ...rest } = input;
  return createHash('sha256').update(field).update('\u0000').update(canonicalJson(rest)).digest('base64url');
}

/** JSON with object keys sorted, dates as their ISO text. */
function canonicalJson(value: unknown): string {
  if (value === undefined) return 'null';
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** `resolve` run once per idempotency key of the viewer and `field`. */
function keyed(field: string, resolve: MutationFn): MutationFn {
  return (root, args, ctx, info) => {
    const key = args.input.clientMutationId;
    if (key === null || key === undefined || ctx.viewer === null) return resolve(root, args, ctx, info);
    const scope = { viewer: ctx.viewer.username, field, key };
    return ctx.mutationKeys.run(scope, inputFingerprint(field, args.input), () => resolve(root, args, ctx, info));
  };
}

/** Every mutation resolver of `mutations`, keyed by its `clientMutationId`. */
export function keyedMutations(mutations: MutationResolvers<RequestContext>): MutationResolvers<RequestContext> {
  const out: Record<string, unknown> = {};
  for (const [field, resolve] of Object.entries(mutations)) out[field] = keyed(field, resolve as MutationFn);
  return out as MutationResolvers<RequestContext>;
}

/**
 * Run a removal; in a redo (a retry taking over from an attempt whose outcome is
 * unknown), NOT_FOUND means the thing is already gone, as the earlier attempt (or
 * someone) left it: the removal holds, and the retry answers as the first would have.
 */
export async function removal(ctx: RequestContext, remove: () => Promise<void>): Promise<void> {
  try {
    await remove();
  } catch (err) {
    if (!(ctx.mutationKeys.redo && err instanceof DomainError && err.code === 'NOT_FOUND')) throw err;
  }
}
