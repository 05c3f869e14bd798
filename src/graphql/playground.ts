/**
 * The playground: GraphiQL served entirely by this server (no CDN), so it works with no
 * internet access. `GET /graphql` from a browser gets the page; its scripts and styles
 * come from the installed `graphiql`, `react` and `react-dom` packages, and the
 * WebSocket client that runs subscriptions from `graphql-ws`'s own browser build (its
 * `umd/` folder, the global `graphqlWs`), which the server depends on anyway.
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
  '/playground/graphql-ws.min.js': { pkg: 'graphql-ws', file: 'umd/graphql-ws.min.js', type: 'text/javascript' },
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

/** The demo data set's ids (global IDs), for the example tabs. */
export interface DemoIds {
  readonly meeting: string;
  readonly list: string;
  /** alice's: the subscription tab follows her timeline. */
  readonly alice: string;
}

/**
 * Example operations the playground opens with: one per connection, the mutations, a
 * subscription, and numbered pages (`offset`). Lines stay short so every tab reads whole in a 1024 px wide window.
 * With the demo data set's ids, the meeting, list and subscription tabs run as they are.
 */
export function exampleTabs(ids: DemoIds | null): ReadonlyArray<{ query: string }> {
  const meeting = ids?.meeting ?? 'PASTE-A-MEETING-ID';
  const list = ids?.list ?? 'PASTE-AN-ORDEREDLIST-ID';
  const alice = ids?.alice ?? 'PASTE-A-USER-ID';
  const whereFrom = (what: string, mutation: string) =>
    ids
      ? `# (the demo ${what}; any ${what} id works)`
      : `# Paste its id below: ${mutation} returns one.`;
  return [
    {
      query: `# Welcome! Connections page forward with
# first/after and backward with last/before.
#
# Mutations and admin queries need a token:
#   npm run -s token -- alice
#   npm run -s token -- root --admin
# Put it in the Headers pane below, once; it is
# shared by every tab:
#   { "Authorization": "Bearer <token>" }

# alice's timeline, newest first. Page on with
# "after": the endCursor of the result.
query Timeline($after: String) {
  userByUsername(username: "alice") {
    displayName
    posts(first: 5, after: $after) {
      totalCount
      edges {
        cursor
        node {
          id
          content
          createdAt
          author { username }
        }
      }
      pageInfo {
        hasNextPage
        hasPreviousPage
        startCursor
        endCursor
      }
    }
  }
}`,
    },
    {
      query: `# Suspended users, newest first, across time
# buckets (needs an admin token).
query SuspendedUsers($after: String) {
  suspendedUsers(first: 10, after: $after) {
    totalCount
    edges {
      cursor
      node {
        reason
        suspendedAt
        user { username }
      }
    }
    pageInfo { hasNextPage endCursor }
  }
}`,
    },
    {
      query: `# Who accepted a meeting, counted once each.
${whereFrom('meeting', 'createMeeting')}
query MeetingAcceptances {
  node(id: "${meeting}") {
    ... on Meeting {
      title
      acceptanceCount
      acceptedBy(first: 10) {
        totalCount
        edges { node { username } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
}`,
    },
    {
      query: `# An ordered list's items, in the order
# people set by hand.
${whereFrom('list', 'createList')}
query ListItems {
  node(id: "${list}") {
    ... on OrderedList {
      title
      owner { username }
      items(first: 20) {
        totalCount
        edges { cursor node { id label } }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
}`,
    },
    {
      query: `# The user directory (needs a token): by
# location (exact, any case), by last-name
# prefix, and by name: each term the start of
# a part of the first or last name.
query Directory {
  usersByName(query: "lis da", first: 10) {
    edges { node { username firstName lastName } }
    pageInfo { hasNextPage endCursor }
  }
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
      query: `# Mutations take one input and return a
# payload (needs a token).
mutation Examples {
  createPost(input: { content: "Hello!" }) {
    post { id createdAt }
  }
  createMeeting(input: { title: "Planning" }) {
    meeting { id }
  }
  createList(input: { title: "Groceries" }) {
    list { id }
  }
}`,
    },
    {
      query: `# alice's lists (the ones she owns) and her
# meetings (created or accepted), newest first.
query UserListsAndMeetings {
  userByUsername(username: "alice") {
    lists(first: 5) {
      edges { node { id title owner { username } } }
      pageInfo { hasNextPage endCursor }
    }
    meetings(first: 5) {
      edges { node { id title acceptanceCount } }
      pageInfo { hasNextPage endCursor }
    }
  }
}`,
    },
    {
      query: `# Live: alice's timeline as it changes, over
# this server's WebSocket. Run it, then create
# a post as alice in another tab (the mutations
# tab, with her token): it shows up here.
${ids ? "# (alice's id; any user's id works)" : '# Paste a user\'s id below: userByUsername\n# gives one.'}
# The Headers pane's token goes with it (the
# suspensionsChanged feed needs an admin's).
# Resume later, missing nothing, with "after":
# the last change's cursor.
subscription AliceTimeline($after: String) {
  postsChanged(
    authorId: "${alice}"
    after: $after
  ) {
    cursor
    addedEdge {
      cursor
      node { id content createdAt }
    }
    deletedPostId
  }
}`,
    },
    {
      query: `# Numbered pages: jump to page N of a counted
# connection with offset. 5 a page: page 3 is
# offset 10; totalCount / 5 is the number of
# pages. last + offset counts from the end.
# Every edge keeps its cursor: page on from
# here with "after" as usual. Offsets count
# what settled a few seconds ago.
query NumberedPage($offset: Int = 10) {
  userByUsername(username: "alice") {
    posts(first: 5, offset: $offset) {
      totalCount
      edges { cursor node { content } }
      pageInfo {
        hasNextPage
        hasPreviousPage
        endCursor
      }
    }
  }
}`,
    },
  ];
}

/** The example tabs without demo ids (placeholders say how to get one). */
export const EXAMPLE_TABS = exampleTabs(null);

/**
 * The playground page. One set of headers serves every tab: GraphiQL keeps headers per
 * tab, so the page stores the last edited headers and clears the tabs' own copies,
 * which makes every tab (new ones too) show and send the shared set. Saved tabs are
 * kept per demo data set, so a new data set's ids reach the example tabs.
 */
export function playgroundHtml(ids: DemoIds | null = null): string {
  const config = JSON.stringify({ tabs: exampleTabs(ids), namespace: ids ? `${ids.meeting}:${ids.list}:${ids.alice}` : 'no-demo' }).replace(
    /</g,
    '\\u003c',
  );
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
<script src="/playground/graphql-ws.min.js"></script>
<script>
  const config = ${config};
  const url = window.location.origin + '/graphql';
  // Subscriptions run over this server's WebSocket (graphql-ws). A socket sends headers
  // once, in connection_init, so each set of headers (the token) gets a client of its
  // own; a client holds a socket only while it has subscriptions (lazy), so one left
  // behind closes when its last subscription ends. No silent reconnect: a closed socket
  // shows in the results, and running again with "after" resumes without a gap.
  let current = null;
  const sendWith = (headers) => {
    const key = JSON.stringify(headers || {});
    if (!current || current.key !== key) {
      const wsClient = graphqlWs.createClient({ url: url.replace(/^http/, 'ws'), connectionParams: headers || {}, retryAttempts: 0 });
      current = { key, send: GraphiQL.createFetcher({ url, wsClient }) };
    }
    return current.send;
  };
  // Right after a tab switch GraphiQL may still send the previous tab's operation name,
  // and the document it parsed last (which tells the fetcher a subscription from the
  // rest): parse what is sent, with the graphql-js GraphiQL bundles, and send a name
  // only when the document has that operation (or its only one). A document that does
  // not parse goes to the server as it is, which says why.
  const fetcher = (params, options) => {
    let documentAST;
    try {
      documentAST = GraphiQL.GraphQL.parse(params.query);
    } catch {
      return sendWith(options && options.headers)(params, options);
    }
    const names = documentAST.definitions.filter((d) => d.kind === 'OperationDefinition').map((d) => d.name && d.name.value);
    const operationName = names.includes(params.operationName) ? params.operationName : names.length <= 1 ? names[0] || undefined : params.operationName;
    return sendWith(options && options.headers)({ ...params, operationName }, { ...options, documentAST });
  };
  // GraphiQL's saved state (tabs, headers), kept apart for each demo data set.
  const prefix = 'playground:' + config.namespace + ':';
  const storage = {
    getItem: (key) => localStorage.getItem(prefix + key),
    setItem: (key, value) => localStorage.setItem(prefix + key, value),
    removeItem: (key) => localStorage.removeItem(prefix + key),
    clear: () => Object.keys(localStorage).filter((k) => k.startsWith(prefix)).forEach((k) => localStorage.removeItem(k)),
    get length() { return Object.keys(localStorage).filter((k) => k.startsWith(prefix)).length; },
  };
  // The editors get more of the width than the results (which wrap), so the examples
  // read whole at 1024 px; dragging the divider still changes it.
  if (storage.getItem('graphiql:editorFlex') === null) storage.setItem('graphiql:editorFlex', '1.6');
  const SHARED = 'playground:headers';
  function Playground() {
    const [headers, setHeaders] = React.useState(() => localStorage.getItem(SHARED) || '');
    return React.createElement(GraphiQL, {
      fetcher,
      storage,
      defaultTabs: config.tabs,
      // A tab without headers of its own shows and sends these.
      defaultHeaders: headers,
      onEditHeaders: (value) => {
        localStorage.setItem(SHARED, value);
        setHeaders(value);
      },
      // After every tab change or edit, no tab keeps a copy of its own.
      onTabChange: (state) => state.tabs.forEach((tab) => { tab.headers = null; }),
      isHeadersEditorEnabled: true,
      shouldPersistHeaders: true,
      defaultEditorToolsVisibility: 'headers',
    });
  }
  const root = document.getElementById('graphiql');
  ReactDOM.createRoot(root).render(React.createElement(Playground));
  // Long lines (a global ID is 60 characters) wrap instead of running off the pane.
  new MutationObserver(() => {
    for (const el of root.querySelectorAll('.graphiql-editor .CodeMirror')) {
      if (el.CodeMirror && !el.CodeMirror.getOption('lineWrapping')) el.CodeMirror.setOption('lineWrapping', true);
    }
  }).observe(root, { childList: true, subtree: true });
</script>
</body>
</html>`;
}
