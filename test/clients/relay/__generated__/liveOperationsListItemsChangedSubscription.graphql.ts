/**
 * @generated SignedSource<<da77f468fa69049a64c74a0ec81fb6aa>>
 * @lightSyntaxTransform
 */

/* tslint:disable */
/* eslint-disable */
// @ts-nocheck

import type { ConcreteRequest } from 'relay-runtime';
export type ListItemChangeKind = "ADDED" | "MOVED" | "REMOVED" | "RENAMED" | "%future added value";
export type liveOperationsListItemsChangedSubscription$variables = {
  after?: string | null | undefined;
  connections: ReadonlyArray<string>;
  listId: string;
};
export type liveOperationsListItemsChangedSubscription$data = {
  readonly listItemsChanged: {
    readonly cursor: string;
    readonly edge: {
      readonly cursor: string;
      readonly node: {
        readonly id: string;
        readonly label: string;
      };
    } | null | undefined;
    readonly kind: ListItemChangeKind;
    readonly previousItemId: string | null | undefined;
    readonly removedItemId: string | null | undefined;
  };
};
export type liveOperationsListItemsChangedSubscription = {
  response: liveOperationsListItemsChangedSubscription$data;
  variables: liveOperationsListItemsChangedSubscription$variables;
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
  "name": "connections"
},
v2 = {
  "defaultValue": null,
  "kind": "LocalArgument",
  "name": "listId"
},
v3 = [
  {
    "kind": "Variable",
    "name": "after",
    "variableName": "after"
  },
  {
    "kind": "Variable",
    "name": "listId",
    "variableName": "listId"
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
  "kind": "ScalarField",
  "name": "kind",
  "storageKey": null
},
v6 = {
  "alias": null,
  "args": null,
  "concreteType": "ListItemEdge",
  "kind": "LinkedField",
  "name": "edge",
  "plural": false,
  "selections": [
    (v4/*:: as any*/),
    {
      "alias": null,
      "args": null,
      "concreteType": "ListItem",
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
          "name": "label",
          "storageKey": null
        }
      ],
      "storageKey": null
    }
  ],
  "storageKey": null
},
v7 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "previousItemId",
  "storageKey": null
},
v8 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "removedItemId",
  "storageKey": null
};
return {
  "fragment": {
    "argumentDefinitions": [
      (v0/*:: as any*/),
      (v1/*:: as any*/),
      (v2/*:: as any*/)
    ],
    "kind": "Fragment",
    "metadata": null,
    "name": "liveOperationsListItemsChangedSubscription",
    "selections": [
      {
        "alias": null,
        "args": (v3/*:: as any*/),
        "concreteType": "ListItemsChange",
        "kind": "LinkedField",
        "name": "listItemsChanged",
        "plural": false,
        "selections": [
          (v4/*:: as any*/),
          (v5/*:: as any*/),
          (v6/*:: as any*/),
          (v7/*:: as any*/),
          (v8/*:: as any*/)
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
      (v2/*:: as any*/),
      (v0/*:: as any*/),
      (v1/*:: as any*/)
    ],
    "kind": "Operation",
    "name": "liveOperationsListItemsChangedSubscription",
    "selections": [
      {
        "alias": null,
        "args": (v3/*:: as any*/),
        "concreteType": "ListItemsChange",
        "kind": "LinkedField",
        "name": "listItemsChanged",
        "plural": false,
        "selections": [
          (v4/*:: as any*/),
          (v5/*:: as any*/),
          (v6/*:: as any*/),
          (v7/*:: as any*/),
          (v8/*:: as any*/),
          {
            "alias": null,
            "args": null,
            "filters": null,
            "handle": "deleteEdge",
            "key": "",
            "kind": "ScalarHandle",
            "name": "removedItemId",
            "handleArgs": [
              {
                "kind": "Variable",
                "name": "connections",
                "variableName": "connections"
              }
            ]
          }
        ],
        "storageKey": null
      }
    ]
  },
  "params": {
    "cacheID": "f345f93b493d3e0c4d9f993b71fe2a6c",
    "id": null,
    "metadata": {},
    "name": "liveOperationsListItemsChangedSubscription",
    "operationKind": "subscription",
    "text": "subscription liveOperationsListItemsChangedSubscription(\n  $listId: ID!\n  $after: String\n) {\n  listItemsChanged(listId: $listId, after: $after) {\n    cursor\n    kind\n    edge {\n      cursor\n      node {\n        id\n        label\n      }\n    }\n    previousItemId\n    removedItemId\n  }\n}\n"
  }
};
})();

(node as any).hash = "fd27ab41e8f8eaedbcd233bd833eff4f";

export default node;
