#!/usr/bin/env python3
"""Legacy (magic 0/1) message sets built and read by kafka-python (Debian python3-kafka 2.0.2).

  generate DIR   writes kafka-python-legacy.json: entries built by LegacyRecordBatchBuilder and
                 the records LegacyRecordBatch reads back from them.
  decode         reads a JSON list of hex entries on stdin, prints the records kafka-python reads.

kafka-python writes compressed wrappers with offset 0 and timestamp 0; like a broker would, the
generator then sets the wrapper offset to the last inner absolute offset (the offset field is not
covered by the CRC). Run with /usr/bin/python3 (the Debian packages live there).
"""
import json
import struct
import sys

from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3}


def records_of(entry):
    magic = entry[16]
    batch = LegacyRecordBatch(bytes(entry), magic)
    out = []
    for r in batch:
        out.append({
            "offset": r.offset,
            "timestamp": r.timestamp,
            "timestampType": r.timestamp_type,
            "key": None if r.key is None else bytes(r.key).hex(),
            "value": None if r.value is None else bytes(r.value).hex(),
            "crc": r.checksum,
        })
    return out


def messages(n, seed):
    out = []
    for i in range(n):
        key = None if i % 4 == 1 else ("" if i % 4 == 2 else f"k{seed}.{i}").encode()
        value = None if i % 5 == 3 else (f"v{seed}.{i};" * (i % 3 + 1)).encode()
        out.append((key, value))
    return out


def build(magic, codec, base, n, seed):
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=CODECS[codec], batch_size=1 << 20)
    entries = []
    for i, (key, value) in enumerate(messages(n, seed)):
        ts = 1_500_000_000_000 + seed * 1000 + (i * 37) % 11
        # Compressed v1: inner offsets relative (0..n-1); v0 and uncompressed: absolute.
        offset = i if (codec != "none" and magic == 1) else base + i
        builder.append(offset, timestamp=ts, key=key, value=value)
    buf = bytearray(builder.build())
    if codec != "none":
        struct.pack_into(">q", buf, 0, base + n - 1)
        entries.append(bytes(buf))
    else:
        pos = 0
        while pos < len(buf):
            size = struct.unpack_from(">i", buf, pos + 8)[0]
            entries.append(bytes(buf[pos:pos + 12 + size]))
            pos += 12 + size
    return entries


def generate(outdir):
    cases = []
    seed = 0
    for magic in (0, 1):
        for codec in ("none", "gzip", "snappy", "lz4"):
            seed += 1
            entries = build(magic, codec, 1000 * seed, 4 if codec == "none" else 6, seed)
            cases.append({
                "name": f"v{magic}-{codec}",
                "magic": magic,
                "codec": CODECS[codec],
                "entries": [e.hex() for e in entries],
                "records": [r for e in entries for r in records_of(e)],
            })
    with open(f"{outdir}/kafka-python-legacy.json", "w") as f:
        json.dump({"generator": "kafka-python 2.0.2 LegacyRecordBatchBuilder", "cases": cases}, f, indent=1)
        f.write("\n")


def decode():
    entries = json.load(sys.stdin)
    json.dump([records_of(bytes.fromhex(e)) for e in entries], sys.stdout)


if __name__ == "__main__":
    if sys.argv[1] == "generate":
        generate(sys.argv[2])
    else:
        decode()
