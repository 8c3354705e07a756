"use strict";
// The order findCommand looks in: KAFKALITE_CMD (a command line, or a bundle run by python3 -I -S),
// a kafkalite.pyz in the working directory or a parent, kafkalite on PATH.
const { test } = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { findCommand } = require("kafkalite");

test("findCommand: the variable, a bundle above, PATH, else an error naming them", () => {
  const saved = { cmd: process.env.KAFKALITE_CMD, path: process.env.PATH, cwd: process.cwd() };
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "kafkalite-find-"));
  try {
    process.env.KAFKALITE_CMD = "python3 -m kafkalite";
    assert.deepEqual(findCommand(), ["python3", "-m", "kafkalite"]);
    process.env.KAFKALITE_CMD = path.join(root, "cache", "kafkalite.pyz");
    assert.deepEqual(findCommand(), ["python3", "-I", "-S", path.join(root, "cache", "kafkalite.pyz")]);

    delete process.env.KAFKALITE_CMD;
    fs.writeFileSync(path.join(root, "kafkalite.pyz"), "PK");
    fs.mkdirSync(path.join(root, "service", "test"), { recursive: true });
    process.chdir(path.join(root, "service", "test"));
    assert.deepEqual(findCommand(), ["python3", "-I", "-S", path.join(root, "kafkalite.pyz")]);

    const bin = fs.mkdtempSync(path.join(os.tmpdir(), "kafkalite-bin-"));
    fs.writeFileSync(path.join(bin, "kafkalite"), "#!/bin/sh\n", { mode: 0o755 });
    process.chdir(os.tmpdir());
    process.env.PATH = bin;
    assert.deepEqual(findCommand(), [path.join(bin, "kafkalite")]);

    process.env.PATH = root;
    assert.throws(findCommand, /KAFKALITE_CMD/);
  } finally {
    process.chdir(saved.cwd);
    process.env.PATH = saved.path;
    if (saved.cmd === undefined) delete process.env.KAFKALITE_CMD;
    else process.env.KAFKALITE_CMD = saved.cmd;
  }
});
