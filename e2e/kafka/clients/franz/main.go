// franz-go reads partitions from their start, as cluster.test.ts asks.
//
//	franz-read <bootstrap> <out.jsonl> <plan.json>
//
// Same plan and output as rdkafka_read.py (offset, timestamp and its type, key, value, headers,
// leader epoch; bytes base64, null kept apart from empty).
package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type plan struct {
	Isolations []string         `json:"isolations"`
	Tps        []string         `json:"tps"`
	Last       map[string]int64 `json:"last"`
}

func b64(b []byte) *string {
	if b == nil {
		return nil
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s
}

func version() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "github.com/twmb/franz-go" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	os.Exit(1)
}

func main() {
	bootstrap, out, planFile := os.Args[1], os.Args[2], os.Args[3]
	raw, err := os.ReadFile(planFile)
	if err != nil {
		fail("%v", err)
	}
	var p plan
	if err := json.Unmarshal(raw, &p); err != nil {
		fail("%v", err)
	}
	f, err := os.Create(out)
	if err != nil {
		fail("%v", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	enc.Encode(map[string]string{"kind": "version", "client": "franz-go", "version": version()})
	for _, iso := range p.Isolations {
		parts := map[string]map[int32]kgo.Offset{}
		want := map[string]int64{}
		seen := map[string]int64{}
		for _, tp := range p.Tps {
			i := strings.LastIndex(tp, "-")
			n, _ := strconv.Atoi(tp[i+1:])
			if parts[tp[:i]] == nil {
				parts[tp[:i]] = map[int32]kgo.Offset{}
			}
			parts[tp[:i]][int32(n)] = kgo.NewOffset().AtStart()
			want[tp] = -1
			if v, ok := p.Last[iso+" "+tp]; ok {
				want[tp] = v
			}
			seen[tp] = -1
		}
		level := kgo.ReadUncommitted()
		if iso == "read_committed" {
			level = kgo.ReadCommitted()
		}
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
			kgo.ConsumePartitions(parts),
			kgo.FetchIsolationLevel(level),
		)
		if err != nil {
			fail("%v", err)
		}
		deadline := time.Now().Add(180 * time.Second)
		behind := func() bool {
			for tp, v := range want {
				if seen[tp] < v {
					return true
				}
			}
			return false
		}
		for behind() {
			if time.Now().After(deadline) {
				fail("franz-go %s: did not reach %v, at %v", iso, want, seen)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			fetches := cl.PollFetches(ctx)
			cancel()
			fetches.EachError(func(t string, part int32, err error) {
				if err != context.DeadlineExceeded {
					fail("franz-go %s %s-%d: %v", iso, t, part, err)
				}
			})
			fetches.EachRecord(func(r *kgo.Record) {
				tp := fmt.Sprintf("%s-%d", r.Topic, r.Partition)
				tt := "CreateTime"
				if r.Attrs.TimestampType() == 1 {
					tt = "LogAppendTime"
				}
				headers := [][2]*string{}
				for _, h := range r.Headers {
					headers = append(headers, [2]*string{b64([]byte(h.Key)), b64(h.Value)})
				}
				enc.Encode(map[string]any{
					"kind": "rec", "iso": iso, "tp": tp, "o": r.Offset, "ts": r.Timestamp.UnixMilli(), "tt": tt,
					"k": b64(r.Key), "v": b64(r.Value), "h": headers, "le": r.LeaderEpoch,
				})
				if r.Offset > seen[tp] {
					seen[tp] = r.Offset
				}
			})
		}
		cl.Close()
	}
	if err := w.Flush(); err != nil {
		fail("%v", err)
	}
	f.Close()
}
