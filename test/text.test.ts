import { describe, expect, it } from "vitest";
import { formatBytes, formatDuration } from "../src/text.js";

// The one byte formatter and the one duration formatter every message and table uses.
describe("formatBytes", () => {
  it("names sizes in bytes, KiB and MiB and never rounds up to the next unit's worth", () => {
    expect([0, 1, 2, 1023, 1024, 1536, 1023 * 1024, 1048575, 1048576, 16 * 1048576].map(formatBytes)).toEqual([
      "0 bytes",
      "1 byte",
      "2 bytes",
      "1023 bytes",
      "1.0 KiB",
      "1.5 KiB",
      "1023.0 KiB",
      "1.0 MiB",
      "1.0 MiB",
      "16.0 MiB",
    ]);
  });
});

describe("formatDuration", () => {
  it("shows ms below a second, tenths below a minute and m/ss past it, rounding once", () => {
    expect([0, 850, 999.4, 999.6, 4200, 59_940, 59_970, 60_000, 119_600, 185_000].map(formatDuration)).toEqual([
      "0ms",
      "850ms",
      "999ms",
      "1.0s",
      "4.2s",
      "59.9s",
      "1m00s",
      "1m00s",
      "2m00s",
      "3m05s",
    ]);
  });
});
