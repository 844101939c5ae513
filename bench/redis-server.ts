// A real Redis server of a test file's or a benchmark's own: a free port, its own temporary
// directory, stopped after. Tests that need it are skipped (with the reason) only where
// redis-server is not installed; CI (.ci/run) installs it, so there they always run.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const redisInstalled = spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
export const NO_REDIS = "redis-server is not installed (apt-get install -y redis-server; .ci/run installs it)";

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export class RedisServer {
  private child: ChildProcess | undefined;
  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly durable: boolean,
    private readonly password?: string,
  ) {}

  /** `durable`: an append-only file fsynced on every write, so a restart keeps every acknowledged write. */
  static async start(options: { durable?: boolean; password?: string } = {}): Promise<RedisServer> {
    const server = new RedisServer(await freePort(), mkdtempSync(join(tmpdir(), "codemode-redis-")), options.durable ?? false, options.password);
    await server.launch();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  private async launch(): Promise<void> {
    const persistence = this.durable ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"];
    const child = spawn(
      "redis-server",
      ["--port", String(this.port), "--bind", "127.0.0.1", "--dir", this.dir, "--save", "", ...persistence, ...(this.password ? ["--requirepass", this.password] : [])],
      {
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    this.child = child;
    let out = "";
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-server did not start within 20 s:\n${out}`)), 20_000);
      child.stdout!.on("data", (d: Buffer) => {
        out += d.toString();
        if (out.includes("Ready to accept connections")) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`redis-server exited (${code}) before it was ready:\n${out}`));
      });
    });
    child.stdout!.resume();
    child.stderr!.resume();
  }

  /** Stops the server (SIGTERM: a durable one has its append-only file on disk) and starts it again on the same port. */
  async restart(): Promise<void> {
    await this.halt();
    await this.launch();
  }

  private async halt(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
  }

  async stop(): Promise<void> {
    await this.halt();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
