// Use an upstream MCP server's tools from a program: the notes server from ./codemode.json is
// reached as tools.notes.*. Tools with an outputSchema resolve to structured records, so the
// program filters and joins them here, and only the summary below reaches the model.
//
//   cd examples/mcp-upstream && node ../../bin/codemode.js run program.js
text(await tools.notes.server_info({}));

const { notes } = await tools.notes.search_notes({ tag: "runtime" });
// Independent calls run concurrently.
const full = await Promise.all(notes.map((n) => tools.notes.get_note({ id: n.id })));
for (const note of full) {
  const words = note.body.split(/\s+/).length;
  text(`- ${note.title} [${note.tags.join(", ")}]: ${words} words`);
}

// A failed upstream call rejects like any tool failure.
try {
  await tools.notes.get_note({ id: "n99" });
} catch (error) {
  text(`${error.code}: ${error.message}`);
}
