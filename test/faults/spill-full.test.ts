// Output past the budget is spilled to a file the model is pointed at. On a full disk that file
// used to be left empty while the marker said "full output: <file>, cut at 64 MiB": a model or a
// person then read a file that held nothing. Now the marker says what was saved and why not the rest.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createCodemode } from "../../src/index.js";
import { cleanUp, fillDisk, isRoot, smallTmpfs } from "./helpers.js";

afterAll(cleanUp);

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i}`).join("\n");

describe("spilled output on a full disk", () => {
  it.runIf(isRoot)("the marker says how much was saved and why not the rest, no empty file is left, and the next run spills whole", async () => {
    const dataDir = smallTmpfs("2m");
    const cm = await createCodemode({ dataDir });
    try {
      await cm.run(`text("warm")`);
      const spill = join(dataDir, "spill");
      // Room for a little of the output: the file holds its first bytes, the marker says so.
      let undo = fillDisk(dataDir, 16 * 1024);
      const some = await cm.run(`for (let i = 0; i < 40000; i++) text("line " + i)`, { limits: { outputBudget: 2000 } });
      const path = some.details.fullOutputPath!;
      const saved = readFileSync(path, "utf8");
      expect(saved.length).toBeGreaterThan(0);
      expect(saved).toBe(lines(40000).slice(0, saved.length));
      expect(some.content[0]!.text).toContain(`the first ${saved.length} bytes of the full output: ${path} (the rest could not be saved: ENOSPC)`);
      undo();
      // No room at all: no file is left, and the marker says nothing was saved.
      undo = fillDisk(dataDir, 0);
      const none = await cm.run(`for (let i = 0; i < 40000; i++) text("line " + i)`, { limits: { outputBudget: 2000 } });
      expect(Object.hasOwn(none.details, "fullOutputPath")).toBe(false);
      expect(none.content[0]!.text).toMatch(/; the full output could not be saved \(ENOSPC\) …\]/);
      expect(readdirSync(spill).sort()).toStrictEqual([`${some.details.runId}.txt`]);
      undo();
      // Room again: the next run's spill is whole.
      const whole = await cm.run(`for (let i = 0; i < 40000; i++) text("line " + i)`, { limits: { outputBudget: 2000 } });
      expect(readFileSync(whole.details.fullOutputPath!, "utf8")).toBe(lines(40000));
    } finally {
      await cm.close();
    }
  });
});
