#!/usr/bin/env node
// kafkajs transaction scenarios for compat_tests/test_transactions.py (see
// compat_tests/txn/__init__.py): plan, fence, time_out, copy. One JSON request on stdin
// {cmd, bootstrap, ...}; one JSON line on stdout {"ok": true, "result": ...} or
// {"ok": false, "error": {name, message, type}}. Logs (KAFKAJS_LOG_LEVEL) go to stderr.
'use strict'

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1'
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

function kafka(req) {
  return new Kafka({
    clientId: 'kafkalite-txn',
    brokers: [req.bootstrap],
    logLevel: logLevel[process.env.KAFKAJS_LOG_LEVEL || 'NOTHING'],
    logCreator: () => ({ namespace, level, label, log }) => {
      process.stderr.write(`${label} [${namespace}] ${log.message} ${JSON.stringify(log)}\n`)
    },
    retry: { retries: 8, initialRetryTime: 100 },
  })
}

function producer(k, tid, extra) {
  return k.producer({ transactionalId: tid, idempotent: true, maxInFlightRequests: 1, ...(extra || {}) })
}

const errName = (e) => e.type || e.name

async function plan(req) {
  const p = producer(kafka(req), req.transactional_id)
  await p.connect()
  try {
    for (const txn of req.txns) {
      const t = await p.transaction()
      for (const [topic, partition, value] of txn.records) {
        await t.send({ topic, messages: [{ value, partition }] })
      }
      if (txn.end === 'commit') await t.commit()
      else await t.abort()
    }
  } finally {
    await p.disconnect()
  }
  return true
}

async function fence(req) {
  const k = kafka(req)
  const a = producer(k, req.transactional_id)
  await a.connect()
  const ta = await a.transaction()
  await ta.send({ topic: req.topic, messages: [{ value: 'zombie-1', partition: 0 }] })
  const b = producer(k, req.transactional_id)
  await b.connect()
  const tb = await b.transaction()
  await tb.send({ topic: req.topic, messages: [{ value: 'winner', partition: 0 }] })
  await tb.commit()
  await b.disconnect()
  let name = 'NONE'
  try {
    await ta.send({ topic: req.topic, messages: [{ value: 'zombie-2', partition: 0 }] })
    await ta.commit()
  } catch (e) {
    name = errName(e)
  }
  await a.disconnect().catch(() => {})
  return name
}

// Polls until the file exists: the test creates it once the broker aborted the transaction.
async function waitForPath(path, limitMs = 60000) {
  const deadline = Date.now() + limitMs
  while (!fs.existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`${path} did not appear within ${limitMs} ms`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function timeOut(req) {
  const p = producer(kafka(req), req.transactional_id, { transactionTimeout: req.timeout_ms })
  await p.connect()
  const t = await p.transaction()
  await t.send({ topic: req.topic, messages: [{ value: 'late', partition: 0 }] })
  await waitForPath(req.until)
  let name = 'NONE'
  try {
    await t.commit()
  } catch (e) {
    name = errName(e)
  }
  await p.disconnect().catch(() => {})
  return name
}

async function copy(req) {
  const k = kafka(req)
  const consumer = k.consumer({ groupId: req.group, readUncommitted: false, sessionTimeout: 10000,
    heartbeatInterval: 1000 })
  const p = producer(k, req.transactional_id)
  await consumer.connect()
  await p.connect()
  await consumer.subscribe({ topic: req.source, fromBeginning: true })
  let copied = 0
  const deadline = Date.now() + req.timeout_ms
  await new Promise((resolve, reject) => {
    const timer = setInterval(() => { if (Date.now() > deadline) { clearInterval(timer); resolve() } }, 200)
    consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
        if (batch.messages.length === 0) return
        const t = await p.transaction()
        try {
          await t.send({ topic: req.sink, messages: batch.messages.map((m) => ({
            key: m.key, value: Buffer.concat([Buffer.from('copied:'), m.value]), partition: batch.partition })) })
          const last = batch.messages[batch.messages.length - 1]
          await t.sendOffsets({ consumerGroupId: req.group, topics: [{ topic: batch.topic, partitions: [
            { partition: batch.partition, offset: (BigInt(last.offset) + 1n).toString() }] }] })
          await t.commit()
        } catch (e) {
          await t.abort().catch(() => {})
          throw e
        }
        for (const m of batch.messages) resolveOffset(m.offset)
        copied += batch.messages.length
        await heartbeat()
        if (copied >= req.count) { clearInterval(timer); resolve() }
      },
    }).catch(reject)
  })
  await consumer.disconnect()
  await p.disconnect()
  return copied
}

const COMMANDS = { plan, fence, time_out: timeOut, copy }

async function main() {
  const chunks = []
  for await (const c of process.stdin) chunks.push(c)
  const req = JSON.parse(Buffer.concat(chunks).toString('utf8'))
  try {
    const result = await COMMANDS[req.cmd](req)
    process.stdout.write(JSON.stringify({ ok: true, result }) + '\n')
    process.exit(0)
  } catch (e) {
    process.stdout.write(JSON.stringify({ ok: false, error: { name: e.name, message: e.message, type: e.type } }) + '\n')
    process.exit(1)
  }
}

main()
