//! kubekit's benchmark programs. `bench/run.sh` builds and runs them; see `bench/README.md`.
//!
//! Usage: `kubekit-bench <benchmark> [options]`, one subcommand per benchmark:
//!
//! - `apply`: building and serializing a typed apply configuration, against client-go's
//!   `applyconfigurations` when `--go-bin` names the Go program built from `bench/go`.
//! - `workqueue`: add/get/done throughput of [`kubekit::workqueue::Queue`], compared with
//!   client-go's workqueue when `--go-bin` names the Go program built from `bench/go`.
//! - `relist`: memory of an informer at steady state and at the peak of a relist, against
//!   a real API server.
//! - `informer`: sync time, CPU and memory of an informer over N realistic Pods and the rate
//!   of M watch updates, kubekit against kube-rs and client-go on the same bytes (a replay
//!   server, or a real cluster with `--kubeconfig`).
//! - `compact`: what the compact cache costs and saves per object against typed objects.
//! - `fake`: starting kubekit-fake and running the App controller's e2e scenario against it,
//!   next to the same scenario on the real local control plane.
//! - `shards`: what each replica of a sharded Pod informer pays for its share of N Pods in
//!   a real cluster, with the server filtering and without.
//! - `webhook`: admissions per second and latency of kubekit's webhook server against
//!   controller-runtime's (`webhook-peer` is kubekit's server).
//!
//! kubekit's peers of `informer` are a program of their own, `kubekit-informer`
//! (`bench/kubekit-informer`), as client-go's and kube-rs's are.

mod apply;
mod compact;
mod fake;
mod informer;
mod relist;
mod shards;
mod webhook;
mod workqueue;

use std::process::ExitCode;

/// The value that follows option `name` on a command line.
pub(crate) fn option_value(
    args: &mut impl Iterator<Item = String>,
    name: &str,
) -> Result<String, String> {
    args.next().ok_or(format!("{name} needs a value"))
}

/// The count that follows option `name` on a command line.
pub(crate) fn option_count(
    args: &mut impl Iterator<Item = String>,
    name: &str,
) -> Result<usize, String> {
    let value = option_value(args, name)?;
    value
        .parse::<usize>()
        .map_err(|e| format!("{name} {value:?}: {e}"))
}

const USAGE: &str = "\
usage: kubekit-bench <benchmark> [options]

benchmarks:
  apply       building and serializing a typed apply configuration (kubekit vs
              client-go's applyconfigurations), the same Deployment
              options: --go-bin PATH   the Go program to compare with (bench/go/apply)
                       --runs N        runs; the best of each counts (default 5)
                       --scale X       configurations per run x 200,000 (default 1)
  workqueue   add/get/done throughput of the work queue (kubekit vs client-go)
              options: --go-bin PATH   the Go program to compare with (bench/go/workqueue)
                       --runs N        runs per variant and client; the best counts (default 5)
                       --scale F       multiply the work per run by F (default 1.0)
                       --only V,...    only these variants: distinct-1, distinct-2, distinct-8,
                                       hot-1, hot-2, hot-8
                       --keys arc|string  kubekit's key type: Arc<str> (default) or String
                       --verbose       print every run's figures to stderr
  relist      steady-state and relist-peak memory of an informer over N ConfigMaps or Pods
              options: --kubeconfig PATH   the cluster to use (required)
                       --objects N         objects to create (default 10000)
                       --compact           cache Compact<K> instead of typed objects
                       --shape S           Pods of the informer benchmark's shape S
                                           (pods-small, pods-typical, pods-large)
                                           instead of ConfigMaps
  informer    sync and watch-update cost of an informer over N realistic Pods, kubekit vs
              kube-rs vs client-go, all served the same bytes by a replay server
              options: --pods N            pods to sync (default 10000)
                       --updates M         MODIFIED events after the sync (default 10000)
                       --runs R            runs per client; the table shows medians (default 3)
                       --clients LIST      some of kubekit,kubekit-compact,kubekit-metadata,
                                           kubekit-metadata-strip,kube-rs,client-go
                                           (default: kubekit,kubekit-compact,kube-rs,client-go)
                       --go-bin PATH       the client-go peer (bench/go/informer)
                       --kube-rs-bin PATH  the kube-rs peer (default: kube-rs-informer next
                                           to this program)
                       --kubekit-bin PATH  kubekit's peers (default: kubekit-informer next
                                           to this program)
                       --fixture PATH      the PodList to replicate (default
                                           bench/fixtures/pods.json)
                       --timeout SECS      a peer taking longer fails (default 600)
                       --kubeconfig PATH   create the pods in this cluster instead and only
                                           sync (confirms the replay server's figures)
                       --shape S[,S...]    with --kubeconfig: objects of these shapes
                                           instead, a table each (pods-small, pods-typical,
                                           pods-large, deployments, configmaps, secrets,
                                           events, nodes, widgets)
                       --corpus            with --kubeconfig: every shape but widgets
                       --verbose           log requests and each run's server counters
  compact     what the compact cache costs and saves per Pod: build time, memory, compressed
              size, get (cold and warm) and a lister's list, typed Pod vs Compact<Pod>
              options: --objects N (default 10000), --fixture PATH
  fake        time to start kubekit-fake and run the App controller's e2e scenario against it,
              next to the same scenario on the real local control plane (started by testenv)
              options: --runs N   runs per server; the table shows medians (default 3)
  shards      per-replica sync time, CPU, memory and the API server's bytes sent for 1, 2
              and 4 replicas of a Pod informer sharded by uid, over N Pods in a real cluster
              options: --kubeconfig PATH   a cluster whose server filters (required)
                       --fallback-kubeconfig PATH  the same on a server without
                                           ShardedListAndWatch (the informers filter)
                       --pods N            pods to create (default 20000)
                       --replicas LIST     replica counts (default 1,2,4)
                       --runs R            runs; the table shows medians (default 3)
                       --compact           cache Compact<Pod> instead of typed Pods
                       --kubekit-bin PATH  kubekit's peer (default: kubekit-informer next
                                           to this program)
                       --fixture PATH, --timeout SECS
  webhook     admissions per second and latency of kubekit's webhook server vs
              controller-runtime's, validating Apps over HTTP/1.1 and TLS
              options: --go-bin PATH        the controller-runtime server (bench/go/webhook)
                       --runs N             runs; the table shows medians (default 3)
                       --seconds S          measured seconds per load (default 5)
                       --connections C,...  loads: concurrent connections (default 1,8,32)
                       --rotate             rotate the certificate every second meanwhile
  webhook-peer  kubekit's server of `webhook` (--cert-dir DIR --port PORT)
";

fn main() -> ExitCode {
    informer_protocol::main_with_subcommands(USAGE, |name, args| {
        Some(match name {
            "workqueue" => workqueue::Options::parse(args).and_then(workqueue::run),
            "apply" => apply::Options::parse(args).and_then(apply::run),
            "relist" => relist::Options::parse(args).and_then(relist::run),
            "informer" => informer::Options::parse(args).and_then(informer::run),
            "compact" => compact::Options::parse(args).and_then(compact::run),
            "fake" => fake::Options::parse(args).and_then(fake::run),
            "shards" => shards::Options::parse(args).and_then(shards::run),
            "webhook" => webhook::Options::parse(args).and_then(webhook::run),
            "webhook-peer" => webhook::peer(args),
            _ => return None,
        })
    })
}
