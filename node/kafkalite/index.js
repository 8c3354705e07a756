"use strict";
// Starts a kafkalite broker for Node tests and drives its test controls (reset, snapshots,
// faults, the clock, topology). The controls' methods come from controls.generated.js, generated
// from the broker's control table. No dependencies: node's child_process and fetch (Node 18+).

const { spawn } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const readline = require("node:readline");
const { GeneratedControls, CONTROL_TABLE } = require("./controls.generated.js");

// how to run the broker: a command line split at spaces, or the path of a bundle (kafkalite.pyz)
const COMMAND_ENV = "KAFKALITE_CMD";
const BUNDLE_NAME = "kafkalite.pyz";
// what the global setups publish to the test workers
const BOOTSTRAP_ENV = "KAFKA_BOOTSTRAP";
const CONTROLS_URL_ENV = "KAFKALITE_CONTROLS_URL";

class ControlError extends Error {
  constructor(name, status, text) {
    super(`control ${name}: ${text} (HTTP ${status})`);
    this.name = "ControlError";
    this.control = name;
    this.status = status;
    this.text = text;
  }
}

/** The controls of one broker, at its ready line's controls= URL. */
class Controls extends GeneratedControls {
  /** `token`: the controls' shared secret (the broker's --controls-token), sent as a bearer token;
   * by default $KAFKALITE_CONTROLS_TOKEN, which a broker started with it in its environment demands. */
  constructor(url, token = process.env.KAFKALITE_CONTROLS_TOKEN) {
    super();
    this.url = url.endsWith("/") ? url : url + "/";
    this.token = token || null;
  }

  _headers(extra = {}) {
    return this.token ? { ...extra, authorization: `Bearer ${this.token}` } : extra;
  }

  /** Runs the control `name` with `args` (an object) and resolves to its JSON result. */
  async call(name, args = {}) {
    const response = await fetch(this.url + "controls/" + name, {
      method: "POST",
      headers: this._headers({ "content-type": "application/json" }),
      body: JSON.stringify(args ?? {}),
    });
    const answer = await response.json();
    if (!response.ok) throw new ControlError(name, response.status, answer.error);
    return answer.result;
  }

  /** The broker's control table (GET /controls). */
  async list() {
    const response = await fetch(this.url + "controls", { headers: this._headers() });
    return (await response.json()).controls;
  }
}

/** The controls named by $KAFKALITE_CONTROLS_URL (set by the Jest and Vitest global setups). */
function controlsFromEnv() {
  const url = process.env[CONTROLS_URL_ENV];
  if (!url) throw new Error(`${CONTROLS_URL_ENV} is not set: is kafkalite's global setup configured?`);
  return new Controls(url);
}

/** $KAFKALITE_CMD; else a kafkalite.pyz in the working directory or a parent; else kafkalite on PATH. */
function findCommand() {
  const line = (process.env[COMMAND_ENV] || "").trim();
  if (line) {
    const fields = line.split(/\s+/);
    return fields.length === 1 && fields[0].endsWith(".pyz") ? bundleCommand(fields[0]) : fields;
  }
  for (let dir = process.cwd(); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, BUNDLE_NAME);
    if (fs.existsSync(candidate) && fs.statSync(candidate).isFile()) return bundleCommand(candidate);
    if (path.dirname(dir) === dir) break;
  }
  for (const dir of (process.env.PATH || "").split(path.delimiter)) {
    const candidate = path.join(dir, "kafkalite");
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return [candidate];
    } catch {
      // not here
    }
  }
  throw new Error(`no kafkalite: set ${COMMAND_ENV}, put a ${BUNDLE_NAME} (kafkalite bundle ${BUNDLE_NAME}) ` +
    "beside the tests, or install kafkalite on PATH");
}

function bundleCommand(file) {
  return ["python3", "-I", "-S", file];
}

function optionArgs(options) {
  const args = [];
  for (const [key, value] of Object.entries(options.config || {})) args.push("-c", `${key}=${value}`);
  if (options.nodes) args.push("--nodes", String(options.nodes));
  if (options.seed) args.push("--seed", options.seed);
  if (options.clock) args.push("--clock", options.clock);
  if (options.console) args.push("--console", "0");
  if (options.schemaRegistry) args.push("--schema-registry", "0");
  if (options.tls) {
    args.push("--listener", "PLAINTEXT://127.0.0.1:0", "--listener", "SSL://127.0.0.1:0", "--tls-self-signed");
  }
  return args.concat(options.args || []);
}

function parseReadyLine(line) {
  if (!line.startsWith("kafkalite ready ")) return null;
  const info = { listeners: {}, nodes: {} };
  for (const token of line.trim().split(/\s+/).slice(2)) {
    const at = token.indexOf("=");
    const key = token.slice(0, at);
    const value = token.slice(at + 1);
    if (key === "listeners") {
      for (const item of value.split(",")) {
        const [name, addr] = item.split("://");
        if (addr) info.listeners[name] = addr;
      }
    } else if (key === "nodes") {
      for (const item of value.split(",")) {
        const [id, addr] = item.split("@");
        if (addr) info.nodes[Number(id)] = addr;
      }
    } else {
      info[key] = value;
    }
  }
  return info;
}

class Broker {
  constructor(child, info, logPath) {
    this.child = child;
    this.bootstrap = info.bootstrap;
    this.listeners = info.listeners;
    this.nodes = info.nodes;
    this.controlsUrl = info.controls;
    this.consoleUrl = info.console;
    this.registryUrl = info.schema_registry;
    this.ca = info.ca;
    this.logPath = logPath;
    this.controls = new Controls(info.controls);
    this.exited = new Promise((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once("exit", () => resolve());
    });
  }

  reset() { return this.controls.reset(); }
  snapshot(name) { return this.controls.snapshot({ name }); }
  restore(name) { return this.controls.restore({ name }); }
  advanceClock(ms) { return this.controls.advanceClock({ ms }); }

  /** SIGTERM, SIGKILL after 10 s; removes the log. */
  async stop() {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill("SIGTERM");
      const killer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
      await this.exited;
      clearTimeout(killer);
    }
    fs.rmSync(this.logPath, { force: true });
  }
}

/**
 * Starts a broker with the controls on and resolves once it is ready.
 * options: { config: {"num.partitions": 3}, nodes, seed, clock: "manual", console, schemaRegistry,
 * tls, args: [...], timeoutMs (default 60000) }
 */
async function startKafkalite(options = {}) {
  const command = findCommand();
  const logPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kafkalite-")), "broker.log");
  const log = fs.openSync(logPath, "w");
  const args = [...command.slice(1), "--host", "127.0.0.1", "--port", "0", "--controls", "0", ...optionArgs(options)];
  const child = spawn(command[0], args, { stdio: ["ignore", "pipe", log] });
  fs.closeSync(log);
  const timeoutMs = options.timeoutMs ?? 60_000;
  const logTail = () => fs.readFileSync(logPath, "utf8").slice(-4000);
  const info = await new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout });
    const timer = setTimeout(() => fail(`no ready line within ${timeoutMs} ms`), timeoutMs);
    const fail = (why) => {
      clearTimeout(timer);
      child.kill("SIGKILL");
      reject(new Error(`kafkalite (${command.join(" ")}): ${why}\nbroker log (${logPath}):\n${logTail()}`));
    };
    child.once("error", (err) => fail(err.message));
    child.once("exit", (code) => fail(`exited with ${code} before it was ready`));
    lines.once("line", (line) => {
      const parsed = parseReadyLine(line);
      if (!parsed) return fail(`the first line is not the ready line: ${line}`);
      clearTimeout(timer);
      child.removeAllListeners("exit");
      child.removeAllListeners("error");
      child.stdout.resume(); // the broker never blocks on a full pipe
      resolve(parsed);
    });
  });
  return new Broker(child, info, logPath);
}

module.exports = {
  startKafkalite, Broker, Controls, ControlError, controlsFromEnv, findCommand, parseReadyLine, CONTROL_TABLE,
  BOOTSTRAP_ENV, CONTROLS_URL_ENV, COMMAND_ENV,
};
