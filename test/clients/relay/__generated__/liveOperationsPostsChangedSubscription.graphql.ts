/**
 * @generated SignedSource<<bf192cd673aa031fc47349d5ae8cc680>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import type { ConcreteRequest } from 'relay-runtime';
export type liveOperationsPostsChangedSubscription$variables = {
  after?: string | null | undefined;
  authorId: string;
  connections: ReadonlyArray<string>;
};
export type liveOperationsPostsChangedSubscription$data = {
  readonly postsChanged: {
    readonly addedEdge: {
      readonly cursor: string;
      readonly node: {
        readonly content: string;
        readonly id: string;
      };
    } | null | undefined;
    readonly cursor: string;
    readonly deletedPostId: string | null | undefined;
  };
};
export type liveOperationsPostsChangedSubscription = {
  response: liveOperationsPostsChangedSubscription$data;
  variables: liveOperationsPostsChangedSubscription$variables;
};

const node: ConcreteRequest = (function(){
var v0 = {
  "defaultValue": null,
  "kind": "LocalArgument",
  "name": "after"
},
v1 = {
  "defaultValue": null,
  "kind": "LocalArgument",
  "name": "authorId"
},
v2 = {
  "defaultValue": null,
  "kind": "LocalArgument",
  "name": "connections"
},
v3 = [
  {
    "kind": "Variable",
    "name": "after",
    "variableName": "after"
  },
  {
    "kind": "Variable",
    "name": "authorId",
    "variableName": "authorId"
  }
],
v4 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "cursor",
  "storageKey": null
},
v5 = {
  "alias": null,
  "args": null,
  "concreteType": "PostEdge",
  "kind": "LinkedField",
  "name": "addedEdge",
  "plural": false,
  "selections": [
    (v4/*:: as any*/),
    {
      "alias": null,
      "args": null,
      "concreteType": "Post",
      "kind": "LinkedField",
      "name": "node",
      "plural": false,
      "selections": [
        {
          "alias": null,
          "args": null,
          "kind": "ScalarField",
          "name": "id",
          "storageKey": null
        },
        {
          "alias": null,
          "args": null,
          "kind": "ScalarField",
          "name": "content",
          "storageKey": null
        }
      ],
      "storageKey": null
    }
  ],
  "storageKey": null
},
v6 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "deletedPostId",
  "storageKey": null
},
v7 = [
  {
    "kind": "Variable",
    "name": "connections",
    "variableName": "connections"
  }
];
return {
  "fragment": {
    "argumentDefinitions": [
      (v0/*:: as any*/),
      (v1/*:: as any*/),
      (v2/*:: as any*/)
    ],
    "kind": "Fragment",
    "metadata": null,
    "name": "liveOperationsPostsChangedSubscription",
    "selections": [
      {
        "alias": null,
        "args": (v3/*:: as any*/),
        "concreteType": "PostsChange",
        "kind": "LinkedField",
        "name": "postsChanged",
        "plural": false,
        "selections": [
          (v4/*:: as any*/),
          (v5/*:: as any*/),
          (v6/*:: as any*/)
        ],
        "storageKey": null
      }
    ],
    "type": "Subscription",
    "abstractKey": null
  },
  "kind": "Request",
  "operation": {
    "argumentDefinitions": [
      (v1/*:: as any*/),
      (v0/*:: as any*/),
      (v2/*:: as any*/)
    ],
    "kind": "Operation",
    "name": "liveOperationsPostsChangedSubscription",
    "selections": [
      {
        "alias": null,
        "args": (v3/*:: as any*/),
        "concreteType": "PostsChange",
        "kind": "LinkedField",
        "name": "postsChanged",
        "plural": false,
        "selections": [
          (v4/*:: as any*/),
          (v5/*:: as any*/),
          {
            "alias": null,
            "args": null,
            "filters": null,
            "handle": "prependEdge",
            "key": "",
            "kind": "LinkedHandle",
            "name": "addedEdge",
            "handleArgs": (v7/*:: as any*/)
          },
          (v6/*:: as any*/),
          {
            "alias": null,
            "args": null,
            "filters": null,
            "handle": "deleteEdge",
            "key": "",
            "kind": "ScalarHandle",
            "name": "deletedPostId",
            "handleArgs": (v7/*:: as any*/)
          }
        ],
        "storageKey": null
      }
    ]
  },
  "params": {
    "cacheID": "038a08e5976deb4777a0fdc63b51cbae",
    "id": null,
    "metadata": {},
    "name": "liveOperationsPostsChangedSubscription",
    "operationKind": "subscription",
    "text": "subscription liveOperationsPostsChangedSubscription(\n  $authorId: ID!\n  $after: String\n) {\n  postsChanged(authorId: $authorId, after: $after) {\n    cursor\n    addedEdge {\n      cursor\n      node {\n        id\n        content\n      }\n    }\n    deletedPostId\n  }\n}\n"
  }
};
})();

(node as any).hash = "9429363aceafbebe5bc1b1d208e9e956";

export default node;
