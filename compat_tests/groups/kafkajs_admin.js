// Group administration through the kafkajs admin client, for the group tests.
// Usage: node kafkajs_admin.js '{"bootstrap": ..., "op": "list|describe|delete|offsets", "group": ..., "topic": ...}'
// Prints one JSON line with the result, or {"error": "..."}.
'use strict';
const path = require('path');
const { Kafka, logLevel } = require(path.join(__dirname, '..', 'node', 'node_modules', 'kafkajs'));

const args = JSON.parse(process.argv[2]);

async function main() {
  const kafka = new Kafka({ clientId: 'kafkajs-admin', brokers: [args.bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    let out;
    if (args.op === 'list') {
      out = await admin.listGroups();
    } else if (args.op === 'describe') {
      const res = await admin.describeGroups([args.group]);
      out = { groups: res.groups.map((g) => ({ groupId: g.groupId, state: g.state, protocolType: g.protocolType,
        protocol: g.protocol, members: g.members.map((m) => ({ memberId: m.memberId, clientId: m.clientId })) })) };
    } else if (args.op === 'delete') {
      out = await admin.deleteGroups([args.group]);
    } else if (args.op === 'offsets') {
      out = await admin.fetchOffsets({ groupId: args.group, topics: [args.topic] });
    }
    process.stdout.write(JSON.stringify(out) + '\n');
  } catch (e) {
    process.stdout.write(JSON.stringify({ error: String(e.type || e.name) + ': ' + e.message }) + '\n');
  } finally {
    await admin.disconnect();
  }
}

main().catch((e) => { process.stdout.write(JSON.stringify({ error: String(e) }) + '\n'); process.exit(1); });
