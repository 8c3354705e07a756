// One kafkajs consumer-group member for the group tests (see members.py for the line protocol).
// Usage: node kafkajs_member.js '<json config>'
'use strict';
const path = require('path');
const readline = require('readline');
const { Kafka, logLevel } = require(path.join(__dirname, '..', 'node', 'node_modules', 'kafkajs'));

const cfg = JSON.parse(process.argv[2]);
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');

async function main() {
  const kafka = new Kafka({ clientId: cfg.client_id || 'kafkajs-member', brokers: [cfg.bootstrap], logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({
    groupId: cfg.group,
    sessionTimeout: cfg.session_timeout_ms || 6000,
    heartbeatInterval: cfg.heartbeat_interval_ms || 500,
    metadataMaxAge: 1000,
    // kafkajs heartbeats between fetches: a fetch must not outlast the session
    maxWaitTimeInMs: 200,
    retry: { retries: 10 },
  });
  const positions = new Map(); // partition -> next offset to commit
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    const parts = (e.payload.memberAssignment[cfg.topic] || []).slice().sort((a, b) => a - b);
    emit({ event: 'assigned', partitions: parts });
  });
  consumer.on(consumer.events.CRASH, (e) => emit({ event: 'error', message: String(e.payload.error) }));
  await consumer.connect();
  await consumer.subscribe({ topics: [cfg.topic], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      emit({ event: 'record', partition, offset: Number(message.offset), value: message.value ? message.value.toString() : '' });
      positions.set(partition, (BigInt(message.offset) + 1n).toString());
    },
  });
  const rl = readline.createInterface({ input: process.stdin });
  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    await consumer.disconnect();
    emit({ event: 'closed' });
    process.exit(0);
  };
  rl.on('line', async (line) => {
    const cmd = line.trim();
    if (cmd === 'commit') {
      const offsets = [...positions.entries()].map(([partition, offset]) => ({ topic: cfg.topic, partition, offset }));
      try {
        if (offsets.length) await consumer.commitOffsets(offsets);
        emit({ event: 'committed' });
      } catch (e) {
        emit({ event: 'error', message: String(e) });
      }
    } else if (cmd === 'close') {
      await close();
    }
  });
  rl.on('close', close);
}

main().catch((e) => { emit({ event: 'error', message: String(e) }); process.exit(1); });
