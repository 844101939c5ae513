// The native SQLite module loads with the first persistent store or host lock: a host without a
// data dir never needs it (and `import` of the package stays fast).
import type Database from "better-sqlite3";
import { createRequire } from "node:module";

let sqlite: typeof Database | undefined;

export function openDatabase(file: string, options?: Database.Options): Database.Database {
  sqlite ??= createRequire(import.meta.url)("better-sqlite3") as typeof Database;
  return new sqlite(file, options);
}

export type { Database };
