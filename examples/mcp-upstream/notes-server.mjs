#!/usr/bin/env node
// A small MCP server (stdio, official SDK) standing in for any upstream server you would list in
// codemode.json — GitHub, a database, a ticket tracker. It serves a fixed set of notes.
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const NOTES = [
  {
    id: "n1",
    title: "Sandbox limits",
    tags: ["runtime", "limits"],
    body: "Every run has a deadline, a memory cap and a tool call budget. Exceeding one ends the run with a kind the host can act on.",
  },
  { id: "n2", title: "Result views", tags: ["tools"], body: "Tools with views return a compact record by default and the full record on request. Compact is always a subset of full." },
  { id: "n3", title: "Upstream servers", tags: ["mcp", "tools"], body: "Servers listed in codemode.json are started as clients and their tools appear under their server name." },
  { id: "n4", title: "Subagents", tags: ["tasks", "runtime"], body: "Programs can spawn background subagents, poll them and read their reports with host measured usage." },
];

const noteSummary = { type: "object", properties: { id: { type: "string" }, title: { type: "string" }, tags: { type: "array", items: { type: "string" } } }, required: ["id", "title", "tags"] };

const server = new Server({ name: "notes", version: "1.0.0" }, { capabilities: { tools: {} } });

server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [
    {
      name: "search_notes",
      description: "Find notes by tag (exact) or by a word in the title.",
      inputSchema: { type: "object", properties: { tag: { type: "string" }, word: { type: "string" } } },
      outputSchema: { type: "object", properties: { notes: { type: "array", items: noteSummary }, count: { type: "integer" } }, required: ["notes", "count"] },
    },
    {
      name: "get_note",
      description: "One note with its body.",
      inputSchema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
      outputSchema: { type: "object", properties: { ...noteSummary.properties, body: { type: "string" } }, required: ["id", "title", "tags", "body"] },
    },
    {
      name: "server_info",
      description: "A line about this server (plain text, no output schema).",
      inputSchema: { type: "object", properties: {} },
    },
  ],
}));

server.setRequestHandler(CallToolRequestSchema, async ({ params }) => {
  const args = params.arguments ?? {};
  if (params.name === "search_notes") {
    const word = typeof args.word === "string" ? args.word.toLowerCase() : undefined;
    const notes = NOTES.filter((n) => (args.tag === undefined || n.tags.includes(args.tag)) && (word === undefined || n.title.toLowerCase().includes(word))).map(({ id, title, tags }) => ({
      id,
      title,
      tags,
    }));
    return { content: [{ type: "text", text: notes.map((n) => `${n.id} ${n.title}`).join("\n") || "no notes" }], structuredContent: { notes, count: notes.length } };
  }
  if (params.name === "get_note") {
    const note = NOTES.find((n) => n.id === args.id);
    if (!note) return { content: [{ type: "text", text: `no note "${args.id}"; ids are ${NOTES.map((n) => n.id).join(", ")}` }], isError: true };
    return { content: [{ type: "text", text: `${note.title}\n\n${note.body}` }], structuredContent: note };
  }
  if (params.name === "server_info") return { content: [{ type: "text", text: `notes server: ${NOTES.length} notes` }] };
  return { content: [{ type: "text", text: `unknown tool ${params.name}` }], isError: true };
});

await server.connect(new StdioServerTransport());
