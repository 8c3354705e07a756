// kafkajs's @kafkajs/confluent-schema-registry against a Confluent-compatible registry.
//
//   node schema_registry.js '{"url": "http://HOST:PORT/", "subject": "S", "bootstrap": "HOST:PORT", "topic": "T"}'
//
// Registers an Avro, a JSON Schema and a Protobuf schema, reads them back by id and by subject,
// encodes and decodes a value of each in Confluent's wire format, finds that an incompatible Avro
// schema is refused, and produces the Avro-encoded record to TOPIC with kafkajs (the test decodes
// it with confluent-kafka). Prints one JSON line: {"ok": true, "result": {...}} or
// {"ok": false, "error": {"name", "message"}}.
'use strict'

const { SchemaRegistry, SchemaType } = require('@kafkajs/confluent-schema-registry')
const { Kafka, logLevel } = require('kafkajs')

const AVRO = JSON.stringify({
  type: 'record', name: 'Reading', namespace: 'nodetest',
  fields: [{ name: 'sensor', type: 'string' }, { name: 'value', type: 'double' }],
})
const AVRO_BAD = JSON.stringify({
  type: 'record', name: 'Reading', namespace: 'nodetest',
  fields: [{ name: 'sensor', type: 'long' }],
})
const JSON_SCHEMA = JSON.stringify({
  type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false,
})
const PROTO = 'syntax = "proto3";\npackage nodetest;\nmessage Reading {\n  string sensor = 1;\n  double value = 2;\n}\n'

async function main (config) {
  const registry = new SchemaRegistry({ host: config.url.replace(/\/$/, '') })
  const out = {}
  const avro = await registry.register({ type: SchemaType.AVRO, schema: AVRO }, { subject: config.subject })
  out.avro_id = avro.id
  out.latest_id = await registry.getLatestSchemaId(config.subject)
  out.lookup_id = await registry.getRegistryIdBySchema(config.subject, { type: SchemaType.AVRO, schema: AVRO })
  const encoded = await registry.encode(avro.id, { sensor: 's1', value: 21.5 })
  out.encoded_prefix = Array.from(encoded.subarray(0, 5))
  const fresh = new SchemaRegistry({ host: config.url.replace(/\/$/, '') })
  out.avro_decoded = await fresh.decode(encoded)
  try {
    await registry.register({ type: SchemaType.AVRO, schema: AVRO_BAD }, { subject: config.subject })
    out.bad_refused = false
  } catch (err) {
    out.bad_refused = true
    out.bad_message = String(err.message)
  }
  const json = await registry.register({ type: SchemaType.JSON, schema: JSON_SCHEMA }, { subject: config.subject + '-json' })
  out.json_decoded = await fresh.decode(await registry.encode(json.id, { name: 'ada' }))
  const proto = await registry.register({ type: SchemaType.PROTOBUF, schema: PROTO }, { subject: config.subject + '-proto' })
  out.proto_decoded = await fresh.decode(await registry.encode(proto.id, { sensor: 's2', value: 3 }))
  out.ids = [avro.id, json.id, proto.id]

  const kafka = new Kafka({ clientId: 'sr-test', brokers: [config.bootstrap], logLevel: logLevel.ERROR })
  const producer = kafka.producer({ allowAutoTopicCreation: true })
  await producer.connect()
  await producer.send({ topic: config.topic, messages: [{ value: encoded }] })
  await producer.disconnect()
  return out
}

main(JSON.parse(process.argv[2]))
  .then(result => { process.stdout.write(JSON.stringify({ ok: true, result }) + '\n') })
  .catch(err => {
    process.stdout.write(JSON.stringify({ ok: false, error: { name: err.name, message: String(err.stack || err) } }) + '\n')
    process.exitCode = 1
  })
