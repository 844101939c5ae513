// Guest prelude: evaluated once in each instance's template (a fresh runtime and context whose
// memory is restored after every run, see src/engine/snapshot.ts), or in a fresh context before
// every program when snapshots are off. Per-run configuration (the tools and the read-only
// globals) is installed by the host through the interface's `install(configJson)`.
//
// It runs before any user code, so it captures the built-ins it relies on while they are still
// pristine; a program that later replaces JSON, Promise or Object.prototype only confuses itself.
// The host passes one function, `__codemode_host`, which this prelude keeps in a closure and
// removes from the global object. The completion value is the interface the host calls after the
// program ends. Every crossing carries one JSON string.
//
// The bridge's names are defined in src/engine/protocol.ts and spelt here as literals: the host
// operations (HOST_OPS: the first argument of every host(…) call), the result tags (RESULT_TAG:
// "=" and "!" in result()) and the clock mark (CLOCK_MARK: "~"). test/engine/protocol.test.ts
// checks that the two agree.
//
// QuickJS compiles about 10 bytes per microsecond here and this runs on every run, so the
// prelude stays small: error objects, closest-name suggestions and size checks live on the host
// side of the bridge, and the host drops comment lines and indentation before compiling it (so no
// string or template here may span lines).
(function (g) {
  "use strict";
  const host = g.__codemode_host;
  delete g.__codemode_host;
  const stringify = JSON.stringify,
    parse = JSON.parse,
    create = Object.create,
    freeze = Object.freeze;
  const define = Object.defineProperty,
    keys = Object.keys,
    apply = Reflect.apply,
    Str = String,
    slice = String.prototype.slice;
  const TypeErr = TypeError,
    RangeErr = RangeError,
    P = Proxy,
    Prom = Promise,
    reject = Promise.reject;
  // Tool calls waiting for their result: call id -> [resolve, reject] of the promise the program
  // holds. The promise is made here and settled by the host's delivery of results (deliver and
  // settle below): no promise capability crosses the wall per call. A null-prototype record, so
  // nothing a program puts on Object.prototype or Map.prototype can see or change it.
  const waiting = create(null);
  let resolveNext, rejectNext;
  const capture = (resolve, reject) => {
    resolveNext = resolve;
    rejectNext = reject;
  };
  function waitFor(id) {
    const promise = new Prom(capture);
    waiting[id] = [resolveNext, rejectNext];
    return promise;
  }
  function take(id) {
    const pair = waiting[id];
    if (pair !== undefined) delete waiting[id];
    return pair;
  }
  const timers = new Map(),
    mapHas = Map.prototype.has,
    mapSet = Map.prototype.set,
    mapDelete = Map.prototype.delete;
  let marshalling = "";
  const global = (name, value) => define(g, name, { value, writable: false, enumerable: false, configurable: false });
  // QuickJS reports stack overflow as an InternalError; make it the RangeError programs (and the
  // contract) expect to catch, as every other engine throws.
  if (typeof InternalError === "function") Object.setPrototypeOf(InternalError.prototype, RangeErr.prototype);

  // A promise used as if it were its value (a forgotten await): `r.hits` of `const r = tools.search(…)`,
  // JSON.stringify(r), "n: " + r. Promise.prototype inherits from Object.prototype through a proxy
  // that sees only the names neither of them has, so such a read is reported with its line (a
  // warning) and gives what it gave before (undefined; JSON's {}); a promise turned into a string
  // shows the marker text() shows. Nothing else changes for promises, or for any other object.
  const PROMISE_MARK = "[a Promise: await it to get its value]",
    has = Reflect.has,
    getOf = Reflect.get;
  let rendering = false,
    converting = false;
  const misread = (what) => {
    // Inside the host's own conversions (arguments, stored and returned values) a promise met by
    // JSON is named by emptied() below, with where it sits.
    if (!rendering && !(converting && what === "toJSON")) host("promiseRead", what, new ErrorC().stack);
  };
  Object.setPrototypeOf(
    Prom.prototype,
    new P(Object.prototype, {
      get(target, key, receiver) {
        if (typeof key === "string" && !has(target, key) && receiver instanceof Prom) misread(key);
        return getOf(target, key, receiver);
      },
    }),
  );
  define(Prom.prototype, Symbol.toPrimitive, {
    value() {
      misread("");
      return PROMISE_MARK;
    },
    writable: true,
    configurable: true,
  });
  // Values JSON shows as {} (or drops): an Error as its name, message and own fields, a Map as its
  // entries, a Set as its values, a promise as what it is (the model forgot an await).
  const ErrorC = Error,
    MapC = Map,
    SetC = Set,
    Arr = Array,
    from = Array.from,
    indexOf = String.prototype.indexOf;
  function readable(_, value) {
    if (value === null || typeof value !== "object") return value;
    if (value instanceof Prom) return PROMISE_MARK;
    if (value instanceof ErrorC) {
      const out = { name: value.name, message: value.message };
      for (const key of keys(value)) if (key !== "stack") out[key] = value[key];
      return out;
    }
    if (value instanceof MapC || value instanceof SetC) return apply(from, Arr, [value]);
    return value;
  }
  // Strings as is, everything else as JSON: what a model reads is what it would log.
  function render(value) {
    if (typeof value === "string") return value;
    if (value === undefined || typeof value === "symbol" || typeof value === "bigint") return Str(value);
    if (typeof value === "function") return "[function]";
    rendering = true;
    try {
      const shown = readable("", value);
      if (typeof shown === "string") return shown;
      let json = stringify(value);
      // The second pass only where JSON printed an empty object somewhere (or the value is one).
      if (json !== undefined && (shown !== value || apply(indexOf, json, ["{}"]) >= 0)) json = stringify(value, readable);
      return json === undefined ? Str(value) : json;
    } catch (e) {
      return "[a value JSON cannot show: " + (e && typeof e.message === "string" ? e.message : "it threw") + "]";
    } finally {
      rendering = false;
    }
  }

  // `path`: the tool whose arguments these are, while they are converted (see `fn` below);
  // `where` names the value in errors: a store key, else that tool call.
  function toJson(value, path, where) {
    let json;
    marshalling = path;
    converting = true;
    try {
      json = stringify(value);
    } catch (e) {
      marshalling = "";
      converting = false;
      throw new TypeErr((where ?? "tools." + path + "()") + ": the value must be JSON-serialisable (" + render(e && e.message) + ")");
    }
    marshalling = "";
    converting = false;
    if (json === undefined) throw new TypeErr((where ?? "tools." + path + "()") + ": the value must be a JSON value, got " + typeof value);
    // JSON writes a promise, a Map and a Set as {}: what arrived would not be what was meant.
    if (apply(indexOf, json, ["{}"]) >= 0) {
      const found = emptied(value);
      if (found) throw new TypeErr((where ?? "tools." + path + "()") + ": " + found);
    }
    return json;
  }
  // The first value in `value` that JSON writes as {} although it holds something, said with the fix.
  function emptied(value) {
    let found;
    const look = function (key, item) {
      if (found === undefined && item !== null && typeof item === "object") {
        const what =
          item instanceof Prom
            ? "a promise, which JSON turns into {}: await it (a forgotten await) and pass its value"
            : item instanceof MapC
              ? "a Map, which JSON turns into {}: pass Object.fromEntries(map) or [...map]"
              : item instanceof SetC
                ? "a Set, which JSON turns into {}: pass [...set]"
                : undefined;
        if (what) found = (key === "" && this[""] === value ? "the value is " : "the value's " + stringify(key) + " is ") + what;
      }
      return found === undefined ? item : undefined;
    };
    rendering = true;
    try {
      stringify(value, look);
    } catch (_) {
      // It was converted once already; a getter that throws now only hides what it holds.
    } finally {
      rendering = false;
    }
    return found;
  }

  // A namespace: its names are plain read-only properties of the Proxy's target, so a lookup is
  // the engine's own (a Proxy with no get trap; ~0.1 µs where a trap function costs ~1 µs); a
  // name that is not there falls through to the target's prototype, a second Proxy whose trap
  // throws a TypeError with suggestions, while `then`, `toJSON` and symbols read as undefined so
  // the namespace is never mistaken for a thenable. The outer Proxy refuses every change and
  // shows no prototype. Its target stays extensible (preventExtensions is refused too): a
  // getPrototypeOf trap may answer null only for an extensible target.
  const refuse = () => false,
    none = () => null;
  function namespace(prefix, table) {
    const unknown = new P(create(null), {
      get(_, key) {
        if (typeof key === "symbol" || key === "then" || key === "toJSON") return undefined;
        throw new TypeErr(host("unknownTool", prefix, stringify(Str(key))));
      },
    });
    const names = create(unknown);
    for (const name of keys(table)) define(names, name, { value: table[name], writable: false, enumerable: true, configurable: false });
    return new P(names, {
      getPrototypeOf: none,
      set: refuse,
      defineProperty: refuse,
      deleteProperty: refuse,
      setPrototypeOf: refuse,
      preventExtensions: refuse,
    });
  }
  // Replay (approvals; src/codemode/ledger.ts): for a run with `config.determinism`, install()
  // seeds Math.random and makes Date.now()/new Date() answer first from an earlier run's readings,
  // then from the clock. The readings, as [value, repeats] pairs, leave with the next tool call:
  // "~" JSON "~" args. What install() changes here is undone with the rest of the run's state.
  const RealDate = Date,
    realNow = Date.now,
    construct = Reflect.construct;
  let readings = null;
  function replayable(det) {
    let [a, b, c, d] = det.seed,
      at = 0;
    const clock = det.clock;
    let left = clock[1];
    const word = () => {
      const t = (((a + b) | 0) + d) | 0;
      d = (d + 1) | 0;
      a = b ^ (b >>> 9);
      b = (c + (c << 3)) | 0;
      c = (c << 21) | (c >>> 11);
      c = (c + t) | 0;
      return t >>> 0;
    };
    for (let i = 0; i < 12; i++) word();
    define(Math, "random", {
      value: {
        random() {
          return (word() * 2097152 + (word() >>> 11)) / 9007199254740992;
        },
      }.random,
      writable: true,
      configurable: true,
    });
    readings = [];
    const now = {
      now() {
        let v;
        if (at < clock.length) {
          v = clock[at];
          if (--left <= 0) {
            at += 2;
            left = clock[at + 1];
          }
        } else v = realNow();
        const n = readings.length;
        if (n && readings[n - 2] === v) readings[n - 1]++;
        else {
          readings[n] = v;
          readings[n + 1] = 1;
        }
        return v;
      },
    }.now;
    const ReplayDate = {
      Date: function (...args) {
        if (new.target === undefined) return Str(construct(RealDate, [now()]));
        return construct(RealDate, args.length ? args : [now()], new.target);
      },
    }.Date;
    ReplayDate.prototype = RealDate.prototype;
    define(RealDate.prototype, "constructor", { value: ReplayDate, writable: true, configurable: true });
    for (const name of ["parse", "UTC"]) define(ReplayDate, name, { value: RealDate[name], writable: true, configurable: true });
    define(ReplayDate, "now", { value: now, writable: true, configurable: true });
    define(g, "Date", { value: ReplayDate, writable: true, configurable: true });
  }

  // Free-form strings cross as JSON: the host reads C strings, which end at a NUL and mangle lone surrogates.
  global("text", function text(value) {
    let out = render(value);
    // text("count:", n) prints both, as console.log would.
    for (let i = 1; i < arguments.length; i++) out += " " + render(arguments[i]);
    host("text", stringify(out));
  });
  const consoleObject = create(null);
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    consoleObject[level] = function () {
      let line = "";
      for (let i = 0; i < arguments.length; i++) line += (i ? " " : "") + render(arguments[i]);
      // The host keeps 2,000 characters of a line: a longer one need not cross whole.
      if (line.length > 4096) line = apply(slice, line, [0, 4096]);
      host("console", level, stringify(line));
    };
  }
  global("console", freeze(consoleObject));

  const checkKey = (name, key) => {
    if (typeof key !== "string" || key === "") throw new TypeErr(name + ": key must be a non-empty string");
  };
  global("store", function store(key, value) {
    checkKey("store(key, value)", key);
    const problem = host("store", stringify(key), value === undefined ? undefined : toJson(value, "", "store(" + stringify(key) + ")"));
    if (problem) throw new RangeErr(problem);
  });
  global("load", function load(key) {
    checkKey("load(key)", key);
    const json = host("load", stringify(key));
    return json === undefined ? undefined : parse(json);
  });

  function delay(name, ms) {
    const value = ms === undefined ? 0 : +ms;
    if (!(value >= 0)) throw new TypeErr(name + ": delay must be a non-negative number of milliseconds");
    return value;
  }
  global("sleep", function sleep(ms) {
    return host("sleep", delay("sleep(ms)", ms), 0);
  });
  let nextTimer = 1;
  global("setTimeout", function setTimeout(callback, ms, ...extra) {
    if (typeof callback !== "function") throw new TypeErr("setTimeout(callback, ms): callback must be a function");
    const id = nextTimer++,
      fired = host("sleep", delay("setTimeout(callback, ms)", ms), id);
    apply(mapSet, timers, [id, true]);
    (async () => {
      await fired;
      if (!apply(mapDelete, timers, [id])) return;
      // Nothing else would see a callback's exception or rejection.
      try {
        const result = apply(callback, undefined, extra);
        if (result instanceof Prom) await result;
      } catch (e) {
        host("uncaught", describe(e));
      }
    })();
    return id;
  });
  global("clearTimeout", function clearTimeout(id) {
    if (apply(mapHas, timers, [id])) {
      apply(mapDelete, timers, [id]);
      host("clearTimer", id);
    }
  });

  global("budget", function budget() {
    return parse(host("budget"));
  });

  // A null-prototype record: Object.prototype.toJSON (or getters there) must not rewrite it.
  function describe(e) {
    const out = create(null);
    if (e !== null && (typeof e === "object" || typeof e === "function")) {
      out.name = read(e, "name");
      out.message = read(e, "message");
      out.stack = read(e, "stack");
      out.thrown = out.name === undefined && out.message === undefined;
      if (out.thrown) out.message = render(e);
    } else {
      out.message = render(e);
      out.thrown = true;
    }
    return stringify(out);
  }
  const read = (object, key) => {
    try {
      const value = object[key];
      return value === undefined || typeof value === "string" ? value : render(value);
    } catch (_) {
      return undefined;
    }
  };
  return {
    fromJson: parse,
    // The results of one delivery that arrived as JSON text: `meta` is the call's id for one, or
    // [id, length, id, length…] for several, with `body` their texts back to back in arrival
    // order. A text that does not parse rejects its own call only.
    deliver(meta, body) {
      const list = typeof meta === "number" ? [meta, body.length] : parse(meta);
      let at = 0;
      for (let i = 0; i < list.length; i += 2) {
        const length = list[i + 1],
          text = list.length === 2 ? body : apply(slice, body, [at, at + length]);
        at += length;
        const pair = take(list[i]);
        if (pair === undefined) continue;
        let value;
        try {
          value = parse(text);
        } catch (e) {
          pair[1](e);
          continue;
        }
        pair[0](value);
      }
    },
    // One result that is already a value: [result] decoded from QuickJS's binary format (ok), or
    // the ready-made Error to reject with.
    settle(id, ok, value) {
      const pair = take(id);
      if (pair !== undefined) ok ? pair[0](value[0]) : pair[1](value);
    },
    // "=" + JSON for a value, "!" + reason when it is not JSON; undefined when there is none.
    result(value) {
      if (value === undefined) return undefined;
      converting = true;
      try {
        const json = stringify(value);
        if (json === undefined) return "!the return value is a " + typeof value + ", not a JSON value";
        // Kept as JSON wrote it, with a warning naming what turned into {}.
        const found = apply(indexOf, json, ["{}"]) >= 0 && emptied(value);
        if (found) host("promiseRead", "", "", "the return value" + apply(slice, found, [9]));
        return "=" + json;
      } catch (e) {
        return "!the return value could not be serialised: " + render(e && e.message);
      } finally {
        converting = false;
      }
    },
    error: describe,
    // Once per run, before the program: the tools and globals of this run.
    install(configJson) {
      const config = parse(configJson);
      if (config.determinism) replayable(config.determinism);
      const root = create(null),
        branches = create(null);
      for (const path of config.tools) {
        // The host answers with the call's id (its result comes later, see deliver and settle), or
        // with a ready-made Error (name, code, message) when it refuses the call. An Error has no
        // stack yet: QuickJS adds one where it is first thrown, which is the program's own `await`
        // of the call (an async wrapper here would put its frame there).
        // A tool called from a toJSON or getter of another call's arguments would nest without bound.
        const dot = path.indexOf("."),
          fn = (args) => {
            if (marshalling) throw new TypeErr(host("reentrant", path, marshalling));
            let json = "{}";
            if (args !== undefined)
              try {
                json = toJson(args, path);
              } catch (e) {
                return apply(reject, Prom, [e]);
              }
            if (readings !== null && readings.length) {
              json = "~" + stringify(readings) + "~" + json;
              readings = [];
            }
            const id = host("call", path, json);
            return typeof id === "number" ? waitFor(id) : apply(reject, Prom, [id]);
          };
        if (dot < 0) root[path] = fn;
        else (branches[path.slice(0, dot)] ??= create(null))[path.slice(dot + 1)] = fn;
      }
      for (const head of keys(branches)) root[head] = namespace(head, branches[head]);
      global("tools", namespace("", root));
      for (const name of keys(config.globals)) global(name, config.globals[name]);
    },
  };
})(globalThis);
