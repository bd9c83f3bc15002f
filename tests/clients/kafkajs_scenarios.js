#!/usr/bin/env node
// Real-client scenarios against `mirrorlog serve`, with kafkajs 2.2 (Node).
//
// Each subcommand is one phase of a scenario; tests/broker_kafkajs.rs starts, stops and restarts
// the broker between phases. Every check throws on failure (non-zero exit with a message), and so
// does any warning or error kafkajs logs (see `logCreator`). kafkajs is loaded from
// MIRRORLOG_NODE_MODULES (scripts/test.sh installs it there with its codecs).
//
//   kafkajs_scenarios.js codecs BOOTSTRAP
//   kafkajs_scenarios.js admin BOOTSTRAP
//   kafkajs_scenarios.js offsets BOOTSTRAP
//   kafkajs_scenarios.js txn BOOTSTRAP
//   kafkajs_scenarios.js group_phase1 BOOTSTRAP        (two members, rebalance on leave, commit)
//   kafkajs_scenarios.js group_phase2 BOOTSTRAP TOTAL  (after a restart: resume from the commit)
'use strict';
const path = require('path');
const crypto = require('crypto');

process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
const modules = process.env.MIRRORLOG_NODE_MODULES;
if (!modules) throw new Error('MIRRORLOG_NODE_MODULES is unset');
const need = (name) => require(path.join(modules, name));
const { Kafka, logLevel, CompressionTypes, CompressionCodecs, ConfigResourceTypes } = need('kafkajs');
const SnappyCodec = need('kafkajs-snappy');
const lz4 = need('lz4js');
const zstd = need('@bokuweb/zstd-wasm');

const DEADLINE_MS = 60000; // hang guard for every wait below; never a pass/fail timing

// kafkajs has gzip built in; the other codecs are plugged in. LZ4 is an LZ4 frame as Kafka's
// Lz4BlockOutputStream writes it: independent 64 KiB blocks (FLG 0x60, BD 0x40). lz4js's own
// `compress` writes dependent 4 MiB blocks, which Kafka refuses ("Dependent block stream is
// unsupported") and so does the broker, so the frame is assembled here from lz4js's block
// compressor with a fresh hash table per block. zstd is a plain zstd frame.
CompressionCodecs[CompressionTypes.Snappy] = SnappyCodec;
const xxh32 = need('lz4js/xxh32.js');
function lz4KafkaFrame(src) {
  const parts = [Buffer.from([0x04, 0x22, 0x4d, 0x18, 0x60, 0x40, 0])];
  parts[0][6] = (xxh32.hash(0, parts[0], 4, 2) >> 8) & 0xff;
  for (let i = 0; i < src.length; i += 65536) {
    const block = src.subarray(i, Math.min(i + 65536, src.length));
    const out = Buffer.alloc(lz4.compressBound(block.length));
    const n = lz4.compressBlock(block, out, 0, block.length, new Uint32Array(1 << 16));
    const len = Buffer.alloc(4);
    if (n === 0 || n >= block.length) {
      len.writeUInt32LE((0x80000000 | block.length) >>> 0);
      parts.push(len, block);
    } else {
      len.writeUInt32LE(n);
      parts.push(len, out.subarray(0, n));
    }
  }
  parts.push(Buffer.alloc(4)); // end mark
  return Buffer.concat(parts);
}
CompressionCodecs[CompressionTypes.LZ4] = () => ({
  compress: async (encoder) => lz4KafkaFrame(encoder.buffer),
  decompress: async (buffer) => Buffer.from(lz4.decompress(buffer)),
});
CompressionCodecs[CompressionTypes.ZSTD] = () => ({
  compress: async (encoder) => Buffer.from(zstd.compress(encoder.buffer, 3)),
  decompress: async (buffer) => Buffer.from(zstd.decompress(buffer)),
});

function fail(msg) {
  throw new Error(`FAIL: ${msg}`);
}

// Everything kafkajs logs at WARN or ERROR: against a correct broker a healthy run logs none of
// it, except the lines `expected` names (rebalances the scenario causes on purpose).
const logged = [];
let expected = [];
const logCreator = () => ({ namespace, level, log }) => {
  if (level > logLevel.WARN) return;
  const line = `${namespace}: ${log.message} ${JSON.stringify({ ...log, message: undefined, timestamp: undefined, logger: undefined })}`;
  if (!expected.some((re) => re.test(line))) logged.push(line);
};

function kafka(bs) {
  return new Kafka({
    clientId: 'mirrorlog-kafkajs',
    brokers: [bs],
    logLevel: logLevel.WARN,
    logCreator,
  });
}

const uid = () => crypto.randomUUID().slice(0, 8);

async function withAdmin(bs, f) {
  const a = kafka(bs).admin();
  await a.connect();
  try {
    return await f(a);
  } finally {
    await a.disconnect();
  }
}

async function createTopic(bs, topic, numPartitions, configEntries = []) {
  await withAdmin(bs, async (a) => {
    const created = await a.createTopics({ topics: [{ topic, numPartitions, configEntries }], waitForLeaders: true });
    if (!created) fail(`createTopics(${topic}) answered false`);
  });
}

// Reads `n` records of `topic` from the beginning with a fresh group; resolves with them in
// partition-then-offset order.
async function consume(bs, topic, n, isolation = 'read_uncommitted') {
  const c = kafka(bs).consumer({ groupId: `g-${uid()}`, readUncommitted: isolation === 'read_uncommitted' });
  await c.connect();
  const out = [];
  try {
    await c.subscribe({ topic, fromBeginning: true });
    await new Promise((resolve, reject) => {
      const guard = setTimeout(() => reject(new Error(`FAIL: consumed ${out.length} of ${n} within the deadline`)), DEADLINE_MS);
      c.run({
        autoCommit: false,
        eachMessage: async ({ partition, message }) => {
          out.push({ partition, ...message });
          if (out.length >= n) {
            clearTimeout(guard);
            resolve();
          }
        },
      }).catch(reject);
    });
  } finally {
    await c.disconnect();
  }
  return out;
}

async function codecs(bs) {
  const topic = `codecs-${uid()}`;
  await createTopic(bs, topic, 1);
  const sent = [];
  const baseTs = Date.now() - 10000;
  for (const [name, codec] of Object.entries({
    none: CompressionTypes.None, gzip: CompressionTypes.GZIP, snappy: CompressionTypes.Snappy,
    lz4: CompressionTypes.LZ4, zstd: CompressionTypes.ZSTD,
  })) {
    const p = kafka(bs).producer({ idempotent: true, maxInFlightRequests: 1 });
    await p.connect();
    try {
      // Four batches of 50 per codec.
      for (let b = 0; b < 4; b++) {
        const messages = [];
        for (let j = 0; j < 50; j++) {
          const i = b * 50 + j;
          const key = Buffer.from(`${name}-k${i}`);
          const value = Buffer.concat([Buffer.from(`${name}-value-${i}-` + 'x'.repeat(i % 50)), Buffer.from([i % 256])]);
          const headers = { h1: Buffer.from(`${i}`), codec: Buffer.from(name) };
          const timestamp = String(baseTs + sent.length);
          messages.push({ key, value, headers, timestamp, partition: 0 });
          sent.push({ key, value, headers, timestamp });
        }
        await p.send({ topic, acks: -1, compression: codec, messages });
      }
    } finally {
      await p.disconnect();
    }
  }
  const got = await consume(bs, topic, sent.length);
  if (got.length !== sent.length) fail(`consumed ${got.length} of ${sent.length}`);
  got.forEach((m, i) => {
    const s = sent[i];
    if (m.offset !== String(i)) fail(`record ${i} has offset ${m.offset}`);
    if (!m.key.equals(s.key) || !m.value.equals(s.value)) fail(`record mismatch at offset ${m.offset}: ${m.key} ${m.value}`);
    const hk = Object.keys(m.headers);
    if (hk.join(',') !== 'h1,codec' || !m.headers.h1.equals(s.headers.h1) || !m.headers.codec.equals(s.headers.codec)) {
      fail(`headers mismatch at offset ${m.offset}: ${JSON.stringify(m.headers)}`);
    }
    if (m.timestamp !== s.timestamp) fail(`timestamp at offset ${m.offset}: ${m.timestamp}, want ${s.timestamp}`);
  });
  console.log(JSON.stringify({ records: got.length }));
}

async function adminOps(bs) {
  await withAdmin(bs, async (a) => {
    const topic = `adm-${uid()}`;
    if (!(await a.createTopics({ topics: [{ topic, numPartitions: 2, configEntries: [{ name: 'retention.ms', value: '3600000' }] }], waitForLeaders: true }))) {
      fail('createTopics answered false');
    }
    let md = await a.fetchTopicMetadata({ topics: [topic] });
    if (md.topics[0].partitions.length !== 2) fail(`metadata after create: ${JSON.stringify(md)}`);
    const cfg = await a.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms'] }], includeSynonyms: false });
    const r = cfg.resources[0];
    if (r.errorCode !== 0) fail(`describeConfigs: ${JSON.stringify(r)}`);
    const ret = r.configEntries.find((e) => e.configName === 'retention.ms');
    if (!ret || ret.configValue !== '3600000') fail(`describeConfigs: retention.ms is ${JSON.stringify(ret)}`);
    // AlterConfigs (kafkajs has no IncrementalAlterConfigs): the configs given become the topic's.
    await a.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'max.message.bytes', value: '2000000' }] }] });
    const after = (await a.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms', 'max.message.bytes'] }], includeSynonyms: false })).resources[0].configEntries;
    const entry = (n) => after.find((e) => e.configName === n) || {};
    if (entry('max.message.bytes').configValue !== '2000000' || entry('max.message.bytes').isDefault) fail(`after alterConfigs: ${JSON.stringify(after)}`);
    if (entry('retention.ms').configValue === '3600000' || !entry('retention.ms').isDefault) fail(`retention.ms left out of alterConfigs is still set: ${JSON.stringify(after)}`);
    // An unsupported config is refused.
    let refused = false;
    expected = [/CreateTopics.*Topic creation errors/];
    try {
      await a.createTopics({ topics: [{ topic: `${topic}-c`, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }] });
    } catch (e) {
      refused = /INVALID_CONFIG|nvalid/.test(`${e.type} ${e.message} ${JSON.stringify(e.errors || [])}`);
      if (!refused) fail(`unexpected error for compact: ${e}`);
    }
    if (!refused) fail('cleanup.policy=compact was accepted');
    expected = [];
    await a.createPartitions({ topicPartitions: [{ topic, count: 4 }] });
    md = await a.fetchTopicMetadata({ topics: [topic] });
    if (md.topics[0].partitions.length !== 4) fail('createPartitions did not grow the topic');
    await a.deleteTopics({ topics: [topic] });
    if ((await a.listTopics()).includes(topic)) fail('topic still listed after delete');
  });
  console.log(JSON.stringify({ ok: true }));
}

async function offsets(bs) {
  const topic = `oft-${uid()}`;
  await createTopic(bs, topic, 1);
  const base = Date.now() - 100000;
  const p = kafka(bs).producer();
  await p.connect();
  for (let i = 0; i < 100; i++) {
    await p.send({ topic, acks: -1, messages: [{ value: `v${i}`, partition: 0, timestamp: String(base + i * 1000) }] });
  }
  await p.disconnect();
  await withAdmin(bs, async (a) => {
    const want = { 0: 0, 50: 1, 50500: 51, 99000: 99 };
    for (const [delta, off] of Object.entries(want)) {
      const r = await a.fetchTopicOffsetsByTimestamp(topic, base + Number(delta));
      if (r[0].offset !== String(off)) fail(`offsets by timestamp (${delta}) = ${JSON.stringify(r)}, want ${off}`);
    }
    // After every record: Kafka answers -1 and kafkajs resolves it to the high watermark.
    const after = await a.fetchTopicOffsetsByTimestamp(topic, base + 200000);
    if (after[0].offset !== '100') fail(`a time after every record gives ${JSON.stringify(after)}, want 100`);
    const o = await a.fetchTopicOffsets(topic);
    if (o[0].low !== '0' || o[0].high !== '100' || o[0].offset !== '100') fail(`topic offsets ${JSON.stringify(o)}`);
  });
  console.log(JSON.stringify({ ok: true }));
}

async function txn(bs) {
  const topic = `txn-${uid()}`;
  await createTopic(bs, topic, 1);
  const p = kafka(bs).producer({ transactionalId: `tx-${uid()}`, idempotent: true, maxInFlightRequests: 1 });
  await p.connect();
  const sendIn = async (prefix, n) => {
    const t = await p.transaction();
    await t.send({ topic, acks: -1, messages: Array.from({ length: n }, (_, i) => ({ value: `${prefix}-${i}`, partition: 0 })) });
    return t;
  };
  await (await sendIn('committed', 10)).commit();
  await (await sendIn('aborted', 7)).abort();
  // Consume-transform-produce: a group's offset committed with the transaction, and one
  // aborted with it.
  const group = `txg-${uid()}`;
  const offsetsAt = (offset) => ({ consumerGroupId: group, topics: [{ topic, partitions: [{ partition: 0, offset: String(offset) }] }] });
  const t = await sendIn('committed2', 5);
  await t.sendOffsets(offsetsAt(15));
  await t.commit();
  const last = await sendIn('aborted-last', 1);
  await last.sendOffsets(offsetsAt(20));
  await last.abort();
  await p.disconnect();
  const committed = await withAdmin(bs, async (a) => (await a.fetchOffsets({ groupId: group, topics: [topic] }))[0].partitions[0].offset);
  if (committed !== '15') fail(`the group's offset committed in the transaction is ${committed}, want 15`);
  const want = [...Array.from({ length: 10 }, (_, i) => `committed-${i}`), ...Array.from({ length: 5 }, (_, i) => `committed2-${i}`)];
  const rc = (await consume(bs, topic, 15, 'read_committed')).map((m) => m.value.toString());
  if (JSON.stringify(rc) !== JSON.stringify(want)) fail(`read_committed saw ${rc}`);
  const ru = (await consume(bs, topic, 23, 'read_uncommitted')).map((m) => m.value.toString());
  const all = [...want, ...Array.from({ length: 7 }, (_, i) => `aborted-${i}`), 'aborted-last-0'];
  if (JSON.stringify([...ru].sort()) !== JSON.stringify([...all].sort())) fail(`read_uncommitted saw ${ru}`);
  console.log(JSON.stringify({ read_committed: rc.length, read_uncommitted: ru.length }));
}

const GROUP_TOPIC = 'kjs-group-topic';
const GROUP = 'kjs-g-resume';

// A group member that records what it is assigned and the records it reads, committing each
// record's offset as it goes, up to `state.limit` records.
async function member(bs, name, state) {
  const c = kafka(bs).consumer({ groupId: GROUP, sessionTimeout: 10000, heartbeatInterval: 500, rebalanceTimeout: 20000 });
  c.on(c.events.GROUP_JOIN, (e) => {
    state.assigned[name] = (e.payload.memberAssignment[GROUP_TOPIC] || []).slice().sort();
  });
  await c.connect();
  await c.subscribe({ topic: GROUP_TOPIC, fromBeginning: true });
  c.run({
    autoCommit: false,
    eachMessage: async ({ topic, partition, message }) => {
      if (state.seen >= state.limit) {
        // Enough read: leave the rest for phase 2, uncommitted.
        c.pause([{ topic }]);
        return;
      }
      state.seen += 1;
      await c.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }]);
    },
  }).catch((e) => state.errors.push(String(e)));
  return c;
}

async function until(what, cond) {
  const deadline = Date.now() + DEADLINE_MS;
  while (!cond()) {
    if (Date.now() > deadline) fail(`no ${what} within the deadline`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function committedTotal(bs) {
  return withAdmin(bs, async (a) => {
    const r = await a.fetchOffsets({ groupId: GROUP, topics: [GROUP_TOPIC] });
    return r[0].partitions.reduce((s, p) => s + Math.max(Number(p.offset), 0), 0);
  });
}

async function groupPhase1(bs) {
  await createTopic(bs, GROUP_TOPIC, 4);
  const p = kafka(bs).producer();
  await p.connect();
  await p.send({ topic: GROUP_TOPIC, acks: -1, messages: Array.from({ length: 400 }, (_, i) => ({ value: `m${i}`, partition: i % 4 })) });
  await p.disconnect();
  // Rebalances are what this scenario causes: kafkajs reports them at ERROR level.
  expected = [/The group is rebalancing/];
  const state = { assigned: {}, seen: 0, errors: [], limit: 250 };
  const c1 = await member(bs, 'c1', state);
  const c2 = await member(bs, 'c2', state);
  const shared = () => {
    const a1 = state.assigned.c1 || [], a2 = state.assigned.c2 || [];
    return a1.length && a2.length && new Set([...a1, ...a2]).size === 4 && a1.length + a2.length === 4;
  };
  await until(`two members sharing the partitions (${JSON.stringify(state.assigned)})`, () => shared() && state.seen >= 100);
  await c2.disconnect();
  await until(`c1 taking every partition after c2 left (${JSON.stringify(state.assigned)})`, () => (state.assigned.c1 || []).length === 4);
  await c1.disconnect();
  if (state.errors.length) fail(`consumer errors: ${state.errors}`);
  const total = await committedTotal(bs);
  if (total !== state.seen) fail(`committed ${total}, read ${state.seen}`);
  console.log(JSON.stringify({ committed_total: total }));
}

async function groupPhase2(bs, committed) {
  expected = [/The group is rebalancing/];
  const total = await committedTotal(bs);
  if (total !== committed) fail(`committed offsets after restart sum to ${total}, before ${committed}`);
  const state = { assigned: {}, seen: 0, errors: [], limit: Infinity };
  const c = await member(bs, 'c', state);
  await until(`the rest of the records (${state.seen} of ${400 - committed})`, () => state.seen >= 400 - committed);
  await c.disconnect();
  if (state.seen !== 400 - committed) fail(`resumed consumer read ${state.seen}, want ${400 - committed}`);
  if (state.errors.length) fail(`consumer errors: ${state.errors}`);
  console.log(JSON.stringify({ resumed: state.seen }));
}

async function main() {
  const [cmd, bs, ...rest] = process.argv.slice(2);
  await zstd.init();
  const run = {
    codecs: () => codecs(bs),
    admin: () => adminOps(bs),
    offsets: () => offsets(bs),
    txn: () => txn(bs),
    group_phase1: () => groupPhase1(bs),
    group_phase2: () => groupPhase2(bs, Number(rest[0])),
  }[cmd];
  if (!run) fail(`unknown scenario ${cmd}`);
  await run();
  if (logged.length) fail(`kafkajs logged warnings or errors:\n${logged.slice(0, 20).join('\n')}`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e && e.stack ? e.stack : e);
    if (logged.length) console.error(`kafkajs logged:\n${logged.slice(0, 20).join('\n')}`);
    process.exit(1);
  },
);
