// The `tool_search` tool: finds tools by the words of their names, descriptions and argument
// names, best first, so a model facing a large catalog — whose prompt lists most tools by one line
// only — finds the tools it needs and gets their declarations on demand. Ranking is MiniSearch's
// BM25 over those fields (a name match weighs most), with prefix and typo-tolerant matching.
import type MiniSearch from "minisearch";
import { z } from "zod";
import { summaryLine } from "../text.js";
import { renderDeclarations } from "./declarations.js";
import { defineBuiltinTool, isTool, toolInternals, type Tool } from "./define.js";
import { describeValue, ToolError } from "./errors.js";
import { isPlainObject } from "./json.js";
import type { ToolContext } from "./types.js";

export const TOOL_SEARCH_TOOL = "tool_search";
const DEFAULT_LIMIT = 10;
const MAX_LIMIT = 50;
/** What a match's one line keeps of its description. */
const SUMMARY_CHARS = 120;

// Words that match nearly every description and say nothing about which tool is meant.
const STOP_WORDS = new Set(["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "i", "in", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "with"]);

/** Words of a name or a text: `getItem`, `get_item`, `get-item` and `get item` all give get, item. */
function words(text: string): string[] {
  return text
    .replace(/([\p{Ll}\d])(\p{Lu})/gu, "$1 $2")
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, "$1 $2")
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== "");
}

function term(word: string): string | null {
  const lower = word.toLowerCase();
  return STOP_WORDS.has(lower) ? null : lower;
}

interface Indexed {
  id: number;
  name: string;
  namespace: string;
  description: string;
  args: string;
}

/** The argument names of a tool's input schema, top level: what a query like "by sku" names. */
function argumentNames(tool: Tool): string {
  const properties = toolInternals(tool).inputJsonSchema.properties;
  return isPlainObject(properties) ? Object.keys(properties).join(" ") : "";
}

// Loaded at the first search: most processes never search, and bundled into the package's entry
// it was ~60 KB that every import parsed.
let searchLibrary: Promise<typeof MiniSearch> | undefined;
const loadSearchLibrary = (): Promise<typeof MiniSearch> => (searchLibrary ??= import("minisearch").then((module) => module.default));

class Catalog {
  private readonly index: MiniSearch<Indexed>;

  constructor(
    readonly tools: readonly Tool[],
    Search: typeof MiniSearch,
  ) {
    this.index = new Search<Indexed>({ fields: ["name", "namespace", "description", "args"], tokenize: words, processTerm: term });
    this.index.addAll(tools.map((tool, id) => ({ id, name: tool.name, namespace: tool.namespace ?? "", description: tool.description, args: argumentNames(tool) })));
  }

  search(query: string): Tool[] {
    const found = this.index.search(query, {
      boost: { name: 4, namespace: 2, description: 1, args: 1.5 },
      // "issue" finds "issues"; a typo of a long word still matches it.
      prefix: (t) => t.length >= 3,
      fuzzy: (t) => (t.length >= 5 ? 0.2 : false),
      combineWith: "OR",
    });
    // Equal scores keep the catalog's order, so the same query always ranks the same way.
    return found.sort((a, b) => b.score - a.score || (a.id as number) - (b.id as number)).map((hit) => this.tools[hit.id as number]!);
  }
}

/** The index of the last list seen: rebuilt only when the tools change. */
function cachedCatalog(): (tools: readonly Tool[]) => Promise<Catalog> {
  let last: Catalog | undefined;
  return async (tools) => {
    const Search = await loadSearchLibrary();
    if (!last || last.tools.length !== tools.length || last.tools.some((tool, i) => tool !== tools[i])) last = new Catalog([...tools], Search);
    return last;
  };
}

export interface ToolSearchOptions {
  /** Bytes of declarations one answer with `declarations: true` may carry (default 24,000). */
  declarationsBudget?: number;
}

/**
 * The `tool_search` tool over `list(ctx)` (read on every call, so tools added later are found,
 * with the call's context, so a caller that reaches fewer tools is shown only those):
 * matches with their path and one line, how many matched in all, and with `declarations: true`
 * the TypeScript declarations of the matches.
 */
export function toolSearchTool(list: (ctx: ToolContext) => readonly Tool[], options: ToolSearchOptions = {}): Tool {
  if (typeof list !== "function") throw new TypeError(`toolSearchTool: "list" must be a function returning the tools, received ${describeValue(list)}`);
  const budget = options.declarationsBudget ?? 24_000;
  if (!(Number.isInteger(budget) || budget === Infinity) || budget < 1)
    throw new TypeError(`toolSearchTool: "options.declarationsBudget" must be a positive integer (or Infinity), received ${String(budget)}`);
  const catalog = cachedCatalog();
  const match = z.object({
    id: z.string().describe('The tool id, for tool_info({ tool_id }), e.g. "github.create_issue"'),
    path: z.string().describe('How a program calls it, e.g. "tools.github.create_issue"'),
    description: z.string().describe("The first line of its description"),
  });
  const output = z.object({
    matches: z.array(match).describe("Best first"),
    count: z.number().int().describe("How many tools match in all (matches holds the best `limit`)"),
    declarations: z.string().optional().describe("With declarations: true, the TypeScript declarations of the matches"),
  });
  return defineBuiltinTool({
    name: TOOL_SEARCH_TOOL,
    title: "Search the tools",
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    description:
      "Find tools a program can call by words in their names, descriptions and argument names, best match first. Returns each match's id, its path (tools.<name>) and one line; declarations: true adds their TypeScript declarations (input and result types). tool_info({ tool_id }) gives one tool's JSON Schemas.",
    input: z.object({
      query: z.string().min(1).max(1000).describe('Words to look for, e.g. "create issue" or "read file lines"'),
      limit: z.number().int().min(1).max(MAX_LIMIT).optional().describe(`Most matches to return (default ${DEFAULT_LIMIT})`),
      declarations: z.boolean().optional().describe("Also return the TypeScript declarations of the matches"),
    }),
    output,
    execute: async ({ query, limit, declarations }, ctx) => {
      const tools = list(ctx);
      if (!Array.isArray(tools) || !tools.every(isTool)) throw new TypeError(`toolSearchTool: "list" must return an array of tools, received ${describeValue(tools)}`);
      const terms = words(query)
        .map(term)
        .filter((t) => t !== null);
      if (terms.length === 0) {
        throw new ToolError(
          "tool_invalid_input",
          `tool "tool_search" input "query" has no words to search for (received ${JSON.stringify(query.slice(0, 80))}); give words from a tool's name or purpose, e.g. "read file"`,
          { reason: "schema_invalid" },
        );
      }
      const found = (await catalog(tools)).search(query);
      const best = found.slice(0, limit ?? DEFAULT_LIMIT);
      const result: Out = {
        matches: best.map((tool) => ({ id: tool.id, path: `tools.${tool.path.join(".")}`, description: summaryLine(tool.description, SUMMARY_CHARS) })),
        count: found.length,
      };
      if (declarations && best.length > 0) result.declarations = renderDeclarations(best, { budgetBytes: budget });
      return { output: result, modelOutput: modelText(query, result, tools.length) };
    },
  });
}

function modelText(query: string, result: Out, total: number): string {
  const q = JSON.stringify(query);
  if (result.matches.length === 0) return `No tool matches ${q} (${total} tools). Try other words, or fewer: tool_search matches words of tool names, descriptions and argument names.`;
  const head = `${result.count > result.matches.length ? `The best ${result.matches.length} of ${result.count}` : result.count} tool${result.count === 1 ? "" : "s"} matching ${q} (of ${total}):`;
  const lines = result.matches.map((m) => `${m.path} — ${m.description}`);
  const how =
    result.declarations !== undefined
      ? `\n\n${result.declarations}`
      : `\nTheir TypeScript declarations: tool_search({ query: ${q}, declarations: true }); one tool's JSON Schemas: tool_info({ tool_id: ${JSON.stringify(result.matches[0]!.id)} }).`;
  return `${head}\n${lines.join("\n")}${how}`;
}

type Out = { matches: { id: string; path: string; description: string }[]; count: number; declarations?: string };
