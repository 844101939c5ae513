import { hostileSuite } from "./run-programs.js";

hostileSuite(["escape", "values-in", "values-out"]);
