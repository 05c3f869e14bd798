/**
 * Global ids (Relay Global Object Identification), in graphql-relay's format: base64
 * (standard alphabet, padded) of `Type:id`. Parsing is strict: an id that does not
 * re-encode to itself, or names an unknown type or a malformed key, is BAD_USER_INPUT
 * naming the argument.
 */
import { fromGlobalId } from 'graphql-relay';
import { badInput } from '../errors.js';
import { isTimeuuid, isUuid } from '../store/values.js';

/**
 * graphql-relay's `toGlobalId`, through Node's native base64: the same text (its base64
 * is a JavaScript loop over the UTF-8 bytes, a few percent of a page's CPU time when
 * every node and author has an id). Use it for every id the schema returns.
 */
export function toGlobalId(type: string, id: string): string {
  return Buffer.from(`${type}:${id}`, 'utf8').toString('base64');
}


/** What a global id points at. */
export type NodeRef =
  | { readonly type: 'User'; readonly userId: string }
  | { readonly type: 'Meeting'; readonly meetingId: string }
  | { readonly type: 'OrderedList'; readonly listId: string }
  | { readonly type: 'ListItem'; readonly listId: string; readonly itemId: string }
  | { readonly type: 'Post'; readonly authorId: string; readonly postId: string };

/** The global id of a user. */
export function userGlobalId(userId: string): string {
  return toGlobalId('User', userId);
}

/** The global id of a meeting. */
export function meetingGlobalId(meetingId: string): string {
  return toGlobalId('Meeting', meetingId);
}

/** The global id of an ordered list. */
export function listGlobalId(listId: string): string {
  return toGlobalId('OrderedList', listId);
}

/** The global id of a list item: its list and its id (the list never changes). */
export function listItemGlobalId(item: { listId: string; itemId: string }): string {
  return toGlobalId('ListItem', `${item.listId}:${item.itemId}`);
}

/** A list item's global id, parsed (BAD_USER_INPUT otherwise). */
export function listItemRefOf(id: string, argument: string): { listId: string; itemId: string } {
  const ref = parseGlobalId(id, argument, 'ListItem');
  if (ref.type !== 'ListItem') throw badInput(argument, `\`${argument}\` is not a valid ListItem ID`);
  return ref;
}

/** The id inside a global id of the expected type (BAD_USER_INPUT otherwise). */
export function localIdOf(id: string, argument: string, type: 'User' | 'Meeting' | 'OrderedList'): string {
  const ref = parseGlobalId(id, argument, type);
  if (ref.type === 'User') return ref.userId;
  if (ref.type === 'Meeting') return ref.meetingId;
  if (ref.type === 'OrderedList') return ref.listId;
  throw badInput(argument, `\`${argument}\` is not a valid ${type} ID`);
}

/** Whether every character of `text` is ASCII: its UTF-8 is then its Latin-1, which `btoa` encodes. */
function ascii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** How many authors' id prefixes `postGlobalId` keeps before it starts again. */
const AUTHOR_PREFIXES = 1_024;
/** `Post:<author>:`'s base64 by author, for the authors whose prefix is whole 3-byte groups. */
const authorPrefixes = new Map<string, string>();

/**
 * The global id of a post: its author and its timeuuid. The same text as
 * `toGlobalId('Post', author:post)`, made in two halves: `Post:<author uuid>:` is 42
 * ASCII bytes, a whole number of base64's 3-byte groups, so the id is that prefix's
 * base64 (the same for every post of an author, kept) followed by the post id's own
 * (`btoa`, no Buffer). A page's 20 ids were a few µs of a timeline request over HTTP
 * (docs/benchmarks-history.md, issue 39 over HTTP). Any other author or post id text
 * takes the general path.
 */
export function postGlobalId(post: { authorId: string; postId: string }): string {
  const { authorId, postId } = post;
  let prefix = authorPrefixes.get(authorId);
  if (prefix === undefined) {
    if (!ascii(authorId) || (authorId.length + 6) % 3 !== 0) return toGlobalId('Post', `${authorId}:${postId}`);
    if (authorPrefixes.size >= AUTHOR_PREFIXES) authorPrefixes.clear();
    prefix = btoa(`Post:${authorId}:`);
    authorPrefixes.set(authorId, prefix);
  }
  return ascii(postId) ? prefix + btoa(postId) : toGlobalId('Post', `${authorId}:${postId}`);
}

/** Parse a global id, optionally requiring a type; throws BAD_USER_INPUT on anything else. */
export function parseGlobalId(id: string, argument: string, expected?: NodeRef['type']): NodeRef {
  const fail = () =>
    badInput(argument, `\`${argument}\` is not a valid ${expected ?? 'node'} ID, got ${JSON.stringify(String(id).slice(0, 60))}`);
  if (typeof id !== 'string' || id.length === 0 || id.length > 200) throw fail();
  const { type, id: local } = fromGlobalId(id);
  if (toGlobalId(type, local) !== id) throw fail();
  let ref: NodeRef | null = null;
  if (type === 'User' && isUuid(local)) ref = { type, userId: local };
  if (type === 'Meeting' && isUuid(local)) ref = { type, meetingId: local };
  if (type === 'OrderedList' && isUuid(local)) ref = { type, listId: local };
  if (type === 'ListItem') {
    const [listId, itemId, rest] = local.split(':');
    if (rest === undefined && listId && itemId && isUuid(listId) && isUuid(itemId)) ref = { type, listId, itemId };
  }
  if (type === 'Post') {
    const [authorId, postId, rest] = local.split(':');
    if (rest === undefined && authorId && postId && isUuid(authorId) && isTimeuuid(postId)) {
      ref = { type, authorId, postId };
    }
  }
  if (!ref || (expected && ref.type !== expected)) throw fail();
  return ref;
}
