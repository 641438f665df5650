"""librdkafka (the confluent-kafka Python package) reads partitions from their start, as cluster.test.ts asks.

    rdkafka_read.py <bootstrap> <out.jsonl> <plan.json>

plan.json: {"isolations": [...], "tps": ["topic-0", ...], "last": {"<iso> <tp>": last offset or -1}}.
One JSON line per record, in the shape of Oracle.java's `read` (k, v and header values base64).
"""
import base64
import json
import sys
import time

import confluent_kafka
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

TT = {
    confluent_kafka.TIMESTAMP_CREATE_TIME: "CreateTime",
    confluent_kafka.TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime",
    confluent_kafka.TIMESTAMP_NOT_AVAILABLE: "NoTimestampType",
}


def b64(b):
    return None if b is None else base64.b64encode(b).decode()


def main():
    bootstrap, out, plan_file = sys.argv[1:4]
    plan = json.load(open(plan_file))
    with open(out, "w") as w:
        binding = confluent_kafka.version()
        binding = binding[0] if isinstance(binding, tuple) else binding
        w.write(json.dumps({"kind": "version", "client": "librdkafka", "version": confluent_kafka.libversion()[0],
                            "binding": binding}) + "\n")
        for iso in plan["isolations"]:
            c = Consumer({
                "bootstrap.servers": bootstrap,
                "group.id": "rdkafka-reader",
                "enable.auto.commit": False,
                "isolation.level": iso,
                "check.crcs": True,
                "enable.partition.eof": False,
            })
            tps = []
            for tp in plan["tps"]:
                topic, p = tp.rsplit("-", 1)
                tps.append(TopicPartition(topic, int(p), OFFSET_BEGINNING))
            c.assign(tps)
            want = {tp: plan["last"].get(f"{iso} {tp}", -1) for tp in plan["tps"]}
            seen = {tp: -1 for tp in plan["tps"]}
            deadline = time.time() + 180
            while any(seen[tp] < want[tp] for tp in want):
                if time.time() > deadline:
                    raise SystemExit(f"rdkafka {iso}: did not reach {want}, at {seen}")
                m = c.poll(0.5)
                if m is None:
                    continue
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise SystemExit(f"rdkafka {iso}: {m.error()}")
                tp = f"{m.topic()}-{m.partition()}"
                tt, ts = m.timestamp()
                headers = [[b64(k.encode()), b64(v)] for k, v in (m.headers() or [])]
                le = m.leader_epoch()
                w.write(json.dumps({"kind": "rec", "iso": iso, "tp": tp, "o": m.offset(), "ts": ts, "tt": TT[tt],
                                    "k": b64(m.key()), "v": b64(m.value()), "h": headers,
                                    "le": -1 if le is None else le}) + "\n")
                seen[tp] = max(seen[tp], m.offset())
            c.close()


main()
