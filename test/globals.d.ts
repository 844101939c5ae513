// Node 20 has String.prototype.isWellFormed and toWellFormed (V8 11.3), but TypeScript puts them
// in lib ES2024, which also declares what Node 20 lacks (Promise.withResolvers, Object.groupBy).
// Declaring only these two keeps the tests on the ES2023 lib that src/ is built against.
interface String {
  isWellFormed(): boolean;
  toWellFormed(): string;
}
