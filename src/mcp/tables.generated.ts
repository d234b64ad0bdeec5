/**
 * GENERATED FILE: do not edit. Regenerate with `npx tsx scripts/gen-mcp-tables.ts`.
 *
 * Per-revision MCP table (CallToolResult members, content block types with
 * their members, JSON types and required fields, embedded resource variants,
 * annotations, icons) derived from the MCP JSON Schemas:
 *   test/vectors/mcp-schemas/2024-11-05/schema.json  sha256:61cea2392d4f284092d09bc84b9ac488c0d5618ac2b38a56942fc5b99fd960ce
 *   test/vectors/mcp-schemas/2025-03-26/schema.json  sha256:e720669548c8100a4282c49e580efd6ddf7f28899ea786fc8db251dbdb356131
 *   test/vectors/mcp-schemas/2025-06-18/schema.json  sha256:af845e7e5b9d27107d1690f0936022546177a1403e63ffb11470135b296a2e01
 *   test/vectors/mcp-schemas/2025-11-25/schema.json  sha256:268a5f82ba70fd7e4b6dc4aa1e64f116f74b4d0edcb69dc046829c79dd4e97e7
 *   test/vectors/mcp-schemas/2026-07-28/schema.json  sha256:ef70b61f99b6d2e5e3b46863822eab08dff6a45bedc7a08914e0e5b133f40203
 */
import type { Revision } from './revisions.js';
import type { RevisionTable } from './schema-table.js';

/** Schema-derived table per protocol revision. */
export const MCP_TABLES: Readonly<Record<Revision, RevisionTable>> = {
  "2024-11-05": {
    "callToolResult": {
      "name": "CallToolResult",
      "members": {
        "_meta": "object",
        "content": "array",
        "isError": "boolean"
      },
      "required": [
        "content"
      ]
    },
    "blocks": {
      "text": {
        "name": "TextContent",
        "members": {
          "annotations": "object",
          "text": "string",
          "type": "string"
        },
        "required": [
          "text",
          "type"
        ]
      },
      "image": {
        "name": "ImageContent",
        "members": {
          "annotations": "object",
          "data": "string",
          "mimeType": "string",
          "type": "string"
        },
        "required": [
          "data",
          "mimeType",
          "type"
        ]
      },
      "resource": {
        "name": "EmbeddedResource",
        "members": {
          "annotations": "object",
          "resource": "object",
          "type": "string"
        },
        "required": [
          "resource",
          "type"
        ]
      }
    },
    "resourceContents": [
      {
        "name": "TextResourceContents",
        "members": {
          "mimeType": "string",
          "text": "string",
          "uri": "string"
        },
        "required": [
          "text",
          "uri"
        ],
        "discriminator": "text"
      },
      {
        "name": "BlobResourceContents",
        "members": {
          "blob": "string",
          "mimeType": "string",
          "uri": "string"
        },
        "required": [
          "blob",
          "uri"
        ],
        "discriminator": "blob"
      }
    ],
    "annotations": {
      "name": "Annotations",
      "members": {
        "audience": "array",
        "priority": "number"
      },
      "required": []
    },
    "audience": [
      "assistant",
      "user"
    ],
    "priority": {
      "minimum": 0,
      "maximum": 1
    },
    "icon": null
  },
  "2025-03-26": {
    "callToolResult": {
      "name": "CallToolResult",
      "members": {
        "_meta": "object",
        "content": "array",
        "isError": "boolean"
      },
      "required": [
        "content"
      ]
    },
    "blocks": {
      "text": {
        "name": "TextContent",
        "members": {
          "annotations": "object",
          "text": "string",
          "type": "string"
        },
        "required": [
          "text",
          "type"
        ]
      },
      "image": {
        "name": "ImageContent",
        "members": {
          "annotations": "object",
          "data": "string",
          "mimeType": "string",
          "type": "string"
        },
        "required": [
          "data",
          "mimeType",
          "type"
        ]
      },
      "audio": {
        "name": "AudioContent",
        "members": {
          "annotations": "object",
          "data": "string",
          "mimeType": "string",
          "type": "string"
        },
        "required": [
          "data",
          "mimeType",
          "type"
        ]
      },
      "resource": {
        "name": "EmbeddedResource",
        "members": {
          "annotations": "object",
          "resource": "object",
          "type": "string"
        },
        "required": [
          "resource",
          "type"
        ]
      }
    },
    "resourceContents": [
      {
        "name": "TextResourceContents",
        "members": {
          "mimeType": "string",
          "text": "string",
          "uri": "string"
        },
        "required": [
          "text",
          "uri"
        ],
        "discriminator": "text"
      },
      {
        "name": "BlobResourceContents",
        "members": {
          "blob": "string",
          "mimeType": "string",
          "uri": "string"
        },
        "required": [
          "blob",
          "uri"
        ],
        "discriminator": "blob"
      }
    ],
    "annotations": {
      "name": "Annotations",
      "members": {
        "audience": "array",
        "priority": "number"
      },
      "required": []
    },
    "audience": [
      "assistant",
      "user"
    ],
    "priority": {
      "minimum": 0,
      "maximum": 1
    },
    "icon": null
  },
  "2025-06-18": {
    "callToolResult": {
      "name": "CallToolResult",
      "members": {
        "_meta": "object",
        "content": "array",
        "isError": "boolean",
        "structuredContent": "object"
      },
      "required": [
        "content"
      ]
    },
    "blocks": {
      "text": {
        "name": "TextContent",
        "members": {
          "_meta": "object",
          "annotations": "object",
          "text": "string",
          "type": "string"
        },
        "required": [
          "text",
          "type"
        ]
      },
      "image": {
        "name": "ImageContent",
        "members": {
          "_meta": "object",
          "annotations": "object",
          "data": "string",
          "mimeType": "string",
          "type": "string"
        },
        "required": [
          "data",
          "mimeType",
          "type"
        ]
      },
      "audio": {
        "name": "AudioContent",
        "members": {
          "_meta": "object",
          "annotations": "object",
          "data": "string",
          "mimeType": "string",
          "type": "string"
        },
        "required": [
          "data",
          "mimeType",
          "type"
        ]
      },
      "resource_link": {
        "name": "ResourceLink",
        "members": {
          "_meta": "object",
          "annotations": "object",
          "description": "string",
          "mimeType": "string",
          "name": "string",
          "size": "integer",
          "title": "string",
          "type": "string",
          "uri": "string"
        },
        "required": [
          "name",
          "type",
          "uri"
        ]
      },
      "resource": {
        "name": "EmbeddedResource",
        "members": {
          "_meta": "object",
          "annotations": "object",
          "resource": "object",
          "type": "string"
        },
        "required": [
          "resource",
          "type"
        ]
      }
    },
    "resourceContents": [
      {
        "name": "TextResourceContents",
        "members": {
          "_meta": "object",
          "mimeType": "string",
          "text": "string",
          "uri": "string"
        },
        "required": [
          "text",
          "uri"
        ],
        "discriminator": "text"
      },
      {
        "name": "BlobResourceContents",
        "members": {
          "_meta": "object",
          "blob": "string",
          "mimeType": "string",
          "uri": "string"
        },
        "required": [
          "blob",
          "uri"
        ],
        "discriminator": "blob"
      }
    ],
    "annotations": {
      "name": "Annotations",
      "members": {
        "audience": "array",
        "lastModified": "string",
        "priority": "number"
      },
      "required": []
    },
    "audience": [
      "assistant",
      "user"
    ],
    "priority": {
      "minimum": 0,
      "maximum": 1
    },
    "icon": null
  },
  "2025-11-25": {
    "callToolResult": {
      "name": "CallToolResult",
      "members": {
        "_meta": "object",
        "content": "array",
        "isError": "boolean",
        "structuredContent": "object"
      },
      "required": [
        "content"
      ]
    },
    "blocks": {
      "text": {
        "name": "TextContent",
        "members": {
          "_meta": "object",
          "annotations": "object",
          "text": "string",
          "type": "string"
        },
        "required": [
          "text",
          "type"
        ]
      },
      "image": {
        "name": "ImageContent",
        "members": {
          "_meta": "object",
          "annotations": "object",
          "data": "string",
          "mimeType": "string",
          "type": "string"
        },
        "required": [
          "data",
          "mimeType",
          "type"
        ]
      },
      "audio": {
        "name": "AudioContent",
        "members": {
          "_meta": "object",
          "annotations": "object",
          "data": "string",
          "mimeType": "string",
          "type": "string"
        },
        "required": [
          "data",
          "mimeType",
          "type"
        ]
      },
      "resource_link": {
        "name": "ResourceLink",
        "members": {
          "_meta": "object",
          "annotations": "object",
          "description": "string",
          "icons": "array",
          "mimeType": "string",
          "name": "string",
          "size": "integer",
          "title": "string",
          "type": "string",
          "uri": "string"
        },
        "required": [
          "name",
          "type",
          "uri"
        ]
      },
      "resource": {
        "name": "EmbeddedResource",
        "members": {
          "_meta": "object",
          "annotations": "object",
          "resource": "object",
          "type": "string"
        },
        "required": [
          "resource",
          "type"
        ]
      }
    },
    "resourceContents": [
      {
        "name": "TextResourceContents",
        "members": {
          "_meta": "object",
          "mimeType": "string",
          "text": "string",
          "uri": "string"
        },
        "required": [
          "text",
          "uri"
        ],
        "discriminator": "text"
      },
      {
        "name": "BlobResourceContents",
        "members": {
          "_meta": "object",
          "blob": "string",
          "mimeType": "string",
          "uri": "string"
        },
        "required": [
          "blob",
          "uri"
        ],
        "discriminator": "blob"
      }
    ],
    "annotations": {
      "name": "Annotations",
      "members": {
        "audience": "array",
        "lastModified": "string",
        "priority": "number"
      },
      "required": []
    },
    "audience": [
      "assistant",
      "user"
    ],
    "priority": {
      "minimum": 0,
      "maximum": 1
    },
    "icon": {
      "name": "Icon",
      "members": {
        "mimeType": "string",
        "sizes": "array",
        "src": "string",
        "theme": "string"
      },
      "required": [
        "src"
      ]
    }
  },
  "2026-07-28": {
    "callToolResult": {
      "name": "CallToolResult",
      "members": {
        "_meta": "object",
        "content": "array",
        "isError": "boolean",
        "resultType": "string",
        "structuredContent": "any"
      },
      "required": [
        "content",
        "resultType"
      ]
    },
    "blocks": {
      "text": {
        "name": "TextContent",
        "members": {
          "_meta": "object",
          "annotations": "object",
          "text": "string",
          "type": "string"
        },
        "required": [
          "text",
          "type"
        ]
      },
      "image": {
        "name": "ImageContent",
        "members": {
          "_meta": "object",
          "annotations": "object",
          "data": "string",
          "mimeType": "string",
          "type": "string"
        },
        "required": [
          "data",
          "mimeType",
          "type"
        ]
      },
      "audio": {
        "name": "AudioContent",
        "members": {
          "_meta": "object",
          "annotations": "object",
          "data": "string",
          "mimeType": "string",
          "type": "string"
        },
        "required": [
          "data",
          "mimeType",
          "type"
        ]
      },
      "resource_link": {
        "name": "ResourceLink",
        "members": {
          "_meta": "object",
          "annotations": "object",
          "description": "string",
          "icons": "array",
          "mimeType": "string",
          "name": "string",
          "size": "integer",
          "title": "string",
          "type": "string",
          "uri": "string"
        },
        "required": [
          "name",
          "type",
          "uri"
        ]
      },
      "resource": {
        "name": "EmbeddedResource",
        "members": {
          "_meta": "object",
          "annotations": "object",
          "resource": "object",
          "type": "string"
        },
        "required": [
          "resource",
          "type"
        ]
      }
    },
    "resourceContents": [
      {
        "name": "TextResourceContents",
        "members": {
          "_meta": "object",
          "mimeType": "string",
          "text": "string",
          "uri": "string"
        },
        "required": [
          "text",
          "uri"
        ],
        "discriminator": "text"
      },
      {
        "name": "BlobResourceContents",
        "members": {
          "_meta": "object",
          "blob": "string",
          "mimeType": "string",
          "uri": "string"
        },
        "required": [
          "blob",
          "uri"
        ],
        "discriminator": "blob"
      }
    ],
    "annotations": {
      "name": "Annotations",
      "members": {
        "audience": "array",
        "lastModified": "string",
        "priority": "number"
      },
      "required": []
    },
    "audience": [
      "assistant",
      "user"
    ],
    "priority": {
      "minimum": 0,
      "maximum": 1
    },
    "icon": {
      "name": "Icon",
      "members": {
        "mimeType": "string",
        "sizes": "array",
        "src": "string",
        "theme": "string"
      },
      "required": [
        "src"
      ]
    }
  }
};
