"use strict";
// The package's own tests, with kafkajs; run by node's test runner (npm test) from a project
// that installed the packed package, so they require "kafkalite" as a user's tests do.
const { test, before, after, beforeEach } = require("node:test");
const assert = require("node:assert/strict");
const { Kafka, logLevel } = require("kafkajs");
const kafkalite = require("kafkalite");

function kafka(bootstrap) {
  return new Kafka({ clientId: "kafkalite-node-test", brokers: [bootstrap], logLevel: logLevel.NOTHING,
    retry: { retries: 2 } });
}

async function produce(bootstrap, topic, values) {
  const producer = kafka(bootstrap).producer({ allowAutoTopicCreation: true });
  await producer.connect();
  try {
    await producer.send({ topic, messages: values.map((value) => ({ value })) });
  } finally {
    await producer.disconnect();
  }
}

async function consume(bootstrap, topic, count) {
  const consumer = kafka(bootstrap).consumer({ groupId: `g-${topic}-${Date.now()}` });
  await consumer.connect();
  const got = [];
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`got ${JSON.stringify(got)}, wanted ${count}`)), 30_000);
      consumer.run({
        eachMessage: async ({ message }) => {
          got.push(message.value.toString());
          if (got.length >= count) { clearTimeout(timer); resolve(); }
        },
      }).catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return got;
}

async function topics(bootstrap) {
  const admin = kafka(bootstrap).admin();
  await admin.connect();
  try { return await admin.listTopics(); } finally { await admin.disconnect(); }
}

let broker;
before(async () => { broker = await kafkalite.startKafkalite({ config: { "num.partitions": 1 } }); });
after(async () => { await broker.stop(); });
beforeEach(async () => { await broker.reset(); });

test("snapshot and restore put a state back; reset empties the broker", async () => {
  await produce(broker.bootstrap, "orders", ["first"]);
  await broker.snapshot("base");
  await produce(broker.bootstrap, "orders", ["second"]);
  await broker.restore("base");
  await produce(broker.bootstrap, "orders", ["third"]);
  assert.deepEqual(await consume(broker.bootstrap, "orders", 2), ["first", "third"]);
  await broker.reset();
  assert.ok(!(await topics(broker.bootstrap)).includes("orders"));
});

test("reset before each test: the previous test's topic is gone", async () => {
  assert.ok(!(await topics(broker.bootstrap)).includes("orders"));
});

test("a fault reaches kafkajs", async () => {
  await produce(broker.bootstrap, "payments", ["warm-up"]);
  await broker.controls.failRequests({ api: "Produce", error: "TOPIC_AUTHORIZATION_FAILED", count: 1, topic: "payments" });
  await assert.rejects(produce(broker.bootstrap, "payments", ["refused"]), /not authorized|TOPIC_AUTHORIZATION/i);
  assert.deepEqual(await broker.controls.listFaults(), []);
  await produce(broker.bootstrap, "payments", ["accepted"]);
});

test("the generated client matches the broker's control table", async () => {
  const listed = (await broker.controls.list()).map(({ name, parameters }) => ({ name, parameters }));
  assert.deepEqual(listed, kafkalite.CONTROL_TABLE,
    "controls.generated.js was generated from another table: run python3 -m kafkalite.controls_codegen");
  await assert.rejects(broker.controls.call("no-such-control"), (err) => err instanceof kafkalite.ControlError && err.status === 400);
});

test("a broker of the test's own with a manual clock", async () => {
  const own = await kafkalite.startKafkalite({ clock: "manual" });
  try {
    const before = await own.controls.clock();
    await own.advanceClock(3_600_000);
    const afterwards = await own.controls.clock();
    assert.equal(before.mode, "manual");
    assert.equal(afterwards.now_ms - before.now_ms, 3_600_000);
    assert.notEqual(own.bootstrap, broker.bootstrap);
  } finally {
    await own.stop();
  }
});
