"""kafka-python (Debian python3-kafka) reads partitions from their start, as cluster.test.ts asks.

    kafka_python_read.py <bootstrap> <out.jsonl> <plan.json>

Same plan and output as rdkafka_read.py. kafka-python 2.0 has no isolation level (it fetches
read_uncommitted) and no leader epoch in its records: the plan asks it for read_uncommitted only.
"""
import base64
import json
import sys
import time

import kafka
from kafka import KafkaConsumer, TopicPartition


def b64(b):
    return None if b is None else base64.b64encode(b).decode()


def main():
    bootstrap, out, plan_file = sys.argv[1:4]
    plan = json.load(open(plan_file))
    with open(out, "w") as w:
        w.write(json.dumps({"kind": "version", "client": "kafka-python", "version": kafka.__version__}) + "\n")
        for iso in plan["isolations"]:
            c = KafkaConsumer(bootstrap_servers=bootstrap.split(","), enable_auto_commit=False,
                              auto_offset_reset="earliest", check_crcs=True, consumer_timeout_ms=1000)
            tps = []
            for tp in plan["tps"]:
                topic, p = tp.rsplit("-", 1)
                tps.append(TopicPartition(topic, int(p)))
            c.assign(tps)
            c.seek_to_beginning(*tps)
            want = {tp: plan["last"].get(f"{iso} {tp}", -1) for tp in plan["tps"]}
            seen = {tp: -1 for tp in plan["tps"]}
            deadline = time.time() + 180
            while any(seen[tp] < want[tp] for tp in want):
                if time.time() > deadline:
                    raise SystemExit(f"kafka-python {iso}: did not reach {want}, at {seen}")
                for batch in c.poll(timeout_ms=500).values():
                    for m in batch:
                        tp = f"{m.topic}-{m.partition}"
                        tt = {0: "CreateTime", 1: "LogAppendTime"}.get(m.timestamp_type, "NoTimestampType")
                        headers = [[b64(k.encode()), b64(v)] for k, v in (m.headers or [])]
                        w.write(json.dumps({"kind": "rec", "iso": iso, "tp": tp, "o": m.offset, "ts": m.timestamp,
                                            "tt": tt, "k": b64(m.key), "v": b64(m.value), "h": headers}) + "\n")
                        seen[tp] = max(seen[tp], m.offset)
            c.close()


main()
