package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// pages lists a range in pages as kube-apiserver lists a resource: each
// page --limit keys, the next starting just after the last key of the one
// before, all at the revision of the first page; each page's count (the
// keys left from its start, which kube-apiserver reports as
// remainingItemCount) is checked. With --write-rate, puts of the first
// page's keys go on meanwhile, so that the pages read a revision older than
// the member's. It prints the pages' latencies as JSON.
func pages(args []string) error {
	fs := flag.NewFlagSet("pages", flag.ContinueOnError)
	endpoint := fs.String("endpoints", "127.0.0.1:2379", "the member's gRPC endpoint")
	limit := fs.Int64("limit", 500, "keys a page")
	lists := fs.Int("lists", 3, "whole lists of the range, one after the other")
	writeRate := fs.Float64("write-rate", 0, "puts a second meanwhile, of the first page's keys (0: none)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: etcd-client-bench pages [flags] FROM END")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 || *limit < 1 || *lists < 1 {
		fs.Usage()
		return fmt.Errorf("pages needs FROM and END, a --limit and --lists of at least 1")
	}
	from, end := fs.Arg(0), fs.Arg(1)
	ctx := context.Background()
	clients, err := connect(ctx, []string{*endpoint}, 1)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	if err != nil {
		return err
	}
	c := clients[0]

	var latencies []time.Duration // of every page of every list
	var listTimes []time.Duration
	keys := int64(0)
	writeCtx, stopWrites := context.WithCancel(ctx)
	defer stopWrites()
	writes := make(chan int, 1)
	for l := range *lists {
		start := time.Now()
		key, rev, n, left := from, int64(0), int64(0), int64(-1)
		for {
			opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(*limit), clientv3.WithRev(rev)}
			t := time.Now()
			resp, err := c.Get(ctx, key, opts...)
			if err != nil {
				return fmt.Errorf("list %d, page at %q: %w", l+1, key, err)
			}
			latencies = append(latencies, time.Since(t))
			if left >= 0 && resp.Count != left {
				return fmt.Errorf("list %d: a page at %q counts %d keys left, %d expected", l+1, key, resp.Count, left)
			}
			if rev == 0 {
				rev = resp.Header.Revision
				if l == 0 && *writeRate > 0 {
					var firstPage []string
					for _, kv := range resp.Kvs {
						firstPage = append(firstPage, string(kv.Key))
					}
					go putMeanwhile(writeCtx, c, firstPage, *writeRate, writes)
				}
			}
			n += int64(len(resp.Kvs))
			left = resp.Count - int64(len(resp.Kvs))
			if !resp.More {
				break
			}
			key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
		}
		listTimes = append(listTimes, time.Since(start))
		if l > 0 && n != keys {
			return fmt.Errorf("list %d read %d keys, list 1 %d", l+1, n, keys)
		}
		keys = n
	}
	stopWrites()
	written := 0
	if *writeRate > 0 {
		written = <-writes
	}
	slices.Sort(latencies)
	slices.Sort(listTimes)
	at := func(q float64) float64 { return latencies[int(q*float64(len(latencies)-1))].Seconds() }
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"keys": keys, "pages": len(latencies), "limit": *limit, "lists": *lists, "puts_meanwhile": written,
		"page_p50_seconds": at(0.5), "page_p99_seconds": at(0.99), "page_max_seconds": at(1),
		"list_median_seconds": listTimes[len(listTimes)/2].Seconds(),
	})
}

// putMeanwhile puts the keys in turn at rate a second until ctx ends, and
// sends how many it put.
func putMeanwhile(ctx context.Context, c *clientv3.Client, keys []string, rate float64, done chan<- int) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	n := 0
	for {
		select {
		case <-ctx.Done():
			done <- n
			return
		case <-tick.C:
			if _, err := c.Put(ctx, keys[n%len(keys)], "meanwhile"); err == nil {
				n++
			}
		}
	}
}
