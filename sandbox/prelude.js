// Guest prelude: evaluated inside QuickJS before every program, in a fresh context.
//
// It runs before any user code, so it captures the built-ins it relies on while they are still
// pristine; a program that later replaces JSON, Promise or Object.prototype only confuses itself.
// The host passes one function, `__codemode_host`, which this prelude keeps in a closure and
// removes from the global object. The completion value of this script is the interface the host
// calls after the program ends (serialising the return value, describing a thrown error).
//
// Every crossing carries one JSON string.
(function (globalObject) {
  "use strict";
  const host = globalObject.__codemode_host;
  const config = JSON.parse(globalObject.__codemode_config);
  delete globalObject.__codemode_host;
  delete globalObject.__codemode_config;

  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const ObjectCreate = Object.create;
  const ObjectFreeze = Object.freeze;
  const ObjectDefineProperty = Object.defineProperty;
  const ObjectKeys = Object.keys;
  const ArrayIsArray = Array.isArray;
  const MathMin = Math.min;
  const StringCtor = String;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const ProxyCtor = Proxy;
  const MapCtor = Map;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapHas = Map.prototype.has;
  const mapDelete = Map.prototype.delete;
  const apply = Reflect.apply;

  function defineGlobal(name, value) {
    ObjectDefineProperty(globalObject, name, { value, writable: false, enumerable: false, configurable: false });
  }

  // Strings pass as is; everything else as JSON, so a model sees the same thing it would log.
  function render(value) {
    if (typeof value === "string") return value;
    if (value === undefined) return "undefined";
    if (typeof value === "function") return "[function]";
    if (typeof value === "symbol" || typeof value === "bigint") return StringCtor(value);
    try {
      const json = stringify(value);
      return json === undefined ? StringCtor(value) : json;
    } catch (error) {
      try {
        return StringCtor(value);
      } catch (_) {
        return "[unprintable value]";
      }
    }
  }

  // ---- tools -------------------------------------------------------------------------------

  function toolError(payload) {
    let info;
    try {
      info = parse(payload);
    } catch (_) {
      info = { name: "Error", message: StringCtor(payload) };
    }
    const error = info.name === "TypeError" ? new TypeErrorCtor(info.message)
      : info.name === "RangeError" ? new RangeErrorCtor(info.message)
      : new ErrorCtor(info.message);
    if (info.name !== "TypeError" && info.name !== "RangeError") {
      ObjectDefineProperty(error, "name", { value: info.name || "ToolError", writable: true, configurable: true });
    }
    if (info.code !== undefined) {
      ObjectDefineProperty(error, "code", { value: info.code, writable: true, enumerable: true, configurable: true });
    }
    if (info.reason !== undefined) {
      ObjectDefineProperty(error, "reason", { value: info.reason, writable: true, enumerable: true, configurable: true });
    }
    return error;
  }

  async function callTool(path, args) {
    let json;
    try {
      json = args === undefined ? "{}" : stringify(args);
    } catch (error) {
      throw new TypeErrorCtor("tools." + path + "(): the argument must be JSON-serialisable (" + render(error && error.message) + ")");
    }
    if (json === undefined) {
      throw new TypeErrorCtor("tools." + path + "(): the argument must be a JSON value (got " + typeof args + ")");
    }
    const pending = host("call", path, json);
    let result;
    try {
      result = await pending;
    } catch (payload) {
      throw toolError(payload);
    }
    return parse(result);
  }

  function editDistance(a, b) {
    const row = [];
    for (let j = 0; j <= b.length; j++) row[j] = j;
    for (let i = 1; i <= a.length; i++) {
      let previous = row[0];
      row[0] = i;
      for (let j = 1; j <= b.length; j++) {
        const saved = row[j];
        row[j] = a[i - 1] === b[j - 1] ? previous : 1 + MathMin(previous, row[j], row[j - 1]);
        previous = saved;
      }
    }
    return row[b.length];
  }

  function closest(name, candidates) {
    const scored = [];
    for (const candidate of candidates) {
      const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
      const related = candidate.indexOf(name) >= 0 || name.indexOf(candidate) >= 0;
      if (related || distance <= MathMin(3, (candidate.length >> 1) + 1)) scored.push([related ? 0 : distance, candidate]);
    }
    scored.sort((x, y) => x[0] - y[0] || (x[1] < y[1] ? -1 : 1));
    return scored.slice(0, 3).map((entry) => entry[1]);
  }

  // A namespace is a Proxy over a frozen null-prototype table so that reading an unknown name
  // throws a helpful TypeError, while `then` and symbols read as undefined: `await tools` must
  // never mistake the namespace for a thenable.
  function namespace(prefix, table) {
    const names = ObjectKeys(table);
    const frozen = ObjectFreeze(table);
    return new ProxyCtor(frozen, {
      get(target, key) {
        if (typeof key === "symbol" || key === "then" || key === "toJSON") return undefined;
        if (key in target) return target[key];
        const where = prefix ? "tools." + prefix : "tools";
        const suggestions = closest(key, names);
        const hint = suggestions.length ? " Did you mean " + suggestions.map((s) => where + "." + s).join(", ") + "?" : "";
        const known = names.length ? " Available: " + names.slice(0, 40).join(", ") + (names.length > 40 ? ", …" : "") + "." : " No tools are bound.";
        throw new TypeErrorCtor(where + "." + key + " is not a tool." + hint + known);
      },
      set() { return false; },
      defineProperty() { return false; },
      deleteProperty() { return false; },
      setPrototypeOf() { return false; },
    });
  }

  function buildTools(paths) {
    const root = ObjectCreate(null);
    const branches = ObjectCreate(null);
    for (const path of paths) {
      const dot = path.indexOf(".");
      if (dot < 0) {
        root[path] = (args) => callTool(path, args);
      } else {
        const head = path.slice(0, dot);
        const tail = path.slice(dot + 1);
        if (!branches[head]) branches[head] = ObjectCreate(null);
        branches[head][tail] = (args) => callTool(path, args);
      }
    }
    for (const head of ObjectKeys(branches)) root[head] = namespace(head, branches[head]);
    return namespace("", root);
  }

  defineGlobal("tools", buildTools(config.tools));

  // ---- output --------------------------------------------------------------------------------

  defineGlobal("text", function text(value) {
    host("text", render(value));
  });

  function formatArgs(args) {
    let line = "";
    for (let i = 0; i < args.length; i++) line += (i ? " " : "") + render(args[i]);
    return line;
  }
  const consoleObject = ObjectCreate(null);
  for (const level of ["log", "info", "warn", "error", "debug"]) {
    consoleObject[level] = function () {
      host("console", level, formatArgs(arguments));
    };
  }
  defineGlobal("console", ObjectFreeze(consoleObject));

  // ---- store / load --------------------------------------------------------------------------

  defineGlobal("store", function store(key, value) {
    if (typeof key !== "string" || key.length === 0) throw new TypeErrorCtor("store(key, value): key must be a non-empty string");
    let json;
    if (value !== undefined) {
      try {
        json = stringify(value);
      } catch (error) {
        throw new TypeErrorCtor("store(" + stringify(key) + "): value must be JSON-serialisable (" + render(error && error.message) + ")");
      }
      if (json === undefined) throw new TypeErrorCtor("store(" + stringify(key) + "): value must be a JSON value (got " + typeof value + ")");
    }
    const problem = host("store", key, json);
    if (problem) throw new RangeErrorCtor(problem);
  });

  defineGlobal("load", function load(key) {
    if (typeof key !== "string" || key.length === 0) throw new TypeErrorCtor("load(key): key must be a non-empty string");
    const json = host("load", key);
    return json === undefined ? undefined : parse(json);
  });

  // ---- time ----------------------------------------------------------------------------------

  function checkDelay(name, ms) {
    const delay = ms === undefined ? 0 : +ms;
    if (delay !== delay || delay < 0) throw new TypeErrorCtor(name + ": delay must be a non-negative number of milliseconds");
    return delay;
  }

  defineGlobal("sleep", function sleep(ms) {
    return host("sleep", checkDelay("sleep(ms)", ms), 0);
  });

  let nextTimer = 1;
  const timers = new MapCtor();
  defineGlobal("setTimeout", function setTimeout(callback, ms) {
    if (typeof callback !== "function") throw new TypeErrorCtor("setTimeout(callback, ms): callback must be a function");
    const delay = checkDelay("setTimeout(callback, ms)", ms);
    const extra = [];
    for (let i = 2; i < arguments.length; i++) extra.push(arguments[i]);
    const id = nextTimer++;
    apply(mapSet, timers, [id, callback]);
    const fired = host("sleep", delay, id);
    (async () => {
      await fired;
      if (!apply(mapHas, timers, [id])) return;
      apply(mapDelete, timers, [id]);
      apply(callback, undefined, extra);
    })();
    return id;
  });
  defineGlobal("clearTimeout", function clearTimeout(id) {
    if (typeof id === "number" && apply(mapHas, timers, [id])) {
      apply(mapDelete, timers, [id]);
      host("clearTimer", id);
    }
  });

  // ---- what the program may read -------------------------------------------------------------

  for (const name of ObjectKeys(config.globals)) defineGlobal(name, config.globals[name]);

  // Capabilities a model might reach for; absent on purpose, and named in the error it gets.
  for (const name of ["WebAssembly", "require", "process", "fetch"]) {
    if (name in globalObject) delete globalObject[name];
  }

  // ---- the host's interface (completion value) ------------------------------------------------

  // "=" + JSON for a value, "!" + reason when it is not JSON; undefined when there is none.
  function serialise(value) {
    if (value === undefined) return undefined;
    try {
      const json = stringify(value);
      return json === undefined ? "!the return value is a " + typeof value + ", not a JSON value" : "=" + json;
    } catch (error) {
      return "!the return value could not be serialised: " + render(error && error.message);
    }
  }

  function read(object, key) {
    try {
      const value = object[key];
      return typeof value === "string" ? value : value === undefined ? undefined : render(value);
    } catch (_) {
      return undefined;
    }
  }

  function describe(error) {
    if (error !== null && (typeof error === "object" || typeof error === "function")) {
      return stringify({ name: read(error, "name"), message: read(error, "message"), stack: read(error, "stack"), thrown: false });
    }
    return stringify({ name: undefined, message: render(error), thrown: true });
  }

  return {
    result: serialise,
    error: describe,
  };
})(globalThis);
