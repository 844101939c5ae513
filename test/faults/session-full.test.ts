// A session's values are saved after the run: on a full disk the save failed with only a
// details.warnings entry (so `codemode run` and the model saw nothing, and the values were gone)
// and left an empty lock file that made the next save wait 5 s to take it over.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createCodemode } from "../../src/index.js";
import { cleanUp, fillDisk, isRoot, smallTmpfs } from "./helpers.js";

afterAll(cleanUp);

describe("a session saved on a full disk", () => {
  it.runIf(isRoot)("tells the model its values are not kept, leaves no lock behind, and saves once there is room", async () => {
    const dataDir = smallTmpfs("2m");
    const cm = await createCodemode({ dataDir });
    try {
      await cm.run(`store("seed", 1)`, { session: "s" });
      const undo = fillDisk(dataDir, 0);
      const full = await cm.run(`store("big", "x".repeat(100000)); text("stored")`, { session: "s" });
      expect(full.structuredContent.status).toBe("ok");
      expect(full.content[0]!.text).toMatch(/^stored\n\nWarning: the session "s" could not be saved, so what this run stored is not kept for the next run: .*ENOSPC/);
      expect(readdirSync(join(dataDir, "sessions")).filter((name) => name.endsWith(".lock"))).toStrictEqual([]);
      undo();
      const again = await cm.run(`store("big", "y"); return load("seed")`, { session: "s" });
      expect([again.structuredContent.value, again.details.warnings]).toStrictEqual([1, []]);
      expect(existsSync(join(dataDir, "sessions", "s.json.lock"))).toBe(false);
    } finally {
      await cm.close();
    }
  });
});
