// `store()`/`load()` values per session. In memory for a library instance without a data dir;
// with one, each session is also a JSON file under `<dataDir>/sessions/`, so a session outlives the
// process (the CLI's `--session` relies on it). Values are kept as the JSON strings the guest sent.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export class SessionStores {
  private readonly stores = new Map<string, Map<string, string>>();

  constructor(private readonly dir: string | undefined) {}

  /** The session's values; read from its file the first time a persisted session is used. */
  get(session: string): Map<string, string> {
    let store = this.stores.get(session);
    if (!store) {
      store = this.dir ? this.read(session) : new Map();
      this.stores.set(session, store);
    }
    return store;
  }

  /** Write a persisted session back after a run changed it (atomically: a crash leaves the old file). */
  save(session: string): void {
    if (!this.dir) return;
    const store = this.get(session);
    const file = this.fileOf(session);
    if (store.size === 0) {
      rmSync(file, { force: true });
      return;
    }
    const values: Record<string, unknown> = {};
    for (const [key, json] of store) values[key] = JSON.parse(json);
    mkdirSync(this.dir, { recursive: true });
    writeFileSync(`${file}.tmp`, JSON.stringify(values, null, 2) + "\n");
    renameSync(`${file}.tmp`, file);
  }

  private fileOf(session: string): string {
    return join(this.dir!, `${encodeURIComponent(session)}.json`);
  }

  private read(session: string): Map<string, string> {
    const file = this.fileOf(session);
    const store = new Map<string, string>();
    if (!existsSync(file)) return store;
    let saved: unknown;
    try {
      saved = JSON.parse(readFileSync(file, "utf8"));
    } catch (error) {
      throw new Error(`session file ${file} is not valid JSON (${(error as Error).message}); delete it to start the session afresh`);
    }
    if (saved === null || typeof saved !== "object" || Array.isArray(saved)) {
      throw new Error(`session file ${file} must hold a JSON object of stored values; delete it to start the session afresh`);
    }
    for (const [key, value] of Object.entries(saved)) store.set(key, JSON.stringify(value));
    return store;
  }
}
