/**
 * @generated SignedSource<<db95e79f4fc0ca3a26e59780d34641c9>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import { ConcreteRequest } from 'relay-runtime';
export type LiveTimelinePostsChangedSubscription$variables = {
  after?: string | null | undefined;
  authorId: string;
  connections: ReadonlyArray<string>;
};
export type LiveTimelinePostsChangedSubscription$data = {
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
export type LiveTimelinePostsChangedSubscription = {
  response: LiveTimelinePostsChangedSubscription$data;
  variables: LiveTimelinePostsChangedSubscription$variables;
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
    "name": "LiveTimelinePostsChangedSubscription",
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
    "name": "LiveTimelinePostsChangedSubscription",
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
    "cacheID": "a6639b35afdf372ffbd584b1401dfbc3",
    "id": null,
    "metadata": {},
    "name": "LiveTimelinePostsChangedSubscription",
    "operationKind": "subscription",
    "text": "subscription LiveTimelinePostsChangedSubscription(\n  $authorId: ID!\n  $after: String\n) {\n  postsChanged(authorId: $authorId, after: $after) {\n    cursor\n    addedEdge {\n      cursor\n      node {\n        id\n        content\n      }\n    }\n    deletedPostId\n  }\n}\n"
  }
};
})();

(node as any).hash = "ac66cf4d326bf25abc48df046a957233";

export default node;
