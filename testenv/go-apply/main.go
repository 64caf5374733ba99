// Command go-apply is client-go's side of kubekit's typed-apply comparison
// (kubekit/tests/it/apply_client_go.rs). It builds the comparison's cases with client-go's
// applyconfigurations, applies each case's steps to the server of --kubeconfig with the
// typed clientset (field manager and force as each step says), and prints one JSON report
// on stdout: per case, the request bodies client-go sent (as the server received them),
// the object the last apply returned (the server's JSON, unchanged), and what client-go's
// Extract<Kind>From gives from that object for each manager and subresource of its steps.
//
//	go-apply --kubeconfig <file> --namespace <ns>
//
// Namespaced cases work in <ns>; cluster-scoped objects are named "<ns>-<name>", so two
// runs in two namespaces never meet. A case the server refuses stops the program with the
// case's name and the server's answer.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// step is one apply of a case: by manager, to subresource ("" or "status").
type step[C any] struct {
	manager     string
	subresource string
	config      C
}

// spec applies config to the object by manager.
func spec[C any](manager string, config C) step[C] {
	return step[C]{manager: manager, config: config}
}

// status applies config to the status subresource by manager.
func status[C any](manager string, config C) step[C] {
	return step[C]{manager: manager, subresource: "status", config: config}
}

// applier is a typed client that applies C (every typed client of client-go).
type applier[T any, C any] interface {
	Apply(ctx context.Context, config C, opts metav1.ApplyOptions) (T, error)
}

// statusApplier is a typed client of a kind with a status subresource.
type statusApplier[T any, C any] interface {
	ApplyStatus(ctx context.Context, config C, opts metav1.ApplyOptions) (T, error)
}

// extracted is what Extract<Kind>From gave for one manager and subresource: a
// configuration, or why it failed.
type extracted struct {
	Manager     string          `json:"manager"`
	Subresource string          `json:"subresource"`
	Config      json.RawMessage `json:"config,omitempty"`
	Error       string          `json:"error,omitempty"`
}

// report is what a case produced.
type report struct {
	Name      string            `json:"name"`
	Bodies    []json.RawMessage `json:"bodies"`
	Stored    json.RawMessage   `json:"stored"`
	Extracted []extracted       `json:"extracted"`
}

// recorder keeps the bodies of the PATCH requests and the last answer's body.
type recorder struct {
	next     http.RoundTripper
	bodies   []json.RawMessage
	lastBody []byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPatch {
		return r.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	r.bodies = append(r.bodies, body)
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	r.lastBody = answer
	return resp, nil
}

var (
	ctx = context.Background()
	rec = &recorder{}
)

// run applies steps with client, in order and with force, and reports the bodies sent, the
// last answer and each manager's extract from it.
func run[T runtime.Object, C any](client applier[T, C], extract func(T, string, string) (C, error), steps ...step[C]) (report, error) {
	rec.bodies = nil
	var stored T
	for i, s := range steps {
		opts := metav1.ApplyOptions{FieldManager: s.manager, Force: true}
		var err error
		switch s.subresource {
		case "":
			stored, err = client.Apply(ctx, s.config, opts)
		case "status":
			statusClient, ok := any(client).(statusApplier[T, C])
			if !ok {
				return report{}, fmt.Errorf("step %d: the client has no ApplyStatus", i)
			}
			stored, err = statusClient.ApplyStatus(ctx, s.config, opts)
		default:
			return report{}, fmt.Errorf("step %d: subresource %q", i, s.subresource)
		}
		if err != nil {
			return report{}, fmt.Errorf("step %d (%s): %w", i, s.manager, err)
		}
	}
	out := report{Bodies: rec.bodies, Stored: rec.lastBody}
	seen := map[[2]string]bool{}
	for _, s := range steps {
		key := [2]string{s.manager, s.subresource}
		if seen[key] {
			continue
		}
		seen[key] = true
		got := extracted{Manager: s.manager, Subresource: s.subresource}
		if config, err := extract(stored, s.manager, s.subresource); err != nil {
			got.Error = err.Error()
		} else if got.Config, err = json.Marshal(config); err != nil {
			return report{}, err
		}
		out.Extracted = append(out.Extracted, got)
	}
	return out, nil
}

// The values the cases share with the Rust side.
var (
	when      = metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	whenMicro = metav1.NewMicroTime(time.Date(2026, 11, 30, 12, 0, 0, 123456000, time.UTC))
)

func q(s string) resource.Quantity { return resource.MustParse(s) }

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig of the server to apply to")
	namespace := flag.String("namespace", "", "the namespace of the namespaced cases")
	flag.Parse()
	if *kubeconfig == "" || *namespace == "" {
		fmt.Fprintln(os.Stderr, "usage: go-apply --kubeconfig <file> --namespace <ns>")
		os.Exit(2)
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail("kubeconfig", err)
	}
	config.ContentType = "application/json"
	config.AcceptContentTypes = "application/json"
	config.QPS, config.Burst = 500, 1000
	config.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
		rec.next = next
		return rec
	}
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		fail("clientset", err)
	}
	var reports []report
	for _, c := range cases(cs, *namespace) {
		r, err := c.run()
		if err != nil {
			fail(c.name, err)
		}
		r.Name = c.name
		reports = append(reports, r)
	}
	if err := json.NewEncoder(os.Stdout).Encode(reports); err != nil {
		fail("report", err)
	}
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "go-apply: %s: %v\n", what, err)
	os.Exit(1)
}
