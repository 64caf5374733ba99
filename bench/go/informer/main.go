// Command informer is the client-go side of the informer benchmark: it runs a stock
// client-go shared Pod informer (or, with --resource, the shared informer of another
// built-in kind, or the dynamic informer of the benchmark's custom resource widgets) against an API server so that the Rust benchmark
// orchestrator can compare it with kubekit's informer. With the environment gates
// KUBE_FEATURE_ClientsAllowCBOR=true and KUBE_FEATURE_ClientsPreferCBOR=true it reports
// itself as client-go-cbor.
//
// Protocol (the orchestrator runs this program as a child and reads its stdout):
//
//  1. Start the Pod informer of a SharedInformerFactory (no resync) against --server (plain
//     http, no auth; e.g. a replay server) or --kubeconfig, and wait for its cache to sync.
//  2. Print one line and flush:
//     synced {"client":"client-go","objects":N,"sync_seconds":S,"cpu_seconds":C,"rss_bytes":R,"peak_rss_bytes":P}
//     N: keys in the informer's store; S: seconds from factory.Start to sync;
//     C: user+system CPU seconds of the process so far; R, P: VmRSS and VmHWM in bytes.
//  3. If --updates is 0, exit 0. Otherwise wait (without a timeout: the orchestrator kills
//     a hung child) until M = --updates updates that change a pod's resourceVersion have
//     been delivered, print one line and exit 0:
//     updated {"client":"client-go","updates":M,"seconds":T,"events_per_second":E,"cpu_seconds":C,"rss_bytes":R,"peak_rss_bytes":P}
//     T: seconds from the first counted update to the M-th; E: (M-1)/T (0 if M is 1).
//
// Usage errors about --server/--kubeconfig exit 2; every other error exits 1. Logs (klog)
// go to stderr only.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// syncedReport is the JSON payload of the `synced` line.
type syncedReport struct {
	Client       string  `json:"client"`
	Objects      int     `json:"objects"`
	SyncSeconds  float64 `json:"sync_seconds"`
	CPUSeconds   float64 `json:"cpu_seconds"`
	RSSBytes     int64   `json:"rss_bytes"`
	PeakRSSBytes int64   `json:"peak_rss_bytes"`
}

// updatedReport is the JSON payload of the `updated` line.
type updatedReport struct {
	Client          string  `json:"client"`
	Updates         int     `json:"updates"`
	Seconds         float64 `json:"seconds"`
	EventsPerSecond float64 `json:"events_per_second"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	RSSBytes        int64   `json:"rss_bytes"`
	PeakRSSBytes    int64   `json:"peak_rss_bytes"`
}

// usage is the resource usage of this process at one moment.
type usage struct {
	cpuSeconds float64
	rss, hwm   int64
}

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "informer: "+format+"\n", args...)
	os.Exit(code)
}

// measure returns the process's user+system CPU time and its VmRSS and VmHWM in bytes.
func measure() (usage, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}, fmt.Errorf("getrusage: %w", err)
	}
	u := usage{cpuSeconds: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()}

	f, err := os.Open("/proc/self/status")
	if err != nil {
		return usage{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Lines look like "VmRSS:\t   12345 kB".
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return usage{}, fmt.Errorf("parse /proc/self/status %s: %w", name, err)
		}
		if name == "VmRSS" {
			u.rss = kb * 1024
		} else {
			u.hwm = kb * 1024
		}
	}
	if err := sc.Err(); err != nil {
		return usage{}, fmt.Errorf("read /proc/self/status: %w", err)
	}
	if u.rss == 0 || u.hwm == 0 {
		return usage{}, errors.New("VmRSS or VmHWM missing from /proc/self/status")
	}
	return u, nil
}

// emit prints `tag <json>` as one line. os.Stdout is unbuffered in Go, so the single
// write reaches the orchestrator's pipe immediately; nothing needs flushing.
func emit(tag string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fail(1, "encode %s report: %v", tag, err)
	}
	if _, err := fmt.Fprintf(os.Stdout, "%s %s\n", tag, b); err != nil {
		fail(1, "write %s line: %v", tag, err)
	}
}

func main() {
	flag.CommandLine.Init(os.Args[0], flag.ContinueOnError)
	server := flag.String("server", "", "API server URL (plain http, no auth), e.g. a replay server")
	kubeconfig := flag.String("kubeconfig", "", "path to a kubeconfig for a real cluster (instead of --server)")
	updates := flag.Int("updates", 0, "after sync, wait for this many MODIFIED events, then report their rate")
	resource := flag.String("resource", "pods", "what to cache: pods, deployments, configmaps, secrets, events or nodes (typed, SharedInformerFactory), or widgets (the benchmark's custom resource, dynamic informer)")
	if err := flag.CommandLine.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		os.Exit(1) // the flag package has already printed the error and the usage
	}
	if flag.NArg() > 0 {
		fail(1, "unexpected arguments: %q", flag.Args())
	}
	if (*server == "") == (*kubeconfig == "") {
		fail(2, "exactly one of --server and --kubeconfig must be given")
	}
	if *updates < 0 {
		fail(1, "--updates must not be negative, got %d", *updates)
	}

	var config *rest.Config
	if *server != "" {
		config = &rest.Config{Host: *server}
	} else {
		var err error
		if config, err = clientcmd.BuildConfigFromFlags("", *kubeconfig); err != nil {
			fail(1, "load kubeconfig %s: %v", *kubeconfig, err)
		}
	}
	// No client-side rate limiting: rest.RESTClientFor and kubernetes.NewForConfig only
	// build a token-bucket limiter when QPS > 0 (0 means the default of 5), and a request
	// with no limiter is never throttled.
	config.QPS = -1
	// Everything else is left as client-go users get it: JSON content type (CBOR is an
	// alpha, off-by-default gate) and the default WatchList behaviour. In client-go v0.35
	// the WatchListClient feature gate is Beta and ON by default (client-go/features/
	// known_features.go: {Version: 1.35, Default: true}; kubernetes PR #134180), so the
	// reflector asks for a watch-list stream (sendInitialEvents=true) and falls back to
	// LIST+WATCH if the server refuses it. KUBE_FEATURE_WatchListClient=false turns it off.

	// The client's name: with KUBE_FEATURE_ClientsAllowCBOR and ClientsPreferCBOR (client-go's
	// environment gates) the dynamic client asks for CBOR first.
	client := "client-go"
	if os.Getenv("KUBE_FEATURE_ClientsPreferCBOR") == "true" {
		client = "client-go-cbor"
	}
	var informer cache.SharedIndexInformer
	var startInformers func(stop <-chan struct{})
	switch *resource {
	case "pods", "configmaps", "secrets", "events", "nodes", "deployments":
		clientset, err := kubernetes.NewForConfig(config)
		if err != nil {
			fail(1, "create clientset: %v", err)
		}
		factory := informers.NewSharedInformerFactory(clientset, 0)
		// ForResource gives the factory's typed informer of a built-in resource, the one
		// factory.Core().V1().Pods() (or Apps().V1().Deployments()) gives.
		gvr := schema.GroupVersionResource{Version: "v1", Resource: *resource}
		if *resource == "deployments" {
			gvr.Group = "apps"
		}
		generic, err := factory.ForResource(gvr)
		if err != nil {
			fail(1, "the informer of %v: %v", gvr, err)
		}
		informer = generic.Informer()
		startInformers = factory.Start
	case "widgets":
		// A custom resource without generated clients: client-go's dynamic informer.
		dyn, err := dynamic.NewForConfig(config)
		if err != nil {
			fail(1, "create dynamic client: %v", err)
		}
		factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
		gvr := schema.GroupVersionResource{Group: "bench.kubekit.dev", Version: "v1", Resource: "widgets"}
		informer = factory.ForResource(gvr).Informer()
		startInformers = factory.Start
	default:
		fail(2, "--resource %q: expected pods, deployments, configmaps, secrets, events, nodes or widgets", *resource)
	}

	// Handlers of one registration run on a single goroutine, one at a time; main reads
	// the times only after done is closed, which orders those reads after the writes.
	var adds atomic.Int64 // counted as the brief asks; not part of the report
	var counted int
	var firstUpdate, lastUpdate time.Time
	done := make(chan struct{})
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { adds.Add(1) },
		UpdateFunc: func(oldObj, newObj any) {
			oldMeta, err1 := meta.Accessor(oldObj)
			newMeta, err2 := meta.Accessor(newObj)
			if err1 != nil || err2 != nil || oldMeta.GetResourceVersion() == newMeta.GetResourceVersion() || counted >= *updates {
				return
			}
			now := time.Now()
			counted++
			if counted == 1 {
				firstUpdate = now
			}
			if counted == *updates {
				lastUpdate = now
				close(done)
			}
		},
	})
	if err != nil {
		fail(1, "add event handler: %v", err)
	}

	stop := make(chan struct{})
	start := time.Now()
	startInformers(stop)
	if !cache.WaitForCacheSync(stop, informer.HasSynced) {
		fail(1, "informer cache did not sync")
	}
	syncSeconds := time.Since(start).Seconds()

	// Measure before listing keys so that the key slice does not inflate the figures.
	u, err := measure()
	if err != nil {
		fail(1, "measure: %v", err)
	}
	objects := len(informer.GetStore().ListKeys())
	emit("synced", syncedReport{
		Client: client, Objects: objects, SyncSeconds: syncSeconds,
		CPUSeconds: u.cpuSeconds, RSSBytes: u.rss, PeakRSSBytes: u.hwm,
	})
	if *updates == 0 {
		os.Exit(0)
	}

	<-done
	u, err = measure()
	if err != nil {
		fail(1, "measure: %v", err)
	}
	seconds := lastUpdate.Sub(firstUpdate).Seconds()
	var rate float64
	if *updates > 1 && seconds > 0 {
		rate = float64(*updates-1) / seconds
	}
	emit("updated", updatedReport{
		Client: client, Updates: *updates, Seconds: seconds, EventsPerSecond: rate,
		CPUSeconds: u.cpuSeconds, RSSBytes: u.rss, PeakRSSBytes: u.hwm,
	})
	os.Exit(0)
}
