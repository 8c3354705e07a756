#!/usr/bin/env node
// kafkajs driver for the compatibility suite: one request per process.
//
//   node driver.js < request.json > reply.json
//
// The request is one JSON object {cmd, bootstrap, ...}; cmd is produce, consume or admin.
// The reply is one JSON line: {"ok": true, "result": ...} or {"ok": false, "error": {...}}.
// Bytes travel as base64 strings, absent values as null. kafkajs logs nothing unless
// KAFKAJS_LOG_LEVEL (NOTHING, ERROR, WARN, INFO, DEBUG) says so; logs go to stderr.
'use strict'
const fs = require('fs')

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'

const {
  Kafka,
  logLevel,
  CompressionTypes,
  CompressionCodecs,
  Partitioners,
} = require('kafkajs')
const Batch = require('kafkajs/src/consumer/batch')

// ---------------------------------------------------------------- codecs
// kafkajs ships gzip only; the other codecs are registered from npm packages, loaded on first use.

function lazyCodec(load) {
  let codec = null
  return () => {
    if (codec === null) codec = load()
    return codec
  }
}

CompressionCodecs[CompressionTypes.Snappy] = lazyCodec(() => require('kafkajs-snappy')())

// LZ4 frames (pure JS; see lz4codec.js for why not lz4js's own frame code).
CompressionCodecs[CompressionTypes.LZ4] = lazyCodec(() => require('./lz4codec')())

CompressionCodecs[CompressionTypes.ZSTD] = lazyCodec(() => {
  const zstd = require('@mongodb-js/zstd')
  return {
    async compress(encoder) {
      return zstd.compress(encoder.buffer, 3)
    },
    async decompress(buffer) {
      return zstd.decompress(buffer)
    },
  }
})

const COMPRESSION = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
}

// ---------------------------------------------------------------- helpers

class Unsupported extends Error {
  constructor(message) {
    super(message)
    this.name = 'Unsupported'
  }
}

const b64 = buf => (buf === null || buf === undefined ? null : Buffer.from(buf).toString('base64'))
const unb64 = s => (s === null || s === undefined ? null : Buffer.from(s, 'base64'))

function logLevelFromEnv() {
  const name = (process.env.KAFKAJS_LOG_LEVEL || 'NOTHING').toUpperCase()
  return logLevel[name] !== undefined ? logLevel[name] : logLevel.NOTHING
}

// req.security: {ssl: {ca, cert, key} (PEM file paths), sasl: {mechanism, username, password}}
function securityOptions(req) {
  const s = req.security || {}
  const out = {}
  if (s.ssl) {
    out.ssl = { ca: [fs.readFileSync(s.ssl.ca)] }
    if (s.ssl.cert) Object.assign(out.ssl, { cert: fs.readFileSync(s.ssl.cert), key: fs.readFileSync(s.ssl.key) })
  }
  if (s.sasl) out.sasl = s.sasl
  return out
}

function makeKafka(req) {
  const timeoutMs = req.timeoutMs || 10000
  return new Kafka({
    ...securityOptions(req),
    clientId: req.clientId || 'kafkalite-compat-kafkajs',
    brokers: [req.bootstrap],
    logLevel: logLevelFromEnv(),
    connectionTimeout: Math.min(3000, timeoutMs),
    requestTimeout: Math.max(1000, Math.min(30000, timeoutMs)),
    retry: { retries: req.retries === undefined ? 3 : req.retries, initialRetryTime: 50, maxRetryTime: 1000 },
  })
}

// kafkajs keeps the factory of its Cluster (metadata, leaders, connections) behind a symbol.
function createCluster(kafka, options) {
  const sym = Object.getOwnPropertySymbols(kafka).find(s => s.description === 'private:Kafka:createCluster')
  if (!sym) throw new Error('kafkajs internals changed: no private:Kafka:createCluster')
  return kafka[sym](options)
}

// kafkajs headers are an object {key: value | [values]}: representable only when grouping by key
// and JS property order (integer-like keys first) reproduce the record's header order.
function toKafkajsHeaders(headers) {
  const obj = {}
  for (const [k, v] of headers) {
    // kafkajs's record encoder measures header values with Buffer.byteLength: null throws.
    if (v === null) throw new Unsupported('kafkajs: a header with a null value cannot be sent')
    const value = unb64(v)
    if (!(k in obj)) obj[k] = value
    else if (Array.isArray(obj[k])) obj[k].push(value)
    else obj[k] = [obj[k], value]
  }
  const flattened = Object.keys(obj).flatMap(k => (Array.isArray(obj[k]) ? obj[k] : [obj[k]]).map(v => [k, v]))
  const same =
    flattened.length === headers.length &&
    flattened.every(([k, v], i) => k === headers[i][0] && b64(v) === headers[i][1])
  if (!same) {
    throw new Unsupported(
      'kafkajs: headers are a JS object, this header order cannot be sent (interleaved duplicate or integer-like keys)'
    )
  }
  return obj
}

function fromKafkajsHeaders(headers) {
  const out = []
  for (const k of Object.keys(headers || {})) {
    const v = headers[k]
    for (const one of Array.isArray(v) ? v : [v]) out.push([k, b64(one)])
  }
  return out
}

function acksOf(acks) {
  const s = String(acks === undefined ? 'all' : acks).toLowerCase()
  if (s === 'all' || s === '-1') return -1
  if (s === '1') return 1
  if (s === '0') return 0
  throw new Error(`bad acks ${acks}`)
}

// ---------------------------------------------------------------- produce

async function produce(req) {
  const kafka = makeKafka(req)
  const compression = COMPRESSION[req.compression || 'none']
  if (compression === undefined) throw new Unsupported(`kafkajs: compression ${req.compression}`)
  const acks = acksOf(req.acks)

  // Remember the partition the partitioner picked for each message object.
  const chosen = new Map()
  const createPartitioner = () => {
    const inner = Partitioners.DefaultPartitioner()
    return args => {
      const p = inner(args)
      chosen.set(args.message, p)
      return p
    }
  }

  const messages = req.messages.map(m => {
    const msg = { key: unb64(m.key), value: unb64(m.value) }
    if (m.headers && m.headers.length) msg.headers = toKafkajsHeaders(m.headers)
    if (m.timestamp !== null && m.timestamp !== undefined) msg.timestamp = String(m.timestamp)
    const partition = m.partition !== null && m.partition !== undefined ? m.partition : req.partition
    if (partition !== null && partition !== undefined) msg.partition = partition
    return msg
  })

  const producer = kafka.producer({
    createPartitioner,
    idempotent: !!req.idempotent,
    maxInFlightRequests: req.idempotent ? 1 : undefined,
    allowAutoTopicCreation: req.allowAutoTopicCreation !== false,
  })
  await producer.connect()
  try {
    const results = []
    for (const chunk of chunks(messages, req.maxBatchBytes || MAX_BATCH_BYTES)) {
      const meta = await producer.send({
        topic: req.topic,
        messages: chunk,
        acks,
        compression,
        timeout: req.timeoutMs || 10000,
      })
      const base = new Map()
      for (const r of meta) {
        if (r.errorCode) throw new Error(`produce error code ${r.errorCode} on partition ${r.partition}`)
        base.set(r.partition, BigInt(r.baseOffset))
      }
      const seen = new Map()
      for (const msg of chunk) {
        const p = chosen.has(msg) ? chosen.get(msg) : msg.partition
        const index = seen.get(p) || 0
        seen.set(p, index + 1)
        results.push({ partition: p, offset: base.has(p) ? Number(base.get(p) + BigInt(index)) : -1 })
      }
    }
    return results
  } finally {
    await producer.disconnect()
  }
}

// kafkajs puts everything one send() gets for a partition into one record batch (it has no
// batch.size). The Java client and librdkafka close a batch at batch.size, so a large record
// travels alone; to keep batches within a broker's default max.message.bytes (1048588) the
// messages go out in consecutive sends of at most this many (estimated) bytes, in order.
const MAX_BATCH_BYTES = 512 * 1024

function estimatedSize(msg) {
  let n = 24 + (msg.key ? msg.key.length : 0) + (msg.value ? msg.value.length : 0)
  for (const [k, v] of Object.entries(msg.headers || {})) {
    for (const one of Array.isArray(v) ? v : [v]) n += 8 + Buffer.byteLength(k) + (one ? one.length : 0)
  }
  return n
}

function chunks(messages, limit) {
  const out = []
  let current = []
  let size = 0
  for (const msg of messages) {
    const n = estimatedSize(msg)
    if (current.length && size + n > limit) {
      out.push(current)
      current = []
      size = 0
    }
    current.push(msg)
    size += n
  }
  if (current.length || out.length === 0) out.push(current)
  return out
}

// ---------------------------------------------------------------- consume

// Partitions assigned directly, no group: kafkajs's consumer only works in a group, so this
// drives kafkajs's own Cluster, Fetch and ListOffsets requests and its Batch class (which drops
// control records, aborted transactions and records below the fetch offset) the way its
// consumer does.
async function consume(req) {
  const kafka = makeKafka(req)
  const isolationLevel = req.isolation === 'read_committed' ? 1 : 0
  const deadline = Date.now() + (req.timeoutMs || 30000)
  const cluster = createCluster(kafka, {
    metadataMaxAge: 300000,
    allowAutoTopicCreation: false,
    isolationLevel,
  })
  await cluster.connect()
  try {
    const topic = req.topic
    await cluster.addTargetTopic(topic)
    const partitions = req.partitions

    const next = new Map()
    if (req.start === 'earliest' || req.start === 'latest') {
      const offsets = await cluster.fetchTopicsOffset([
        { topic, partitions: partitions.map(p => ({ partition: p })), fromBeginning: req.start === 'earliest' },
      ])
      for (const { partitions: ps } of offsets) for (const { partition, offset } of ps) next.set(partition, BigInt(offset))
    } else if (typeof req.start === 'object' && req.start !== null) {
      for (const p of partitions) next.set(p, BigInt(req.start[String(p)]))
    } else {
      for (const p of partitions) next.set(p, BigInt(req.start))
    }

    const out = []
    while (out.length < req.count && Date.now() < deadline) {
      const perLeader = cluster.findLeaderForPartitions(topic, partitions)
      if (Object.keys(perLeader).length === 0) {
        // no leader known (yet): look again shortly instead of spinning
        await new Promise(resolve => setTimeout(resolve, 100))
        await cluster.refreshMetadata()
        continue
      }
      const maxWaitTime = Math.max(10, Math.min(req.maxWaitMs || 200, deadline - Date.now()))
      const fetches = Object.keys(perLeader).map(async nodeId => {
        const broker = await cluster.findBroker({ nodeId })
        const requested = perLeader[nodeId].map(p => ({
          partition: p,
          fetchOffset: next.get(p).toString(),
          maxBytes: req.maxPartitionBytes || 4 * 1024 * 1024,
        }))
        const { responses } = await broker.fetch({
          maxWaitTime,
          minBytes: 1,
          maxBytes: req.maxBytes || 32 * 1024 * 1024,
          isolationLevel,
          topics: [{ topic, partitions: requested }],
        })
        const batches = []
        for (const { topicName, partitions: pds } of responses) {
          for (const pd of pds) {
            const asked = requested.find(r => r.partition === pd.partition)
            batches.push(new Batch(topicName, asked.fetchOffset, pd))
          }
        }
        return batches
      })
      for (const batches of await Promise.all(fetches)) {
        for (const batch of batches) {
          if (batch.isEmptyIncludingFiltered()) continue
          next.set(batch.partition, BigInt(batch.lastOffset()) + 1n)
          for (const m of batch.messages) {
            if (out.length >= req.count) break
            out.push({
              partition: batch.partition,
              offset: Number(m.offset),
              timestamp: Number(m.timestamp),
              key: b64(m.key),
              value: b64(m.value),
              headers: fromKafkajsHeaders(m.headers),
            })
          }
        }
      }
    }
    return out
  } finally {
    await cluster.disconnect()
  }
}

// ---------------------------------------------------------------- admin

// {op, args}: calls kafka.admin()[op](...args) and returns its result as JSON.
async function admin(req) {
  const kafka = makeKafka(req)
  const adm = kafka.admin()
  if (typeof adm[req.op] !== 'function') throw new Unsupported(`kafkajs admin has no ${req.op}`)
  await adm.connect()
  try {
    if (req.op === 'deleteTopicRecords') {
      // kafkajs looks the leaders up before loading the topic's metadata: a fresh admin (one per
      // process here) fails with "Topic metadata not loaded" unless the topic is loaded first.
      await adm.fetchTopicMetadata({ topics: [req.args[0].topic] })
    }
    const result = await adm[req.op](...(req.args || []))
    return result === undefined ? null : result
  } catch (e) {
    if (req.op === 'deleteTopicRecords' && /reading 'some'/.test(String(e.message))) {
      // kafkajs's retry handler reads e.partitions of any retriable error and so hides the cause
      e.message += ' (kafkajs hid the cause: DeleteRecords failed without a per-partition error,' +
        ' e.g. the broker closed the connection)'
    }
    throw e
  } finally {
    await adm.disconnect()
  }
}

// ---------------------------------------------------------------- main

function errorJson(e) {
  const error = {
    name: (e && e.name) || 'Error',
    message: String((e && e.message) || e),
    unsupported: e instanceof Unsupported,
  }
  for (const k of ['type', 'code', 'retriable', 'broker', 'topic', 'partition']) {
    if (e && e[k] !== undefined) error[k] = e[k]
  }
  if (e && e.originalError) error.original = errorJson(e.originalError)
  if (e && Array.isArray(e.errors)) error.errors = e.errors.map(errorJson)
  return error
}

function reply(obj) {
  const text = JSON.stringify(obj, (k, v) => {
    if (typeof v === 'bigint') return v.toString()
    if (v && v.type === 'Buffer' && Array.isArray(v.data)) return Buffer.from(v.data).toString('base64')
    return v
  })
  process.stdout.write(text + '\n', () => process.exit(0))
}

async function main() {
  const chunks = []
  for await (const c of process.stdin) chunks.push(c)
  const req = JSON.parse(Buffer.concat(chunks).toString('utf8'))
  const hardLimit = (req.timeoutMs || 30000) + 5000
  setTimeout(() => {
    reply({ ok: false, error: { name: 'DriverTimeout', message: `no answer within ${hardLimit} ms` } })
  }, hardLimit).unref()
  const commands = { produce, consume, admin }
  const command = commands[req.cmd]
  try {
    if (!command) throw new Error(`unknown cmd ${req.cmd}`)
    reply({ ok: true, result: await command(req) })
  } catch (e) {
    reply({ ok: false, error: errorJson(e) })
  }
}

main()
