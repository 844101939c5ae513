import { hostileSuite } from "./run-programs.js";

hostileSuite(["outlive", "tamper"]);
