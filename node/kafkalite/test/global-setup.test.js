"use strict";
// The Jest and Vitest global setups as their runners call them: setup in the main process, the
// variables read by the tests, teardown at the end.
const { test } = require("node:test");
const assert = require("node:assert/strict");
const { Kafka, logLevel } = require("kafkajs");
const kafkalite = require("kafkalite");
const jestSetup = require("kafkalite/jest-global-setup");
const jestTeardown = require("kafkalite/jest-global-teardown");
const vitest = require("kafkalite/vitest-global-setup");

for (const [runner, setup, teardown] of [["jest", jestSetup, jestTeardown], ["vitest", vitest.setup, vitest.teardown]]) {
  test(`${runner} global setup publishes the broker and teardown stops it`, async () => {
    process.env.KAFKALITE_OPTIONS = JSON.stringify({ config: { "num.partitions": 2 } });
    await setup();
    const broker = globalThis.__KAFKALITE_BROKER__;
    try {
      assert.equal(process.env.KAFKA_BOOTSTRAP, broker.bootstrap);
      const controls = kafkalite.controlsFromEnv();
      await controls.reset();
      const admin = new Kafka({ brokers: [process.env.KAFKA_BOOTSTRAP], logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      try {
        await admin.createTopics({ topics: [{ topic: "t" }] });
        const [meta] = (await admin.fetchTopicMetadata({ topics: ["t"] })).topics;
        assert.equal(meta.partitions.length, 2);  // the options reached the broker
      } finally {
        await admin.disconnect();
      }
    } finally {
      await teardown();
      delete process.env.KAFKALITE_OPTIONS;
    }
    assert.ok(broker.child.exitCode !== null || broker.child.signalCode !== null, "the broker still runs");
  });
}
