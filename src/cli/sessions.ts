// `codemode run --session <name>`: store()/load() values of a session outlive the CLI process in
// `<dataDir>/sessions/<name>.json`. The library keeps sessions in memory per instance; the CLI
// seeds that store before the run and writes it back after.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Codemode } from "../codemode/codemode.js";

function sessionsOf(cm: Codemode): Map<string, Map<string, string>> {
  // The instance's per-session stores (values are JSON strings), as the runtime keeps them.
  const sessions = (cm as unknown as { sessions?: unknown }).sessions;
  if (!(sessions instanceof Map)) throw new Error("this codemode build keeps no session stores the CLI can persist");
  return sessions as Map<string, Map<string, string>>;
}

function fileOf(dataDir: string, session: string): string {
  return join(dataDir, "sessions", `${encodeURIComponent(session)}.json`);
}

export function loadSession(cm: Codemode, dataDir: string, session: string): void {
  const file = fileOf(dataDir, session);
  const store = new Map<string, string>();
  if (existsSync(file)) {
    let saved: unknown;
    try {
      saved = JSON.parse(readFileSync(file, "utf8"));
    } catch (error) {
      throw new Error(`session file ${file} is not valid JSON (${(error as Error).message}); delete it to start the session afresh`);
    }
    if (saved === null || typeof saved !== "object" || Array.isArray(saved)) throw new Error(`session file ${file} must hold a JSON object; delete it to start the session afresh`);
    for (const [key, value] of Object.entries(saved)) store.set(key, JSON.stringify(value));
  }
  sessionsOf(cm).set(session, store);
}

export function saveSession(cm: Codemode, dataDir: string, session: string): void {
  const store = sessionsOf(cm).get(session);
  const file = fileOf(dataDir, session);
  if (!store || store.size === 0) {
    rmSync(file, { force: true });
    return;
  }
  const values: Record<string, unknown> = {};
  for (const [key, json] of store) values[key] = JSON.parse(json);
  mkdirSync(join(dataDir, "sessions"), { recursive: true });
  writeFileSync(`${file}.tmp`, JSON.stringify(values, null, 2) + "\n");
  renameSync(`${file}.tmp`, file);
}
