// The shared-memory bridge on its own, between the test's thread and real worker threads:
// order across the ring and its overflow port, values larger than the ring, a full ring, a
// worker sleeping in Atomics.wait that is aborted or terminated, a host that sleeps when idle.
import { spawnSync } from "node:child_process";
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { AdaptiveWindow, HostBridge, type BridgeMessage } from "../../src/engine/ring.js";

const fixture = new URL("../fixtures/ring-worker.mjs", import.meta.url);
const workers: Worker[] = [];
const bridges: HostBridge[] = [];

afterEach(async () => {
  for (const bridge of bridges.splice(0)) bridge.close();
  await Promise.all(workers.splice(0).map((worker) => worker.terminate()));
});

function start(
  mode: string,
  options: {
    ringBytes?: number;
    pollMs?: number;
    sleepMs?: number;
    run?: number;
    thenBlock?: boolean;
    spinMs?: number;
    sliceMs?: number;
    gate?: SharedArrayBuffer;
    gateMax?: number;
    nudgeSpinMs?: number;
  } = {},
) {
  const bridge = new HostBridge({ ringBytes: options.ringBytes, pollMs: options.pollMs, nudgeSpinMs: options.nudgeSpinMs });
  const worker = new Worker(fixture, { workerData: { init: bridge.init, mode, ...options }, transferList: bridge.transfer });
  bridges.push(bridge);
  workers.push(worker);
  const inbox: BridgeMessage[] = [];
  let waiting: { count: number; resolve: () => void } | undefined;
  bridge.onMessage((message) => {
    inbox.push(message);
    if (waiting && inbox.length >= waiting.count) waiting.resolve();
  });
  /** Resolves once `count` messages have arrived in all; fails the test after a generous bound. */
  const received = (count: number) =>
    new Promise<BridgeMessage[]>((resolve, reject) => {
      if (inbox.length >= count) return resolve(inbox.slice(0, count));
      const timer = setTimeout(() => reject(new Error(`only ${inbox.length} of ${count} messages arrived`)), 20_000);
      waiting = {
        count,
        resolve: () => {
          clearTimeout(timer);
          waiting = undefined;
          resolve(inbox.slice(0, count));
        },
      };
    });
  return { bridge, worker, inbox, received };
}

const text = (message: BridgeMessage) => (typeof message === "string" ? message : Buffer.from(message as Uint8Array).toString("hex"));

describe("the bridge", () => {
  it("carries strings and bytes both ways in order, values larger than the ring through the port", async () => {
    const { bridge, received } = start("echo", { ringBytes: 1024 });
    const sent: BridgeMessage[] = [];
    for (let i = 0; i < 60; i++) {
      const size = [3, 200, 5000, 0, 1017][i % 5];
      const message = i % 2 ? "é☃\ud83d\ude00".repeat(size % 97) + i : Uint8Array.from({ length: size }, (_, j) => (i + j) & 0xff);
      sent.push(message);
      // A Uint8Array owning its whole buffer is transferred when it takes the port: send a copy.
      bridge.send(typeof message === "string" ? message : message.slice());
    }
    const echoed = await received(60);
    expect(echoed.map(text)).toStrictEqual(sent.map(text));
    expect(echoed.map((message) => typeof message)).toStrictEqual(sent.map((message) => typeof message));
    bridge.send("stats");
    const stats = JSON.parse((await received(61))[60] as string) as { overflowed: number };
    // The 5000-byte values cannot fit a 1 KiB ring: they went through the ports both ways.
    expect(bridge.stats.overflowToWorker).toBeGreaterThanOrEqual(12);
    expect(stats.overflowed).toBeGreaterThanOrEqual(12);
  });

  it("transfers a large Uint8Array that owns its buffer instead of copying it", async () => {
    const { bridge, received } = start("echo", { ringBytes: 1024 });
    const large = new Uint8Array(4096).fill(9);
    bridge.send(large);
    expect(large.byteLength).toBe(0);
    const [echoed] = await received(1);
    expect(Buffer.from(echoed as Uint8Array).equals(Buffer.alloc(4096, 9))).toBe(true);
  });

  it("wraps around the ring many times over", async () => {
    const { bridge, received } = start("echo", { ringBytes: 256 });
    const sent = Array.from({ length: 2000 }, (_, i) => "m".repeat(i % 61) + i);
    for (const message of sent) bridge.send(message);
    expect(await received(sent.length)).toStrictEqual(sent);
  });

  it("keeps order when the ring is full (the overflow port takes the rest)", async () => {
    const { bridge, received } = start("echo", { ringBytes: 4096 });
    bridge.send("burst:500:100");
    const burst = await received(500);
    expect(burst.map((message) => Number((message as string).split(":")[0]))).toStrictEqual(Array.from({ length: 500 }, (_, i) => i));
  });

  it("does not block the host's event loop while it polls", async () => {
    const { bridge, received } = start("echo");
    let ticks = 0;
    const interval = setInterval(() => ticks++, 1);
    for (let i = 0; i < 2000; i++) {
      bridge.send(`round ${i}`);
      await received(i + 1);
    }
    clearInterval(interval);
    expect(ticks).toBeGreaterThan(0);
  });

  it("rings a host that fell asleep, once", async () => {
    const { bridge, received } = start("echo", { pollMs: 0.1 });
    const before = bridge.stats.hostRings;
    // The worker answers 50 ms later, long after the host's poll window: the host is asleep then.
    bridge.send("later:50");
    expect(await received(1)).toStrictEqual(["late"]);
    expect(bridge.stats.hostRings).toBe(before + 1);
  });

  it("wakes no thread in a sequential exchange while both sides keep their windows open", async () => {
    // Windows far longer than any answer: the worker never sleeps, the host never needs its bell.
    const { bridge, received } = start("echo", { pollMs: 10_000, spinMs: 10_000 });
    for (let i = 0; i < 300; i++) {
      bridge.send(`round ${i}`);
      await received(i + 1);
    }
    expect(bridge.stats).toMatchObject({ hostRings: 0, workerWakes: 0, workerSleeps: 0 });
    expect(bridge.stats.workerWaits).toBeGreaterThan(0);
  });

  it("halves the host's poll window when the worker had to ring, and doubles it back when a window catches the answer", async () => {
    const { bridge, received } = start("echo", { pollMs: 1 });
    expect(bridge.pollWindowMs).toBe(1);
    bridge.send("later:50");
    await received(1);
    expect(bridge.stats.hostRings).toBe(1);
    expect(bridge.pollWindowMs).toBe(0.5);
    bridge.send("later:50");
    await received(2);
    expect(bridge.pollWindowMs).toBe(0.25);
    // An answer the worker sends at once is caught by polling (or rings, on a machine too busy to
    // answer within the window): the window never grows past its maximum.
    for (let i = 0; i < 50; i++) {
      bridge.send(`round ${i}`);
      await received(3 + i);
    }
    expect(bridge.pollWindowMs).toBeLessThanOrEqual(1);
  });

  it("polls for a run's first message without shrinking the tool-call window when it comes late", async () => {
    const { bridge, received } = start("echo", { pollMs: 1 });
    // A run that answers after 50 ms: the host polled for it, slept, and was rung.
    bridge.send("later:50");
    bridge.expect();
    await received(1);
    expect(bridge.stats.hostRings).toBe(1);
    expect(bridge.pollWindowMs).toBe(1);
    // The next call's late answer still halves the call window.
    bridge.send("later:50");
    await received(2);
    expect(bridge.pollWindowMs).toBe(0.5);
  });

  it("polls for a run sent right after the last one ended, not for one after a pause", async () => {
    const { bridge } = start("echo", { pollMs: 1 });
    const turns = async (count: number) => {
      for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(bridge.asleep).toBe(true);
    // Back to back: the host polls for the run's answer (awake after its first turns).
    bridge.rest();
    bridge.expect();
    await turns(3);
    expect(bridge.asleep).toBe(false);
    // After a pause: it sleeps until the worker rings.
    bridge.rest();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(bridge.asleep).toBe(true);
    bridge.expect();
    await turns(3);
    expect(bridge.asleep).toBe(true);
  });

  it("spins only briefly after an answer that came far later than its spin (a slow tool)", async () => {
    const { bridge, received } = start("echo", { spinMs: 1 });
    bridge.send("up");
    await received(1);
    // The worker waits again; the host answers 30 ms later, far past its 1 ms spin.
    await new Promise((resolve) => setTimeout(resolve, 30));
    bridge.send("stats");
    const stats = JSON.parse((await received(2))[1] as string) as { spinMs: number | null };
    expect(stats.spinMs).toBe(0.02);
    expect(bridge.stats.workerSleeps).toBeGreaterThanOrEqual(1);
  });

  it("never rings a host that is still polling", async () => {
    // A poll window longer than the whole exchange: the host never says it is asleep.
    const { bridge, received } = start("echo", { pollMs: 10_000 });
    bridge.send("burst:300:10");
    await received(300);
    for (let i = 0; i < 100; i++) {
      bridge.send(`round ${i}`);
      await received(301 + i);
    }
    expect(bridge.stats.hostRings).toBe(0);
  });
});

describe("a worker sleeping in Atomics.wait", () => {
  it("wakes for a message and sleeps out a timeout", async () => {
    const { received } = start("sleep", { sleepMs: 30 });
    const [hello, result] = await received(2);
    expect(hello).toBe("sleeping");
    expect(JSON.parse(result as string).outcome).toBe("timeout");
  });

  it("is woken by an abort of its run, and not by an abort of another run", async () => {
    const { bridge, inbox, received } = start("sleep", { sleepMs: 30_000, run: 7 });
    await received(1);
    bridge.abort(6);
    await new Promise((resolve) => setTimeout(resolve, 50));
    // Woken by the other run's abort, it went back to sleep: no outcome yet.
    expect(inbox).toStrictEqual(["sleeping"]);
    bridge.abort(7);
    const [, result] = await received(2);
    expect(JSON.parse(result as string).outcome).toBe("aborted");
  });

  it("is stopped by terminate() while blocked in Atomics.wait", async () => {
    const { worker, received } = start("sleep", { sleepMs: 10, thenBlock: true });
    await received(2); // it is now blocked in a ten-minute Atomics.wait
    await new Promise((resolve) => setTimeout(resolve, 20));
    const exit = new Promise<number>((resolve) => worker.once("exit", resolve));
    await worker.terminate();
    expect(await exit).toBe(1);
  });
});

describe("a worker idle between runs", () => {
  it("is woken in its watch for a message offered to it, and says when it is not watching", async () => {
    const { bridge, received } = start("idle", { sliceMs: 10_000 });
    await received(1);
    // It says it is watching once it is blocked in its slice.
    for (let i = 0; i < 500 && !bridge.workerWatching; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(bridge.offer("ping")).toBe(true);
    expect((await received(2))[1]).toBe("ping");
    expect(bridge.stats.workerWakes).toBe(1);
  });

  it("takes a message offered while it finished a run's after-work from the ring when that work ends, and stops promising to look then", async () => {
    const gate = new SharedArrayBuffer(4);
    const { bridge, received } = start("after-work", { gate });
    expect(await received(1)).toStrictEqual(["busy"]);
    // Busy, not watching, but sure to look: the offer needs no message to its event loop.
    expect(bridge.workerWatching).toBe(true);
    expect(bridge.offer("next")).toBe(true);
    Atomics.store(new Int32Array(gate), 0, 1);
    Atomics.notify(new Int32Array(gate), 0);
    expect((await received(2))[1]).toBe("look true next");
    expect(bridge.workerWatching).toBe(false);
    expect(bridge.offer("late")).toBe(false);
  });

  it("does not miss an offer made while it was between slices", async () => {
    // Slices of 0 ms: the flag is down most of the time, and offers race it.
    const { bridge, received } = start("idle", { sliceMs: 0 });
    await received(1);
    let declined = 0;
    for (let i = 0; i < 200; i++) {
      if (!bridge.offer(`m${i}`)) declined++;
      await received(2 + i);
    }
    expect((await received(201)).slice(1)).toStrictEqual(Array.from({ length: 200 }, (_, i) => `m${i}`));
    expect(declined).toBeGreaterThan(0);
  });
});

describe("a worker nudged between runs", () => {
  const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  async function watching(bridge: HostBridge): Promise<void> {
    for (let i = 0; i < 2000 && !bridge.workerWatching; i++) await settle(5);
    expect(bridge.workerWatching).toBe(true);
  }
  async function until(bridge: HostBridge, state: HostBridge["nudgeState"]): Promise<void> {
    for (let i = 0; i < 4000 && bridge.nudgeState !== state; i++) await settle(5);
    expect(bridge.nudgeState).toBe(state);
  }
  /** A "nudged" worker in 10 s slices (only a nudge or an offer wakes it), once it is watching. */
  async function watchingWorker(gateMax: number, nudgeSpinMs: number) {
    const worker = start("nudged", { sliceMs: 10_000, gate: new SharedArrayBuffer(4), gateMax, nudgeSpinMs });
    await worker.received(1);
    await watching(worker.bridge);
    return worker;
  }

  it("wakes and spins for the run, so the offer needs no wake-up, and stops spinning when it has it", async () => {
    // Only the nudge can have woken it, and it spins until the offer (up to 60 s).
    const { bridge, received } = await watchingWorker(1, 60_000);
    bridge.nudge();
    await until(bridge, "spinning");
    // A second nudge while one is out is nothing.
    bridge.nudge();
    expect(bridge.offer("run")).toBe(true);
    expect(bridge.nudgeState).toBe("none");
    // It gave its place among the spinners back before it took the run.
    expect((await received(2))[1]).toBe("run spinners:0");
    expect(bridge.stats.workerWakes).toBe(1);
  });

  it.each([
    { when: "no run follows", gateMax: 1, nudgeSpinMs: 20 },
    // Refused by the gate, it withdraws the nudge instead of spinning for a minute.
    { when: "the gate is full", gateMax: 0, nudgeSpinMs: 60_000 },
  ])("goes back to sleep when $when, and the next offer wakes it as before", async ({ gateMax, nudgeSpinMs }) => {
    const { bridge, received } = await watchingWorker(gateMax, nudgeSpinMs);
    bridge.nudge();
    await until(bridge, "none");
    await watching(bridge);
    expect(bridge.offer("run")).toBe(true);
    // It holds no place among the spinners while it sleeps or runs.
    expect((await received(2))[1]).toBe("run spinners:0");
    expect(bridge.stats.workerWakes).toBe(2);
  });

  it("loses no run to nudges racing offers and slices", async () => {
    const { bridge, received } = start("nudged", { sliceMs: 0, gate: new SharedArrayBuffer(4), gateMax: 1, nudgeSpinMs: 1 });
    await received(1);
    for (let i = 0; i < 200; i++) {
      bridge.nudge();
      if (i % 3 === 0) await new Promise((resolve) => setImmediate(resolve));
      if (!bridge.offer(`m${i}`)) bridge.nudge();
      if (i % 2 === 0) bridge.nudge();
      await received(2 + i);
    }
    expect((await received(201)).slice(1)).toStrictEqual(Array.from({ length: 200 }, (_, i) => `m${i} spinners:0`));
  });
});

describe("the host side when idle", () => {
  it("does not keep the process alive", () => {
    const script = `
      import { HostBridge } from ${JSON.stringify(new URL("../../dist/src/engine/ring.js", import.meta.url).href)};
      const bridge = new HostBridge();
      bridge.onMessage(() => {});
      setTimeout(() => console.log("still here"), 10);`;
    const child = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 20_000 });
    expect([child.status, child.stdout.trim(), child.error]).toStrictEqual([0, "still here", undefined]);
  });
});

describe("an adaptive spin or poll window", () => {
  /** Uses the window `times` times, each ending as `outcome` says; returns the windows it gave. */
  function use(window: AdaptiveWindow, times: number, outcome: "caught" | "missed" | "slow"): number[] {
    const given: number[] = [];
    for (let i = 0; i < times; i++) {
      const ms = window.next(1);
      given.push(ms);
      if (outcome === "caught") window.caught(1, ms);
      else window.missed(ms, outcome === "slow");
    }
    return given;
  }

  it("halves on each miss down to its floor, and doubles back on each catch", () => {
    const window = new AdaptiveWindow();
    expect(use(window, 3, "missed")).toEqual([1, 0.5, 0.25]);
    expect(use(window, 2, "caught")).toEqual([0.125, 0.25]);
    expect(window.current).toBe(0.5);
    use(window, 1, "slow");
    expect(window.current).toBe(0.02);
  });

  it("looks again at its maximum now and then once a busy spell left it at the floor, and keeps it when that catches", () => {
    const window = new AdaptiveWindow();
    // A loaded minute: every answer came too late; at the floor only answers under 20 µs are caught.
    use(window, 1, "slow");
    expect(use(window, 7, "missed")).toEqual(Array(7).fill(0.02));
    // The eighth use at the floor opens the whole window once; the answer came within it.
    expect(window.next(1)).toBe(1);
    window.caught(1, 1);
    expect(window.current).toBe(1);
  });

  it("goes back to the floor after a probe that missed, and probes ever less often while the machine stays busy", () => {
    const window = new AdaptiveWindow();
    use(window, 1, "slow");
    const probesAt = (uses: number): number[] =>
      use(window, uses, "missed")
        .map((ms, i) => (ms === 1 ? i + 1 : 0))
        .filter((at) => at > 0);
    // Probes after 8 uses, then 16 more, then 32 more… and then every 64 (a failed probe costs at most one 1 ms spin).
    expect(probesAt(8 + 16 + 32 + 64)).toEqual([8, 24, 56, 120]);
    expect(window.current).toBe(0.02);
    expect(probesAt(4 * 64)).toEqual([64, 128, 192, 256]);
  });

  it("never opens a window when no spin is asked for (a wait with more than one call in flight)", () => {
    const window = new AdaptiveWindow();
    use(window, 1, "slow");
    for (let i = 0; i < 100; i++) expect(window.next(0)).toBe(0);
  });
});
