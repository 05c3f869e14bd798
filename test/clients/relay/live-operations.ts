/**
 * The Relay operations of the client-library tests, as an app writes them: relay-compiler
 * (`npm run relay`, config beside this file) turns each `graphql` tag into an artifact
 * in `__generated__/`. The tests import the artifacts directly, which is what Relay's
 * Babel plugin makes of these tags; this file itself is never loaded (an uncompiled tag
 * throws), and `relay-live.test.ts` fails when the artifacts are not what the compiler
 * makes of it.
 */
import { graphql } from 'relay-runtime';

/** A user's newest posts, a connection the subscription below edits through its `__id`. */
export const timelineQuery = graphql`
  query liveOperationsTimelineQuery($username: String!, $first: Int!) {
    userByUsername(username: $username) {
      id
      posts(first: $first) @connection(key: "liveOperations_posts") {
        __id
        edges { cursor node { id content } }
        pageInfo { startCursor }
      }
    }
  }
`;

/** Each added post prepended to, and each deleted one removed from, the connections named. */
export const postsChangedSubscription = graphql`
  subscription liveOperationsPostsChangedSubscription($authorId: ID!, $after: String, $connections: [ID!]!) {
    postsChanged(authorId: $authorId, after: $after) {
      cursor
      addedEdge @prependEdge(connections: $connections) { cursor node { id content } }
      deletedPostId @deleteEdge(connections: $connections)
    }
  }
`;

/** A list's items in their hand-set order. */
export const listQuery = graphql`
  query liveOperationsListQuery($listId: ID!) {
    node(id: $listId) {
      ... on OrderedList {
        items(first: 100) @connection(key: "liveOperations_items") {
          __id
          edges { cursor node { id label } }
        }
      }
    }
  }
`;

/**
 * A list's changes: removals through `@deleteEdge`; additions and moves land after
 * `previousItemId`, which no edge directive expresses, so an `updater` places them.
 */
export const listItemsChangedSubscription = graphql`
  subscription liveOperationsListItemsChangedSubscription($listId: ID!, $after: String, $connections: [ID!]!) {
    listItemsChanged(listId: $listId, after: $after) {
      cursor
      kind
      edge { cursor node { id label } }
      previousItemId
      removedItemId @deleteEdge(connections: $connections)
    }
  }
`;
