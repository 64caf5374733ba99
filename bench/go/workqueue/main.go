// Command workqueue measures client-go's workqueue with the same scenarios as
// kubekit-bench's `workqueue` subcommand, so that bench/run.sh can compare the two in one
// run. It prints one line: `ops=<n> seconds=<s>`.
//
// Scenarios (in both, -workers goroutines share the -cycles cycles; nothing else runs):
//
//	distinct: -keys distinct keys (10,000) are queued up front; a cycle is
//	          get -> done -> add(same key): three queue operations.
//	hot:      -keys hot keys (100) are queued up front; a cycle is get -> add (the key is
//	          being processed: marked dirty) -> done (re-queued) -> add (already queued:
//	          merged): four queue operations.
package main

import (
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

func keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("default/pod-%06d", i)
	}
	return out
}

func distinct(workers, nkeys, cycles int) (int64, time.Duration) {
	q := workqueue.NewTyped[string]()
	for _, k := range keys(nkeys) {
		q.Add(k)
	}
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		quota := cycles / workers
		if w < cycles%workers {
			quota++
		}
		wg.Add(1)
		go func(quota int) {
			defer wg.Done()
			for i := 0; i < quota; i++ {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				q.Done(item)
				q.Add(item)
			}
		}(quota)
	}
	wg.Wait()
	elapsed := time.Since(start)
	q.ShutDown()
	return int64(cycles) * 3, elapsed
}

func hot(workers, nkeys, cycles int) (int64, time.Duration) {
	q := workqueue.NewTyped[string]()
	for _, k := range keys(nkeys) {
		q.Add(k)
	}
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		quota := cycles / workers
		if w < cycles%workers {
			quota++
		}
		wg.Add(1)
		go func(quota int) {
			defer wg.Done()
			for i := 0; i < quota; i++ {
				item, shutdown := q.Get()
				if shutdown {
					return
				}
				// An event for the key arrives while it is processed: marked dirty.
				q.Add(item)
				// Processing ends: the key goes back to the queue.
				q.Done(item)
				// Another event for it while it waits: merged.
				q.Add(item)
			}
		}(quota)
	}
	wg.Wait()
	elapsed := time.Since(start)
	q.ShutDown()
	return int64(cycles) * 4, elapsed
}

func main() {
	variant := flag.String("variant", "distinct", "distinct or hot")
	workers := flag.Int("workers", 1, "number of worker goroutines")
	nkeys := flag.Int("keys", 10000, "number of distinct keys")
	cycles := flag.Int("cycles", 1000000, "worker cycles in total")
	flag.Parse()

	var ops int64
	var elapsed time.Duration
	switch *variant {
	case "distinct":
		ops, elapsed = distinct(*workers, *nkeys, *cycles)
	case "hot":
		ops, elapsed = hot(*workers, *nkeys, *cycles)
	default:
		fmt.Fprintf(os.Stderr, "unknown variant %q\n", *variant)
		os.Exit(2)
	}
	fmt.Printf("ops=%d seconds=%.6f\n", ops, elapsed.Seconds())
}
