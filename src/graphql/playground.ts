/**
 * The playground: GraphiQL served entirely by this server (no CDN), so it works with no
 * internet access. `GET /graphql` from a browser gets the page; its scripts and styles
 * come from the installed `graphiql`, `react` and `react-dom` packages.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

/** The files the page loads, by URL path. */
const ASSETS: Record<string, { pkg: string; file: string; type: string }> = {
  '/playground/react.production.min.js': { pkg: 'react', file: 'umd/react.production.min.js', type: 'text/javascript' },
  '/playground/react-dom.production.min.js': { pkg: 'react-dom', file: 'umd/react-dom.production.min.js', type: 'text/javascript' },
  '/playground/graphiql.min.js': { pkg: 'graphiql', file: 'graphiql.min.js', type: 'text/javascript' },
  '/playground/graphiql.min.css': { pkg: 'graphiql', file: 'graphiql.min.css', type: 'text/css' },
};

const cache = new Map<string, Buffer>();

/** A playground asset (body and content type), or null for an unknown path. */
export function playgroundAsset(path: string): { body: Buffer; type: string } | null {
  const asset = ASSETS[path];
  if (!asset) return null;
  let body = cache.get(path);
  if (!body) {
    // Package `exports` maps hide the UMD files from require.resolve: go by the package's folder.
    body = readFileSync(join(dirname(require.resolve(`${asset.pkg}/package.json`)), asset.file));
    cache.set(path, body);
  }
  return { body, type: `${asset.type}; charset=utf-8` };
}

/** Example operations the playground opens with: one per connection, and the mutations. */
export const EXAMPLE_TABS: ReadonlyArray<{ query: string }> = [
  {
    query: `# Welcome! Every connection pages with first/after (forward) or last/before (backward).
# Mutations and admin queries need a token: run \`npm run token -- alice\` (or -- root --admin)
# and add it in the Headers pane below: { "Authorization": "Bearer <token>" }

# A user's timeline, newest first (run it, then page on with "after": endCursor).
query Timeline($after: String) {
  userByUsername(username: "alice") {
    displayName
    posts(first: 5, after: $after) {
      edges { cursor node { id content createdAt author { username } } }
      pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    }
  }
}`,
  },
  {
    query: `# Suspended users, newest first, across time buckets (admin token required).
query SuspendedUsers($after: String) {
  suspendedUsers(first: 10, after: $after) {
    edges { cursor node { reason suspendedAt user { username } } }
    pageInfo { hasNextPage hasPreviousPage endCursor }
  }
}`,
  },
  {
    query: `# Who accepted a meeting: paste its id (the demo meeting's is in the start-up log,
# or create one with createMeeting).
query MeetingAcceptances {
  node(id: "PASTE-A-MEETING-ID") {
    ... on Meeting {
      title
      acceptanceCount
      acceptedBy(first: 10) { edges { node { username } } pageInfo { hasNextPage endCursor } }
    }
  }
}`,
  },
  {
    query: `# An ordered list's items in their hand-set order: paste its id (the demo list's is
# in the start-up log, or create one with createList).
query ListItems {
  node(id: "PASTE-AN-ORDEREDLIST-ID") {
    ... on OrderedList {
      title
      items(first: 20) { edges { cursor node { id label } } pageInfo { hasNextPage endCursor } }
    }
  }
}`,
  },
  {
    query: `# The user directory: by location (exact, case-insensitive) and by last-name prefix.
query Directory {
  usersByLocation(location: "Paris", first: 10) {
    edges { node { username location } }
    pageInfo { hasNextPage endCursor }
  }
  usersByLastName(prefix: "li", first: 10) {
    edges { node { username lastName } }
    pageInfo { hasNextPage endCursor }
  }
}`,
  },
  {
    query: `# Mutations take one input and return a payload (a token is required).
mutation Examples {
  createPost(input: { content: "Hello from the playground" }) { post { id createdAt } }
  createMeeting(input: { title: "Planning" }) { meeting { id } }
  createList(input: { title: "Groceries" }) { list { id } }
}`,
  },
];

/** The playground page. */
export function playgroundHtml(): string {
  const config = JSON.stringify({ tabs: EXAMPLE_TABS }).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GraphQL playground</title>
<link rel="stylesheet" href="/playground/graphiql.min.css">
<style>html, body, #graphiql { height: 100%; margin: 0; }</style>
</head>
<body>
<div id="graphiql">Loading the playground…</div>
<script src="/playground/react.production.min.js"></script>
<script src="/playground/react-dom.production.min.js"></script>
<script src="/playground/graphiql.min.js"></script>
<script>
  const config = ${config};
  const fetcher = GraphiQL.createFetcher({ url: window.location.origin + '/graphql' });
  ReactDOM.createRoot(document.getElementById('graphiql')).render(
    React.createElement(GraphiQL, {
      fetcher,
      defaultTabs: config.tabs,
      isHeadersEditorEnabled: true,
      shouldPersistHeaders: true,
      defaultEditorToolsVisibility: 'variables',
    }),
  );
</script>
</body>
</html>`;
}
