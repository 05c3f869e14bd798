/**
 * The Relay operations of test/clients/relay-live.test.ts, for relay-compiler only: it
 * compiles them into `__generated__/` (committed; the test checks they are current with
 * `relay-compiler --validate`). Nothing imports this file: `graphql` tags do not run.
 */
import { graphql } from 'relay-runtime';

export const query = graphql`
  query LiveTimelineQuery($username: String!) {
    userByUsername(username: $username) {
      id
      posts(first: 3) @connection(key: "LiveTimeline_posts") {
        __id
        edges {
          cursor
          node {
            id
            content
          }
        }
      }
    }
  }
`;

export const subscription = graphql`
  subscription LiveTimelinePostsChangedSubscription($authorId: ID!, $after: String, $connections: [ID!]!) {
    postsChanged(authorId: $authorId, after: $after) {
      cursor
      addedEdge @prependEdge(connections: $connections) {
        cursor
        node {
          id
          content
        }
      }
      deletedPostId @deleteEdge(connections: $connections)
    }
  }
`;
