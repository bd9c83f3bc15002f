// Test oracle generator for mirrorlog.
//
// Uses Apache Kafka's own Java client record classes (kafka-clients 4.3.0,
// package org.apache.kafka.common.record.internal in that release) to
//   1. write ONE Kafka log segment, <outdir>/00000000000000000000.log, made of
//      v2 (magic 2) record batches appended back to back through
//      FileRecords.append, with contiguous increasing offsets from 0, exactly
//      as a broker's LogSegment stores them; and
//   2. re-open that file with FileRecords.open and print Kafka's reader view
//      of every batch and record as JSON lines to <outdir>/expected.jsonl.
//
// Everything is deterministic (fixed timestamps, fixed java.util.Random seeds,
// no wall clock), so two runs with the same jars produce identical bytes.
//
// Usage: java -cp build/classes:jars/* GenerateFixture OUTDIR
//
// ---------------------------------------------------------------------------
// Byte rendering rule (keys, values, header values):
//   * absent (null) -> JSON null
//   * otherwise decode the bytes as UTF-8 (RFC 3629 / Unicode Table 3-7: no
//     overlong forms, no surrogates D800-DFFF, nothing above U+10FFFF).
//     If the whole byte string is valid, the result is that text.
//     Otherwise scan left to right: at each position, if a complete valid
//     UTF-8 sequence starts there, emit its character and skip over it;
//     if not, emit the 4 characters `\xNN` (backslash, 'x', two lowercase hex
//     digits) for that ONE byte and advance by one byte.
//   This is exactly Rust's `bytes.utf8_chunks()`, keeping each chunk's
//   `valid()` text and rendering every byte of `invalid()` as `\xNN`
//   (format!("\\x{:02x}", b)). The rendering is not injective: valid text
//   that literally contains `\xff` renders the same as the byte 0xff (the
//   fixture contains such a pair on purpose).
//   Header keys are Java Strings (Kafka decodes them as UTF-8) and are
//   emitted as is.
// JSON string escaping: `"` -> \" , `\` -> \\ , every char < 0x20 -> backslash-u00XX
// (lowercase hex); everything else (including DEL and non-ASCII) is written
// raw as UTF-8.
// ---------------------------------------------------------------------------

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.message.LeaderChangeMessage;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;

public final class GenerateFixture {

    /** 2023-11-14T22:13:20Z; all timestamps are derived from it. */
    static final long T0 = 1_700_000_000_000L;

    static final String LOG_NAME = "00000000000000000000.log";
    static final String JSON_NAME = "expected.jsonl";

    private final FileRecords log;
    private long nextOffset = 0;

    private GenerateFixture(FileRecords log) {
        this.log = log;
    }

    // ------------------------------------------------------------------ main

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: GenerateFixture OUTDIR");
            System.exit(2);
        }
        selfTestRendering();

        File outDir = new File(args[0]);
        if (!outDir.isDirectory() && !outDir.mkdirs()) {
            throw new IOException("cannot create output directory " + outDir);
        }
        File logFile = new File(outDir, LOG_NAME);
        Files.deleteIfExists(logFile.toPath());

        // Write: mutable FileRecords, appended batch by batch like a broker.
        FileRecords out = FileRecords.open(logFile);
        try {
            new GenerateFixture(out).writeAll();
            out.flush();
        } finally {
            out.close();
        }

        // Read back with Kafka's reader API only.
        StringBuilder json = new StringBuilder();
        FileRecords in = FileRecords.open(logFile, false);
        try {
            long expectedOffset = 0;
            int expectedPosition = 0;
            int n = 0;
            for (FileChannelRecordBatch batch : in.batches()) {
                batch.ensureValid(); // CRC check by Kafka
                check(batch.magic() == RecordBatch.MAGIC_VALUE_V2, "magic != 2");
                check(batch.baseOffset() == expectedOffset, "offsets not contiguous at batch " + n);
                check(batch.position() == expectedPosition, "positions not back to back at batch " + n);
                expectedOffset = batch.lastOffset() + 1;
                expectedPosition += batch.sizeInBytes();
                batchJson(json, batch);
                json.append('\n');
                n++;
            }
            check(expectedPosition == in.sizeInBytes(), "trailing bytes after last batch");
            System.err.printf("GenerateFixture: %d batches, %d records (offsets 0..%d), %d bytes -> %s%n",
                    n, expectedOffset, expectedOffset - 1, in.sizeInBytes(), logFile);
        } finally {
            in.close();
        }
        Files.write(new File(outDir, JSON_NAME).toPath(), json.toString().getBytes(StandardCharsets.UTF_8));
    }

    // --------------------------------------------------------------- writing

    private void writeAll() throws IOException {
        final int noPid = -1;          // RecordBatch.NO_PRODUCER_ID
        final short noEpoch = -1;      // RecordBatch.NO_PRODUCER_EPOCH
        final int noSeq = -1;          // RecordBatch.NO_SEQUENCE
        final long noLat = -1;         // RecordBatch.NO_TIMESTAMP (no log append time)
        final TimestampType ct = TimestampType.CREATE_TIME;

        // 0: basics, uncompressed, partitionLeaderEpoch 0.
        data("basics", Compression.NONE, ct, noLat, noPid, noEpoch, noSeq, false, 0, Arrays.asList(
                rec(T0, "key-0", "value-0"),
                rec(T0 + 1, null, "value with null key"),
                rec(T0 + 2, "tombstone-key", null),
                rec(T0 + 3, "", ""),
                // earlier than the batch's base timestamp: negative timestamp delta
                rec(T0 - 5_000, "late", "timestamp before the batch base timestamp"),
                rec(T0 + 4, null, null)));

        // 1: text and binary rendering cases.
        Random bin = new Random(42);
        data("text+binary", Compression.NONE, ct, noLat, noPid, noEpoch, noSeq, false, 3, Arrays.asList(
                rec(T0 + 10, "ключ", "значение — ünïcödé ✓"),
                rec(T0 + 11, "日本語キー", "emoji 🎉🚀 (4-byte UTF-8)"),
                rec(T0 + 12, "json \"specials\" \\ back\\slash /",
                        "ctl:\u0000\u0001\t\n\r\u001f\u007f end"),
                // literal text \xff (valid ASCII) vs the single byte 0xff: same rendering
                rec(T0 + 13, utf8("\\xff"), bytes(0xff), null),
                rec(T0 + 14, randomBytes(bin, 16), randomBytes(bin, 64), null),
                rec(T0 + 15,
                        concat(utf8("ab"), bytes(0xff), utf8("cd"), bytes(0xc3)),
                        concat(utf8("overlong:"), bytes(0xc0, 0xaf),
                                utf8(" surrogate:"), bytes(0xed, 0xa0, 0x80),
                                utf8(" trunc4:"), bytes(0xf0, 0x9f, 0x98), utf8("x"),
                                utf8(" >10FFFF:"), bytes(0xf4, 0x90, 0x80, 0x80),
                                utf8(" lone-cont:"), bytes(0x80),
                                utf8(" fe/ff:"), bytes(0xfe, 0xff),
                                utf8(" euro:"), bytes(0xe2, 0x82, 0xac),
                                utf8(" trunc3:"), bytes(0xe2, 0x82), utf8("A"),
                                utf8(" 4byte-ok:"), bytes(0xf0, 0x9f, 0x98, 0x80),
                                utf8(" max:"), bytes(0xf4, 0x8f, 0xbf, 0xbf),
                                utf8(" end")),
                        null),
                rec(T0 + 16, bytes(0x00), bytes(0x00, 0x7f, 0x80, 0xff), null)));

        // 2: headers.
        data("headers", Compression.NONE, ct, noLat, noPid, noEpoch, noSeq, false, 3, Arrays.asList(
                rec(T0 + 20, utf8("h0"), utf8("three headers"), hdrs(
                        hdr("content-type", utf8("application/json")),
                        hdr("trace-id", randomBytes(new Random(7), 16)),
                        hdr("empty", new byte[0]))),
                rec(T0 + 21, utf8("h1"), utf8("null header value and duplicate keys"), hdrs(
                        hdr("nullable", null),
                        hdr("dup", utf8("first")),
                        hdr("dup", utf8("second")))),
                rec(T0 + 22, null, utf8("unicode header key, empty header key, binary header value"), hdrs(
                        hdr("ключ-заголовка", utf8("значение 🎉")),
                        hdr("", utf8("empty key")),
                        hdr("bin", bytes(0x00, 0xff, 0x10, 0x80)))),
                rec(T0 + 23, utf8("h3"), utf8("no headers"), null),
                rec(T0 + 24, utf8("h4"), null, hdrs(hdr("tombstone-with-header", utf8("yes"))))));

        // 3: many records (300), a few null keys and tombstones.
        List<SimpleRecord> many = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            String key = (i % 50 == 7) ? null : String.format("k-%03d", i);
            String value = (i % 75 == 74) ? null : "v" + i + ":" + "abcdefghijklmnopq".substring(0, i % 17);
            many.add(rec(T0 + 1_000 + i, key, value));
        }
        data("many", Compression.NONE, ct, noLat, noPid, noEpoch, noSeq, false, 3, many);

        // 4: a large (40 KiB) value.
        data("large", Compression.NONE, ct, noLat, noPid, noEpoch, noSeq, false, 3, Arrays.asList(
                rec(T0 + 2_000, utf8("large"), randomText(new Random(40), 40 * 1024), null),
                rec(T0 + 2_001, "after-large", "small")));

        // 5-8: one batch per codec. Each has a ~66 KB record so lz4 (64 KiB
        // blocks) and snappy (32 KiB blocks) produce multi-block frames.
        data("gzip", Compression.gzip().build(), ct, noLat, noPid, noEpoch, noSeq, false, 4, codecRecords("gzip", T0 + 3_000));
        data("snappy", Compression.snappy().build(), ct, noLat, noPid, noEpoch, noSeq, false, 4, codecRecords("snappy", T0 + 4_000));
        data("lz4", Compression.lz4().build(), ct, noLat, noPid, noEpoch, noSeq, false, 4, codecRecords("lz4", T0 + 5_000));
        data("zstd", Compression.zstd().build(), ct, noLat, noPid, noEpoch, noSeq, false, 4, codecRecords("zstd", T0 + 6_000));

        // 9-10: idempotent producer 1000/epoch 2, sequences 0..2 then 3..6.
        data("idempotent", Compression.NONE, ct, noLat, 1000L, (short) 2, 0, false, 4, Arrays.asList(
                rec(T0 + 7_000, "idem-0", "seq 0"),
                rec(T0 + 7_001, "idem-1", "seq 1"),
                rec(T0 + 7_002, "idem-2", "seq 2")));
        data("idempotent zstd", Compression.zstd().build(), ct, noLat, 1000L, (short) 2, 3, false, 4, Arrays.asList(
                rec(T0 + 7_010, utf8("idem-3"), utf8("seq 3"), hdrs(hdr("p", utf8("1000")))),
                rec(T0 + 7_011, utf8("idem-4"), utf8("seq 4"), hdrs(hdr("p", utf8("1000")))),
                rec(T0 + 7_012, utf8("idem-5"), null, hdrs(hdr("p", null))),
                rec(T0 + 7_013, null, utf8("seq 6"), null)));

        // 11: transaction of producer 2000/epoch 1 begins.
        data("txn A part 1", Compression.NONE, ct, noLat, 2000L, (short) 1, 0, true, 4, Arrays.asList(
                rec(T0 + 8_000, "txA-0", "committed 0"),
                rec(T0 + 8_001, "txA-1", "committed 1"),
                rec(T0 + 8_002, "txA-2", "committed 2")));
        // 12: an unrelated idempotent gzip batch interleaved inside the open transaction.
        data("idempotent gzip (other producer)", Compression.gzip().build(), ct, noLat, 1001L, (short) 0, 0, false, 4,
                Arrays.asList(
                        rec(T0 + 8_010, "other-0", "interleaved 0"),
                        rec(T0 + 8_011, "other-1", "interleaved 1")));
        // 13: more of transaction A, compressed.
        data("txn A part 2 snappy", Compression.snappy().build(), ct, noLat, 2000L, (short) 1, 3, true, 4, Arrays.asList(
                rec(T0 + 8_020, utf8("txA-3"), utf8("committed 3"), hdrs(hdr("txn", utf8("A")))),
                rec(T0 + 8_021, utf8("txA-4"), utf8("committed 4"), hdrs(hdr("txn", utf8("A"))))));
        // 14: COMMIT marker for producer 2000, coordinator epoch 7.
        marker("COMMIT txn A", T0 + 8_100, 4, 2000L, (short) 1, ControlRecordType.COMMIT, 7);

        // 15: transaction of producer 3000/epoch 4, lz4, then ABORT with coordinator epoch 9.
        data("txn B lz4", Compression.lz4().build(), ct, noLat, 3000L, (short) 4, 0, true, 5, Arrays.asList(
                rec(T0 + 9_000, "txB-0", "aborted 0"),
                rec(T0 + 9_001, "txB-1", null),
                rec(T0 + 9_002, null, "aborted 2")));
        marker("ABORT txn B", T0 + 9_100, 5, 3000L, (short) 4, ControlRecordType.ABORT, 9);

        // 17: KRaft LEADER_CHANGE control batch, leader epoch 6.
        leaderChange("LEADER_CHANGE", T0 + 10_000, 6);

        // 18-19: LogAppendTime batches (broker-assigned time in max_timestamp).
        long lat = T0 + 3_600_000;
        data("log_append_time", Compression.NONE, TimestampType.LOG_APPEND_TIME, lat, noPid, noEpoch, noSeq, false, 6,
                Arrays.asList(
                        rec(T0 + 11_000, "lat-0", "create time replaced by log append time"),
                        rec(T0 + 11_500, "lat-1", "v"),
                        rec(T0 + 10_500, null, "v")));
        data("log_append_time zstd", Compression.zstd().build(), TimestampType.LOG_APPEND_TIME, lat + 1, noPid, noEpoch,
                noSeq, false, 6, Arrays.asList(
                        rec(T0 + 12_000, "lat-z-0", "compressed log append time"),
                        rec(T0 + 12_001, "lat-z-1", null)));

        // 20: idempotent with extreme values: producerId > 2^53 (JSON
        // precision trap), max epoch, base sequence about to wrap.
        data("idempotent extremes", Compression.NONE, ct, noLat, 9_007_199_254_740_993L, Short.MAX_VALUE,
                Integer.MAX_VALUE - 1, false, 6, Arrays.asList(
                        rec(T0 + 13_000, "x-0", "seq max-1"),
                        rec(T0 + 13_001, "x-1", "seq max"),
                        rec(T0 + 13_002, "x-2", "seq wraps to 0")));

        // 21: a final plain batch after everything.
        data("tail", Compression.NONE, ct, noLat, noPid, noEpoch, noSeq, false, 6, Arrays.asList(
                rec(T0 + 14_000, "tail-0", "last batch"),
                rec(T0 + 14_001, "tail-1", "end of segment")));
    }

    private static List<SimpleRecord> codecRecords(String codec, long ts) {
        List<SimpleRecord> r = new ArrayList<>();
        r.add(rec(ts, utf8(codec + "-0"), utf8("hello from " + codec),
                hdrs(hdr("codec", utf8(codec)), hdr("n", utf8("0")))));
        r.add(rec(ts + 1, null, utf8("null key in " + codec + " batch"),
                hdrs(hdr("codec", utf8(codec)), hdr("nullable", null))));
        r.add(rec(ts + 2, utf8(codec + "-tombstone"), null, hdrs(hdr("codec", utf8(codec)))));
        r.add(rec(ts + 3, utf8(codec + "-ünï"), utf8("UTF-8 ✓ 🎉 in " + codec), null));
        r.add(rec(ts + 4, concat(utf8(codec), bytes(0xff, 0x00)), randomBytes(new Random(codec.hashCode()), 24),
                hdrs(hdr("bin", bytes(0xde, 0xad, 0xbe, 0xef)))));
        StringBuilder big = new StringBuilder();
        for (int i = 0; big.length() < 66_000; i++) {
            big.append(codec).append(" line ").append(i).append(": the quick brown fox jumps over the lazy dog ")
                    .append((i * 7919) % 10007).append('\n');
        }
        r.add(rec(ts + 5, utf8(codec + "-bulk"), utf8(big.toString()), hdrs(hdr("size", utf8("~66KB")))));
        return r;
    }

    /** Builds one data batch starting at nextOffset and appends it to the log. */
    private void data(String label, Compression compression, TimestampType tsType, long logAppendTime,
                      long producerId, short producerEpoch, int baseSequence, boolean transactional,
                      int partitionLeaderEpoch, List<SimpleRecord> records) throws IOException {
        ByteBuffer buf = ByteBuffer.allocate(64 * 1024);
        MemoryRecordsBuilder b = new MemoryRecordsBuilder(buf, RecordBatch.MAGIC_VALUE_V2, compression, tsType,
                nextOffset, logAppendTime, producerId, producerEpoch, baseSequence, transactional,
                false, partitionLeaderEpoch, Integer.MAX_VALUE);
        for (SimpleRecord r : records) {
            b.append(r);
        }
        appendBatch(label, b.build());
    }

    private void marker(String label, long ts, int partitionLeaderEpoch, long producerId, short producerEpoch,
                        ControlRecordType type, int coordinatorEpoch) throws IOException {
        appendBatch(label, MemoryRecords.withEndTransactionMarker(nextOffset, ts, partitionLeaderEpoch,
                producerId, producerEpoch, new EndTransactionMarker(type, coordinatorEpoch)));
    }

    private void leaderChange(String label, long ts, int leaderEpoch) throws IOException {
        List<LeaderChangeMessage.Voter> voters = new ArrayList<>();
        for (int id = 1; id <= 3; id++) {
            voters.add(new LeaderChangeMessage.Voter().setVoterId(id));
        }
        LeaderChangeMessage msg = new LeaderChangeMessage()
                .setLeaderId(2)
                .setVoters(voters)
                .setGrantingVoters(voters.subList(0, 2));
        appendBatch(label, MemoryRecords.withLeaderChangeMessage(nextOffset, ts, leaderEpoch,
                ByteBuffer.allocate(256), msg));
    }

    private void appendBatch(String label, MemoryRecords records) throws IOException {
        int position = log.sizeInBytes();
        int count = 0;
        for (MutableRecordBatch batch : records.batches()) {
            check(batch.baseOffset() == nextOffset, label + ": unexpected base offset");
            nextOffset = batch.lastOffset() + 1;
            count++;
        }
        check(count == 1, label + ": expected exactly one batch");
        log.append(records);
        System.err.printf("  pos %6d  %-34s %6d bytes%n", position, label, records.sizeInBytes());
    }

    // --------------------------------------------------------- record helpers

    private static SimpleRecord rec(long ts, String key, String value) {
        return new SimpleRecord(ts, key == null ? null : utf8(key), value == null ? null : utf8(value));
    }

    private static SimpleRecord rec(long ts, byte[] key, byte[] value, Header[] headers) {
        return new SimpleRecord(ts, key, value, headers == null ? Record.EMPTY_HEADERS : headers);
    }

    private static Header[] hdrs(Header... h) {
        return h;
    }

    private static Header hdr(String key, byte[] value) {
        return new RecordHeader(key, value);
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] bytes(int... v) {
        byte[] b = new byte[v.length];
        for (int i = 0; i < v.length; i++) {
            b[i] = (byte) v[i];
        }
        return b;
    }

    private static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        byte[] out = new byte[n];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    private static byte[] randomBytes(Random r, int n) {
        byte[] b = new byte[n];
        r.nextBytes(b);
        return b;
    }

    private static byte[] randomText(Random r, int n) {
        String alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:-_/\n";
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) alphabet.charAt(r.nextInt(alphabet.length()));
        }
        return b;
    }

    // ----------------------------------------------------------- JSON output

    private static void batchJson(StringBuilder sb, FileChannelRecordBatch b) {
        sb.append('{');
        field(sb, "position").append(b.position()).append(',');
        field(sb, "base_offset").append(b.baseOffset()).append(',');
        field(sb, "last_offset").append(b.lastOffset()).append(',');
        field(sb, "size_bytes").append(b.sizeInBytes()).append(',');
        field(sb, "partition_leader_epoch").append(b.partitionLeaderEpoch()).append(',');
        field(sb, "magic").append(b.magic()).append(',');
        field(sb, "crc").append(b.checksum()).append(','); // already unsigned (long)
        field(sb, "compression");
        str(sb, compressionName(b)).append(',');
        field(sb, "timestamp_type");
        str(sb, timestampTypeName(b.timestampType())).append(',');
        field(sb, "transactional").append(b.isTransactional()).append(',');
        field(sb, "control").append(b.isControlBatch()).append(',');
        field(sb, "producer_id").append(b.producerId()).append(',');
        field(sb, "producer_epoch").append(b.producerEpoch()).append(',');
        field(sb, "base_sequence").append(b.baseSequence()).append(',');
        Integer count = b.countOrNull();
        check(count != null, "v2 batch without record count");
        field(sb, "record_count").append(count).append(',');
        field(sb, "max_timestamp").append(b.maxTimestamp()).append(',');
        field(sb, "records").append('[');
        int seen = 0;
        for (Record r : b) {
            if (seen > 0) {
                sb.append(',');
            }
            r.ensureValid();
            if (b.isControlBatch()) {
                controlRecordJson(sb, r);
            } else {
                dataRecordJson(sb, r);
            }
            seen++;
        }
        check(seen == count, "record_count mismatch at offset " + b.baseOffset());
        sb.append("]}");
    }

    private static void dataRecordJson(StringBuilder sb, Record r) {
        sb.append('{');
        field(sb, "offset").append(r.offset()).append(',');
        field(sb, "timestamp").append(r.timestamp()).append(',');
        field(sb, "key");
        bytesJson(sb, r.hasKey() ? toBytes(r.key()) : null).append(',');
        field(sb, "value");
        bytesJson(sb, r.hasValue() ? toBytes(r.value()) : null).append(',');
        field(sb, "headers").append('[');
        Header[] headers = r.headers();
        for (int i = 0; i < headers.length; i++) {
            if (i > 0) {
                sb.append(',');
            }
            sb.append('{');
            field(sb, "key");
            str(sb, headers[i].key()).append(',');
            field(sb, "value");
            bytesJson(sb, headers[i].value());
            sb.append('}');
        }
        sb.append("]}");
    }

    private static void controlRecordJson(StringBuilder sb, Record r) {
        ControlRecordType type = ControlRecordType.parse(r.key());
        sb.append('{');
        field(sb, "offset").append(r.offset()).append(',');
        field(sb, "timestamp").append(r.timestamp()).append(',');
        field(sb, "control_type");
        str(sb, controlTypeName(type)).append(',');
        field(sb, "coordinator_epoch");
        if (type == ControlRecordType.ABORT || type == ControlRecordType.COMMIT) {
            sb.append(EndTransactionMarker.deserialize(r).coordinatorEpoch());
        } else {
            sb.append("null");
        }
        sb.append('}');
    }

    private static String compressionName(RecordBatch b) {
        switch (b.compressionType()) {
            case NONE: return "none";
            case GZIP: return "gzip";
            case SNAPPY: return "snappy";
            case LZ4: return "lz4";
            case ZSTD: return "zstd";
            default: throw new IllegalStateException("unknown compression " + b.compressionType());
        }
    }

    private static String timestampTypeName(TimestampType t) {
        switch (t) {
            case CREATE_TIME: return "create_time";
            case LOG_APPEND_TIME: return "log_append_time";
            default: throw new IllegalStateException("unexpected timestamp type " + t);
        }
    }

    /**
     * abort|commit|leader_change|unknown for what this fixture contains.
     * Kafka 4.3 has no MIRROR_PID_RESET type; its KRaft-only types
     * (SNAPSHOT_HEADER, ...) would be emitted as their lowercased enum name.
     */
    private static String controlTypeName(ControlRecordType t) {
        switch (t) {
            case ABORT: return "abort";
            case COMMIT: return "commit";
            case LEADER_CHANGE: return "leader_change";
            case UNKNOWN: return "unknown";
            default: return t.name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    private static byte[] toBytes(ByteBuffer bb) {
        ByteBuffer d = bb.duplicate();
        byte[] out = new byte[d.remaining()];
        d.get(out);
        return out;
    }

    private static StringBuilder field(StringBuilder sb, String name) {
        return str(sb, name).append(':');
    }

    private static StringBuilder bytesJson(StringBuilder sb, byte[] b) {
        if (b == null) {
            return sb.append("null");
        }
        return str(sb, render(b));
    }

    /** JSON string literal: escapes '"', '\\' and chars < 0x20 (as backslash-u00xx). */
    private static StringBuilder str(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"') {
                sb.append("\\\"");
            } else if (c == '\\') {
                sb.append("\\\\");
            } else if (c < 0x20) {
                sb.append(String.format("\\u%04x", (int) c));
            } else {
                sb.append(c);
            }
        }
        return sb.append('"');
    }

    // ------------------------------------------------------ byte rendering

    /** See the rule at the top of this file. */
    static String render(byte[] b) {
        StringBuilder sb = new StringBuilder();
        int runStart = 0;
        int i = 0;
        while (i < b.length) {
            int n = validSequenceLength(b, i);
            if (n > 0) {
                i += n;
                continue;
            }
            sb.append(new String(b, runStart, i - runStart, StandardCharsets.UTF_8));
            sb.append(String.format("\\x%02x", b[i] & 0xff));
            i++;
            runStart = i;
        }
        sb.append(new String(b, runStart, i - runStart, StandardCharsets.UTF_8));
        return sb.toString();
    }

    /**
     * Length (1-4) of the well-formed UTF-8 sequence starting at b[i], or 0.
     * Unicode Table 3-7:
     *   00..7F
     *   C2..DF 80..BF
     *   E0     A0..BF 80..BF
     *   E1..EC 80..BF 80..BF
     *   ED     80..9F 80..BF
     *   EE..EF 80..BF 80..BF
     *   F0     90..BF 80..BF 80..BF
     *   F1..F3 80..BF 80..BF 80..BF
     *   F4     80..8F 80..BF 80..BF
     */
    static int validSequenceLength(byte[] b, int i) {
        int c0 = b[i] & 0xff;
        if (c0 <= 0x7f) {
            return 1;
        }
        int len;
        int lo = 0x80;
        int hi = 0xbf; // allowed range of the second byte
        if (c0 >= 0xc2 && c0 <= 0xdf) {
            len = 2;
        } else if (c0 == 0xe0) {
            len = 3; lo = 0xa0;
        } else if ((c0 >= 0xe1 && c0 <= 0xec) || c0 == 0xee || c0 == 0xef) {
            len = 3;
        } else if (c0 == 0xed) {
            len = 3; hi = 0x9f;
        } else if (c0 == 0xf0) {
            len = 4; lo = 0x90;
        } else if (c0 >= 0xf1 && c0 <= 0xf3) {
            len = 4;
        } else if (c0 == 0xf4) {
            len = 4; hi = 0x8f;
        } else {
            return 0;
        }
        if (i + len > b.length) {
            return 0;
        }
        int c1 = b[i + 1] & 0xff;
        if (c1 < lo || c1 > hi) {
            return 0;
        }
        for (int k = 2; k < len; k++) {
            int ck = b[i + k] & 0xff;
            if (ck < 0x80 || ck > 0xbf) {
                return 0;
            }
        }
        return len;
    }

    private static void selfTestRendering() {
        expectRender(bytes(), "");
        expectRender(utf8("plain"), "plain");
        expectRender(utf8("é🎉"), "é🎉");
        expectRender(bytes(0x61, 0xff, 0x62), "a\\xff" + "b");
        expectRender(bytes(0xe2, 0x82, 0x41), "\\xe2\\x82A");
        expectRender(bytes(0xc0, 0xaf), "\\xc0\\xaf");
        expectRender(bytes(0xed, 0xa0, 0x80), "\\xed\\xa0\\x80");
        expectRender(bytes(0xf4, 0x90, 0x80, 0x80), "\\xf4\\x90\\x80\\x80");
        expectRender(bytes(0xf0, 0x9f, 0x98), "\\xf0\\x9f\\x98");
        expectRender(bytes(0xc3), "\\xc3");
        expectRender(bytes(0x00, 0x0a), "\u0000\n");
        // whole-string validity must agree with Java's strict UTF-8 decoder,
        // on random strings drawn from the boundary bytes of Table 3-7
        int[] edge = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf,
                0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xfe, 0xff};
        Random r = new Random(1);
        for (int iter = 0; iter < 200_000; iter++) {
            byte[] b = new byte[r.nextInt(7)];
            for (int k = 0; k < b.length; k++) {
                b[k] = (byte) edge[r.nextInt(edge.length)];
            }
            boolean strict;
            try {
                StandardCharsets.UTF_8.newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT)
                        .decode(ByteBuffer.wrap(b));
                strict = true;
            } catch (CharacterCodingException e) {
                strict = false;
            }
            boolean mine = true;
            for (int i = 0; i < b.length; ) {
                int n = validSequenceLength(b, i);
                if (n == 0) {
                    mine = false;
                    break;
                }
                i += n;
            }
            check(strict == mine, "validity disagrees with JDK decoder for " + Arrays.toString(b));
            if (mine) {
                check(render(b).equals(new String(b, StandardCharsets.UTF_8)), "render of valid bytes");
            }
        }
    }

    private static void expectRender(byte[] in, String want) {
        String got = render(in);
        check(got.equals(want), "render(" + Arrays.toString(in) + ") = " + got + ", want " + want);
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("GenerateFixture check failed: " + what);
        }
    }
}
