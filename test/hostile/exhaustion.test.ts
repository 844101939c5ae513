import { hostileSuite } from "./run-programs.js";

hostileSuite(["exhaustion"]);
