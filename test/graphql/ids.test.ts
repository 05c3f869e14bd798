/**
 * Global ids: our native-base64 `toGlobalId` gives graphql-relay's text for every
 * input, so ids handed out before stay valid, and parsing still refuses what does not
 * re-encode to itself.
 */
import fc from 'fast-check';
import { toGlobalId as relayToGlobalId } from 'graphql-relay';
import { describe, expect, it } from 'vitest';
import { parseGlobalId, postGlobalId, toGlobalId, userGlobalId } from '../../src/graphql/ids.js';

const USER = '6f1e2f4a-1c2d-4e5f-8a9b-0c1d2e3f4a5b';
const POST = 'a1b2c3d4-0000-11f0-8000-0123456789ab';

describe('global ids', () => {
  it("give graphql-relay's text for any type and id", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), fc.string({ unit: 'grapheme', maxLength: 80 }), (type, id) => {
        expect(toGlobalId(type, id)).toBe(relayToGlobalId(type, id));
      }),
      { numRuns: 1000 },
    );
  });

  it("give a post graphql-relay's text for any author and post id, uuids or not", () => {
    const text = fc.oneof(fc.uuid(), fc.string({ maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 40 }), fc.uuid().map((u) => u.toUpperCase()));
    fc.assert(
      fc.property(text, text, (authorId, postId) => {
        // Twice: the author's prefix is made, then kept.
        expect(postGlobalId({ authorId, postId })).toBe(relayToGlobalId('Post', `${authorId}:${postId}`));
        expect(postGlobalId({ authorId, postId })).toBe(relayToGlobalId('Post', `${authorId}:${postId}`));
      }),
      { numRuns: 2000 },
    );
  });

  it('read back the ids they give, and refuse an edited one naming the argument', () => {
    expect(userGlobalId(USER)).toBe(relayToGlobalId('User', USER));
    expect(parseGlobalId(userGlobalId(USER), 'id')).toEqual({ type: 'User', userId: USER });
    expect(parseGlobalId(postGlobalId({ authorId: USER, postId: POST }), 'id')).toEqual({ type: 'Post', authorId: USER, postId: POST });
    const id = userGlobalId(USER);
    const edited = `${id.slice(0, 10)}${id[10] === 'A' ? 'B' : 'A'}${id.slice(11)}`;
    expect(() => parseGlobalId(edited, 'userId')).toThrow(/`userId` is not a valid node ID/);
  });
});
