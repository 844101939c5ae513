// The hostile suite's essentials on the ordinary path (a runtime, context and prelude built for
// every run), which the engine falls back to when snapshots are unsupported: forced here for this
// test file's process. The other hostile files run the same programs with snapshots on; the
// categories are grouped as there (each group gets its own runtime and session store).
import { hostileSuite } from "./run-programs.js";

process.env.CODEMODE_SNAPSHOTS = "off";

hostileSuite(["escape"]);
hostileSuite(["outlive", "tamper"]);
hostileSuite(["exhaustion"]);
