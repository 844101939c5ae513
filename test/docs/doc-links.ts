// What test/docs/doc-integrity.test.ts checks, as functions it can also try on broken fixtures:
// the relative links of Markdown pages (marked's lexer, so links in code are not links), the
// anchors GitHub gives their headings (github-slugger), and the `docs/…` references in source
// comments (TypeScript's parser, so a string or a regex literal is never taken for a comment).
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, extname, relative, resolve } from "node:path";
import GithubSlugger from "github-slugger";
import { marked, type Token, type Tokens } from "marked";
import ts from "typescript";

export interface Reference {
  /** The file the reference is in, and its line (1-based). */
  file: string;
  line: number;
  /** As written: `guest-api.md#the-run-result`, `../SECURITY.md`, `docs/limits.md`. */
  target: string;
}

function lineOf(text: string, index: number): number {
  return index < 0 ? 0 : text.slice(0, index).split("\n").length;
}

function walkTokens(tokens: readonly Token[], visit: (token: Token) => void): void {
  for (const token of tokens) {
    visit(token);
    const nested = token as Token & { tokens?: Token[]; items?: Token[]; header?: Tokens.TableCell[]; rows?: Tokens.TableCell[][] };
    if (nested.tokens) walkTokens(nested.tokens, visit);
    if (nested.items) walkTokens(nested.items, visit);
    for (const cell of [...(nested.header ?? []), ...(nested.rows ?? []).flat()]) walkTokens(cell.tokens, visit);
  }
}

/** The links and images of a Markdown file whose target is a path in the repository (not a URL). */
export function markdownLinks(file: string): Reference[] {
  const text = readFileSync(file, "utf8");
  const found: Reference[] = [];
  let from = 0;
  walkTokens(marked.lexer(text), (token) => {
    if (token.type !== "link" && token.type !== "image") return;
    const href = (token as Tokens.Link).href;
    if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith("//")) return;
    const at = text.indexOf(token.raw, from);
    if (at >= 0) from = at;
    found.push({ file, line: lineOf(text, at), target: decodeURIComponent(href) });
  });
  return found;
}

/** The anchors GitHub gives the headings of a Markdown file, duplicates numbered as it numbers them. */
export function headingAnchors(file: string): Set<string> {
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  walkTokens(marked.lexer(readFileSync(file, "utf8")), (token) => {
    if (token.type === "heading") anchors.add(slugger.slug((token as Tokens.Heading).text));
  });
  return anchors;
}

/** Every comment of a TypeScript or JavaScript file, with where it starts. */
export function comments(file: string): Array<{ text: string; pos: number }> {
  const text = readFileSync(file, "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, file.endsWith(".ts") ? ts.ScriptKind.TS : ts.ScriptKind.JS);
  const seen = new Map<number, string>();
  const collect = (ranges: ts.CommentRange[] | undefined) => {
    for (const range of ranges ?? []) seen.set(range.pos, text.slice(range.pos, range.end));
  };
  const visit = (node: ts.Node) => {
    collect(ts.getLeadingCommentRanges(text, node.pos));
    collect(ts.getTrailingCommentRanges(text, node.end));
    ts.forEachChild(node, visit);
  };
  visit(source);
  collect(ts.getLeadingCommentRanges(text, source.endOfFileToken.pos));
  return [...seen].map(([pos, comment]) => ({ pos, text: comment }));
}

const DOCS_REFERENCE = /(?<![\w/.-])docs\/[\w./-]*[\w/](?:#[\w-]+)?/g;

/** The `docs/…` paths (with their `#anchor`) that the comments of a source file name. */
export function commentDocReferences(file: string): Reference[] {
  const text = readFileSync(file, "utf8");
  const found: Reference[] = [];
  if (!text.includes("docs/")) return found; // parsing every file would cost seconds for nothing
  for (const comment of comments(file)) {
    for (const match of comment.text.matchAll(DOCS_REFERENCE)) {
      found.push({ file, line: lineOf(text, comment.pos + match.index), target: match[0] });
    }
  }
  return found;
}

/**
 * What is wrong with a reference, or undefined when it resolves: a path relative to `base` (the
 * referring file's folder for a Markdown link, the repository for a comment) that must exist and,
 * with an `#anchor`, be a Markdown file with such a heading. `root` bounds it: a link may not
 * leave the repository.
 */
export function problemOf(reference: Reference, base: string, root: string): string | undefined {
  const [path = "", anchor] = reference.target.split("#", 2);
  const target = path === "" ? reference.file : resolve(base, path);
  const where = `${relative(root, reference.file)}:${reference.line}: "${reference.target}"`;
  if (relative(root, target).startsWith("..")) return `${where} points outside the repository`;
  if (!existsSync(target)) return `${where}: ${relative(root, target)} does not exist`;
  if (anchor === undefined) return undefined;
  if (statSync(target).isDirectory() || extname(target) !== ".md") return `${where}: an anchor needs a Markdown file`;
  const anchors = headingAnchors(target);
  if (anchors.has(anchor)) return undefined;
  return `${where}: ${relative(root, target)} has no heading "#${anchor}" (it has ${[...anchors].map((a) => `#${a}`).join(", ")})`;
}

/** Problems of every link in `pages` (Markdown) and every `docs/…` reference in `sources` (code). */
export function referenceProblems(root: string, pages: readonly string[], sources: readonly string[]): string[] {
  const problems: string[] = [];
  for (const page of pages) {
    for (const link of markdownLinks(page)) {
      const problem = problemOf(link, dirname(page), root);
      if (problem) problems.push(problem);
    }
  }
  for (const source of sources) {
    for (const reference of commentDocReferences(source)) {
      const problem = problemOf(reference, root, root);
      if (problem) problems.push(problem);
    }
  }
  return problems;
}
