import { describe, expect, it } from "vitest";
import { PROGRAMS } from "./programs.js";

describe("the hostile program table", () => {
  it("holds at least 60 programs in every category, each named once", () => {
    expect(PROGRAMS.length).toBeGreaterThanOrEqual(60);
    const names = new Set(PROGRAMS.map((p) => p.name));
    expect(names.size).toBe(PROGRAMS.length);
    for (const category of ["escape", "values-in", "values-out", "exhaustion", "outlive", "tamper"]) {
      expect(PROGRAMS.filter((p) => p.category === category).length, category).toBeGreaterThanOrEqual(5);
    }
  });
});
