/*
 * Writes a segment of legacy entries (magic 0 and 1) with Apache Kafka's own client library, as
 * an older Kafka (log.message.format.version < 0.11) left them on disk, and Kafka's reading of
 * it: tests/kafka-java/generate.sh runs it; the golden pair is in
 * tests/fixtures/kafka-java-legacy/ and segment/tests/legacy_kafka_fixture.rs checks mirrorlog
 * reads the same.
 *
 * expected.txt, one line each:
 *   batch <position> <size> <magic> <baseOffset> <lastOffset> <maxTimestamp> <codec> <timestampType>
 *   record <offset> <timestamp> <key hex or -> <value hex or ->
 */

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;

public class GenerateLegacy {
    private static SimpleRecord rec(long ts, String key, String value) {
        return new SimpleRecord(ts, key == null ? null : key.getBytes(StandardCharsets.UTF_8),
            value == null ? null : value.getBytes(StandardCharsets.UTF_8));
    }

    private static String hex(ByteBuffer b) {
        if (b == null) return "-";
        StringBuilder s = new StringBuilder();
        ByteBuffer d = b.duplicate();
        while (d.hasRemaining()) s.append(String.format("%02x", d.get()));
        return s.length() == 0 ? "\"\"" : s.toString();
    }

    public static void main(String[] args) throws Exception {
        File dir = new File(args[0]);
        File log = new File(dir, "00000000000000000000.log");
        Files.deleteIfExists(log.toPath());
        List<MemoryRecords> parts = new ArrayList<>();
        long o = 0;
        byte v0 = RecordBatch.MAGIC_VALUE_V0, v1 = RecordBatch.MAGIC_VALUE_V1;
        TimestampType ct = TimestampType.CREATE_TIME;
        parts.add(MemoryRecords.withRecords(v0, o, Compression.NONE, ct,
            rec(-1, "k0", "v0-none-a"), rec(-1, null, "v0-none-b"), rec(-1, "k2", null)));
        o += 3;
        parts.add(MemoryRecords.withRecords(v0, o, Compression.gzip().build(), ct,
            rec(-1, "g0", "v0-gzip-a"), rec(-1, "g1", "v0-gzip-b"), rec(-1, null, "v0-gzip-c")));
        o += 3;
        parts.add(MemoryRecords.withRecords(v0, o, Compression.lz4().build(), ct,
            rec(-1, "l0", "v0-lz4-a"), rec(-1, "l1", "v0-lz4-b")));
        o += 2;
        parts.add(MemoryRecords.withRecords(v1, o, Compression.NONE, ct,
            rec(1_600_000_000_000L, "k", "v1-none-a"), rec(1_600_000_000_500L, null, "v1-none-b")));
        o += 2;
        parts.add(MemoryRecords.withRecords(v1, o, Compression.gzip().build(), ct,
            rec(1_600_000_001_000L, "a", "v1-gzip-a"), rec(1_600_000_001_900L, "b", "v1-gzip-b"),
            rec(1_600_000_001_400L, "c", "v1-gzip-c")));
        o += 3;
        parts.add(MemoryRecords.withRecords(v1, o, Compression.snappy().build(), ct,
            rec(1_600_000_002_000L, "s", "v1-snappy-a"), rec(1_600_000_002_100L, "t", "v1-snappy-b")));
        o += 2;
        parts.add(MemoryRecords.withRecords(v1, o, Compression.lz4().build(), ct,
            rec(1_600_000_003_000L, "z", "v1-lz4-a"), rec(1_600_000_003_300L, "y", "v1-lz4-b")));
        o += 2;
        try (FileRecords fr = FileRecords.open(log)) {
            for (MemoryRecords m : parts) fr.append(m);
            fr.flush();
        }
        StringBuilder out = new StringBuilder();
        try (FileRecords fr = FileRecords.open(log)) {
            for (FileChannelRecordBatch b : fr.batches()) {
                b.ensureValid();
                out.append(String.format("batch %d %d %d %d %d %d %s %s%n", b.position(), b.sizeInBytes(),
                    b.magic(), b.baseOffset(), b.lastOffset(), b.maxTimestamp(),
                    b.compressionType().name, b.timestampType()));
                for (Record r : b) {
                    out.append(String.format("record %d %d %s %s%n", r.offset(), r.timestamp(),
                        hex(r.key()), hex(r.value())));
                }
            }
        }
        Files.write(new File(dir, "expected.txt").toPath(), out.toString().getBytes(StandardCharsets.UTF_8));
    }
}
