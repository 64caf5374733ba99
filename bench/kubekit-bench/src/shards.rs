//! The sharding benchmark: what one replica of a sharded controller pays for its share of
//! N Pods, against one replica that caches them all.
//!
//! The pods are created in a real cluster (as `informer --kubeconfig` does). Then, for
//! each replica count N (1, 2 and 4 by default), each of N replicas runs in turn:
//! `kubekit-informer informer-peer --shard I/N`, a Pod informer of a factory given the I-th
//! of N equal uid ranges, which prints its `synced` line (objects cached, sync wall time,
//! its CPU and RSS) and exits. Around each replica the orchestrator reads kube-apiserver's
//! `/metrics` (the bytes and events of pods it wrote to watches, `apiserver_watch_events_*`,
//! and to lists, `apiserver_response_sizes`) and, when the control plane is local, its CPU
//! time (`kube-apiserver.pid` next to the kubeconfig): what the server spent on that
//! replica.
//!
//! The replicas of one N run one after another, not at once: on a real deployment each has
//! a machine of its own, and this machine has two cores; the server serves each alone.
//!
//! With `--fallback-kubeconfig` the same is measured on a second cluster whose
//! kube-apiserver runs without `ShardedListAndWatch`: the server ignores the shard selector
//! and sends every pod, and each replica's informer filters alone.
//!
//! Each run checks that the N replicas' caches together hold every pod exactly once (the
//! sum of their objects is the number of pods the server lists). The table gives, per
//! filtering and N, medians over the runs of the replicas' mean, and the ratio of the
//! per-replica figure to 1/N of one replica's (1.00 is a perfect split).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use informer_protocol::{Line, Synced, Usage};
use kubekit::clientset::{Clientset, ListOptions};
use kubekit::rest::{RestClient, RestConfig};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use crate::informer::{Cluster, Fixture, default_fixture, end, median, next_line};
use crate::{option_count, option_value};

/// Command-line options of `kubekit-bench shards`.
pub struct Options {
    pods: usize,
    replicas: Vec<u32>,
    runs: usize,
    /// A cluster whose server filters (`ShardedListAndWatch` on).
    kubeconfig: PathBuf,
    /// A cluster whose server does not.
    fallback_kubeconfig: Option<PathBuf>,
    kubekit_bin: Option<PathBuf>,
    compact: bool,
    fixture: PathBuf,
    timeout: Duration,
    command_line: String,
}

impl Options {
    /// Parses the options that follow the `shards` subcommand.
    pub fn parse(args: impl Iterator<Item = String>) -> Result<Self, String> {
        let args: Vec<String> = args.collect();
        let command_line = format!("kubekit-bench shards {}", args.join(" "));
        let (mut pods, mut runs, mut replicas) = (20_000, 3, vec![1, 2, 4]);
        let (mut kubeconfig, mut fallback_kubeconfig, mut kubekit_bin) = (None, None, None);
        let (mut compact, mut fixture, mut timeout) = (false, default_fixture(), 600);
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--pods" => pods = option_count(&mut args, "--pods")?,
                "--runs" => runs = option_count(&mut args, "--runs")?,
                "--timeout" => timeout = option_count(&mut args, "--timeout")?,
                "--replicas" => replicas = parse_replicas(&option_value(&mut args, "--replicas")?)?,
                "--kubeconfig" => {
                    kubeconfig = Some(option_value(&mut args, "--kubeconfig")?.into())
                }
                "--fallback-kubeconfig" => {
                    fallback_kubeconfig =
                        Some(option_value(&mut args, "--fallback-kubeconfig")?.into());
                }
                "--kubekit-bin" => {
                    kubekit_bin = Some(option_value(&mut args, "--kubekit-bin")?.into())
                }
                "--compact" => compact = true,
                "--fixture" => fixture = option_value(&mut args, "--fixture")?.into(),
                other => return Err(format!("unknown option {other:?}")),
            }
        }
        if pods == 0 || runs == 0 {
            return Err("--pods and --runs must be positive".into());
        }
        Ok(Self {
            pods,
            replicas,
            runs,
            kubeconfig: kubeconfig.ok_or("--kubeconfig PATH is required")?,
            fallback_kubeconfig,
            kubekit_bin,
            compact,
            fixture,
            timeout: Duration::from_secs(timeout as u64),
            command_line,
        })
    }
}

/// Parses `1,2,4`: distinct positive replica counts, in the order given.
fn parse_replicas(list: &str) -> Result<Vec<u32>, String> {
    let mut counts = Vec::new();
    for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        match item.parse::<u32>() {
            Ok(n) if n > 0 => {
                if !counts.contains(&n) {
                    counts.push(n);
                }
            }
            _ => return Err(format!("--replicas: {item:?} is not a positive count")),
        }
    }
    if counts.is_empty() {
        return Err("--replicas: no count given".into());
    }
    Ok(counts)
}

/// What kube-apiserver has written of pods so far, and its CPU time.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ServerCounters {
    bytes: f64,
    events: f64,
    cpu_seconds: Option<f64>,
}

/// The sum of the samples of `metric` about pods in a Prometheus text exposition.
fn pods_metric(text: &str, metric: &str) -> f64 {
    text.lines()
        .filter_map(|line| line.strip_prefix(metric)?.strip_prefix('{'))
        .filter(|rest| rest.contains(r#"resource="pods""#))
        .filter_map(|rest| rest.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

impl ServerCounters {
    fn parse(metrics: &str, cpu_seconds: Option<f64>) -> Self {
        Self {
            bytes: pods_metric(metrics, "apiserver_watch_events_sizes_sum")
                + pods_metric(metrics, "apiserver_response_sizes_sum"),
            events: pods_metric(metrics, "apiserver_watch_events_total"),
            cpu_seconds,
        }
    }
}

/// The kube-apiserver a cluster's replicas sync from.
struct Server {
    rest: RestClient,
    /// Its process, when the control plane runs on this machine.
    pid: Option<u32>,
}

impl Server {
    async fn new(kubeconfig: &Path) -> Result<Self, String> {
        let config = RestConfig::from_kubeconfig(kubeconfig)
            .await
            .map_err(|e| e.to_string())?;
        let pid_file = kubeconfig.with_file_name("kube-apiserver.pid");
        let pid = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|text| text.trim().parse().ok());
        Ok(Self {
            rest: RestClient::new(&config).map_err(|e| e.to_string())?,
            pid,
        })
    }

    async fn counters(&self) -> Result<ServerCounters, String> {
        let response = self
            .rest
            .get()
            .abs_path("/metrics")
            .send()
            .await
            .map_err(|e| format!("reading kube-apiserver's metrics: {e}"))?;
        let text = String::from_utf8_lossy(response.body());
        let cpu = self
            .pid
            .and_then(|pid| Usage::of_process(pid).ok())
            .map(|u| u.cpu_seconds);
        Ok(ServerCounters::parse(&text, cpu))
    }
}

/// One replica's sync, and what the server spent on it.
#[derive(Debug, Clone)]
struct ReplicaSample {
    synced: Synced,
    sent_bytes: f64,
    sent_events: f64,
    server_cpu_seconds: Option<f64>,
}

/// Runs replica `index` of `count` to its `synced` line and its exit.
async fn run_replica(
    options: &Options,
    bin: &Path,
    kubeconfig: &Path,
    (index, count): (u32, u32),
) -> Result<Synced, String> {
    let mut child = Command::new(bin)
        .arg("informer-peer")
        .args(options.compact.then_some("--compact"))
        .args(["--shard", &format!("{index}/{count}")])
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", bin.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout pipe")?;
    let mut lines = BufReader::new(stdout).lines();
    let outcome = tokio::time::timeout(options.timeout, async {
        let synced = match next_line(&mut lines, "synced").await? {
            Line::Synced(synced) => synced,
            Line::Updated(_) => return Err("printed `updated` before `synced`".to_string()),
        };
        match child.wait().await {
            Ok(status) if status.success() => Ok(synced),
            _ => Err("did not exit successfully".into()),
        }
    })
    .await
    .unwrap_or_else(|_| Err(format!("timed out after {:?}", options.timeout)));
    match outcome {
        Ok(synced) => Ok(synced),
        Err(e) => Err(format!(
            "replica {index}/{count}: {e}; {}",
            end(&mut child).await
        )),
    }
}

/// Each run's samples of one replica count: `runs[r][i]` is replica i of run r.
struct CountRuns {
    count: u32,
    runs: Vec<Vec<ReplicaSample>>,
}

/// Measures every replica count `options.runs` times on one cluster.
async fn measure(
    options: &Options,
    bin: &Path,
    kubeconfig: &Path,
    total: u64,
) -> Result<Vec<CountRuns>, String> {
    let server = Server::new(kubeconfig).await?;
    let mut results: Vec<CountRuns> = (options.replicas.iter())
        .map(|&count| CountRuns {
            count,
            runs: Vec::new(),
        })
        .collect();
    for run in 0..options.runs {
        for result in &mut results {
            let count = result.count;
            let mut replicas = Vec::new();
            for index in 0..count {
                let before = server.counters().await?;
                let synced = run_replica(options, bin, kubeconfig, (index, count)).await?;
                let after = server.counters().await?;
                eprintln!(
                    "run {} replica {index}/{count}: {} pods in {:.2} s, CPU {:.2} s, RSS {:.1} MiB; server sent {:.1} MiB in {} events",
                    run + 1,
                    synced.objects,
                    synced.sync_seconds,
                    synced.cpu_seconds,
                    synced.rss_bytes as f64 / MIB,
                    (after.bytes - before.bytes) / MIB,
                    after.events - before.events,
                );
                replicas.push(ReplicaSample {
                    synced,
                    sent_bytes: after.bytes - before.bytes,
                    sent_events: after.events - before.events,
                    server_cpu_seconds: after
                        .cpu_seconds
                        .zip(before.cpu_seconds)
                        .map(|(a, b)| a - b),
                });
            }
            let cached: u64 = replicas.iter().map(|r| r.synced.objects).sum();
            if cached != total {
                return Err(format!(
                    "run {}: the {count} replicas cached {cached} pods together, the server lists {total}",
                    run + 1
                ));
            }
            result.runs.push(replicas);
        }
    }
    Ok(results)
}

const MIB: f64 = 1024.0 * 1024.0;

/// A column of the table: a figure of one replica.
struct Figure {
    label: &'static str,
    value: fn(&ReplicaSample) -> Option<f64>,
    decimals: usize,
    /// The label of its ratio to 1/N of one replica's, if the table gives it.
    split: Option<&'static str>,
}

const FIGURES: [Figure; 7] = [
    Figure {
        label: "objects",
        value: |s| Some(s.synced.objects as f64),
        decimals: 0,
        split: None,
    },
    Figure {
        label: "sync wall (s)",
        value: |s| Some(s.synced.sync_seconds),
        decimals: 2,
        split: Some("sync vs 1/N"),
    },
    Figure {
        label: "CPU (s)",
        value: |s| Some(s.synced.cpu_seconds),
        decimals: 2,
        split: Some("CPU vs 1/N"),
    },
    Figure {
        label: "RSS (MiB)",
        value: |s| Some(s.synced.rss_bytes as f64 / MIB),
        decimals: 1,
        split: Some("RSS vs 1/N"),
    },
    Figure {
        label: "server sent (MiB)",
        value: |s| Some(s.sent_bytes / MIB),
        decimals: 1,
        split: Some("sent vs 1/N"),
    },
    Figure {
        label: "server events",
        value: |s| Some(s.sent_events),
        decimals: 0,
        split: None,
    },
    Figure {
        label: "server CPU (s)",
        value: |s| s.server_cpu_seconds,
        decimals: 2,
        split: Some("server CPU vs 1/N"),
    },
];

impl CountRuns {
    /// The median over the runs of the replicas' mean of `figure`.
    fn mean(&self, figure: &Figure) -> Option<f64> {
        let means = self.runs.iter().filter_map(|replicas| {
            let values: Option<Vec<f64>> = replicas.iter().map(figure.value).collect();
            let values = values?;
            Some(values.iter().sum::<f64>() / values.len() as f64)
        });
        median(means.collect())
    }

    /// The median over the runs of the slowest replica's sync.
    fn slowest_sync(&self) -> Option<f64> {
        let slowest = self.runs.iter().filter_map(|replicas| {
            replicas
                .iter()
                .map(|r| r.synced.sync_seconds)
                .max_by(f64::total_cmp)
        });
        median(slowest.collect())
    }
}

/// Prints one cluster's table.
fn print_table(title: &str, results: &[CountRuns]) {
    let one = results.iter().find(|r| r.count == 1);
    println!("\n{title}");
    let mut header = vec!["replicas".to_string()];
    header.extend(FIGURES.iter().map(|f| f.label.to_string()));
    header.push("slowest sync (s)".into());
    if one.is_some() {
        header.extend(FIGURES.iter().filter_map(|f| f.split.map(str::to_string)));
    }
    println!("| {} |", header.join(" | "));
    println!("|{}", "---|".repeat(header.len()));
    for result in results {
        let n = f64::from(result.count);
        let mut row = vec![result.count.to_string()];
        for figure in &FIGURES {
            row.push(result.mean(figure).map_or("—".into(), |v| {
                format!("{v:.decimals$}", decimals = figure.decimals)
            }));
        }
        row.push(
            result
                .slowest_sync()
                .map_or("—".into(), |v| format!("{v:.2}")),
        );
        if let Some(one) = one {
            for figure in FIGURES.iter().filter(|f| f.split.is_some()) {
                let ratio = result
                    .mean(figure)
                    .zip(one.mean(figure))
                    .filter(|(_, whole)| *whole > 0.0)
                    .map(|(part, whole)| part / (whole / n));
                row.push(ratio.map_or("—".into(), |r| format!("{r:.2}")));
            }
        }
        println!("| {} |", row.join(" | "));
    }
}

/// How many pods the server of `kubeconfig` holds, read from etcd (a quorum list).
async fn pods_listed(kubeconfig: &Path) -> Result<u64, String> {
    let config = RestConfig::from_kubeconfig(kubeconfig)
        .await
        .map_err(|e| e.to_string())?;
    let clientset = Clientset::new(&config).map_err(|e| e.to_string())?;
    let list = clientset
        .core_v1()
        .pods("")
        .list(&ListOptions::default())
        .await
        .map_err(|e| format!("listing the pods: {e}"))?;
    Ok(list.items.len() as u64)
}

/// Creates the pods in one cluster, measures, and deletes them.
async fn one_cluster(
    options: &Options,
    bin: &Path,
    fixture: &Fixture,
    kubeconfig: &Path,
) -> Result<Vec<CountRuns>, String> {
    let cluster = Cluster::populate(kubeconfig, fixture, options.pods).await?;
    let measured = async {
        let total = pods_listed(kubeconfig).await?;
        measure(options, bin, kubeconfig, total).await
    }
    .await;
    let cleaned = cluster.clean_up().await;
    let results = measured?;
    cleaned?;
    Ok(results)
}

/// Runs the benchmark and prints its tables.
pub fn run(options: Options) -> Result<(), String> {
    let fixture = Fixture::load(&options.fixture)?;
    let this = std::env::current_exe().map_err(|e| format!("locating kubekit-bench: {e}"))?;
    let bin =
        (options.kubekit_bin.clone()).unwrap_or_else(|| this.with_file_name("kubekit-informer"));
    if !bin.is_file() {
        return Err(format!(
            "kubekit's peer {} does not exist (bench/run.sh shards builds it)",
            bin.display()
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("building the runtime: {e}"))?;
    runtime.block_on(async {
        let cache = if options.compact { "Compact<Pod>" } else { "typed Pods" };
        println!(
            "shards: {} pods; replicas {:?} of a Pod informer ({cache}) sharded by uid, one after another; {} runs; medians of the replicas' mean",
            options.pods, options.replicas, options.runs
        );
        println!("command: {}", options.command_line);
        let mut clusters = vec![(
            "server-side filtering (ShardedListAndWatch on)",
            &options.kubeconfig,
        )];
        if let Some(fallback) = &options.fallback_kubeconfig {
            clusters.push((
                "client-side filtering (ShardedListAndWatch off: the server sends every pod)",
                fallback,
            ));
        }
        let mut tables = Vec::new();
        for (title, kubeconfig) in clusters {
            eprintln!("{title}: {}", kubeconfig.display());
            let results = one_cluster(&options, &bin, &fixture, kubeconfig).await?;
            tables.push((title, results));
        }
        for (title, results) in &tables {
            print_table(title, results);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replica_counts_are_distinct_positive_numbers() {
        assert_eq!(parse_replicas("1, 2,4,2").unwrap(), vec![1, 2, 4]);
        assert!(parse_replicas("0").is_err());
        assert!(parse_replicas("two").is_err());
        assert!(parse_replicas(",").is_err());
    }

    #[test]
    fn server_counters_add_up_the_pods_samples_of_watches_and_lists() {
        let metrics = r#"# HELP apiserver_watch_events_sizes Watch event size distribution in bytes
apiserver_watch_events_sizes_sum{group="",resource="pods",version="v1"} 1.5e+06
apiserver_watch_events_sizes_sum{group="",resource="configmaps",version="v1"} 7
apiserver_watch_events_total{group="",resource="pods",version="v1"} 300
apiserver_response_sizes_sum{component="apiserver",group="",resource="pods",scope="cluster",subresource="",verb="LIST",version="v1"} 2000
apiserver_response_sizes_sum{component="apiserver",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 500
apiserver_response_sizes_bucket{component="apiserver",group="",resource="pods",le="+Inf"} 9
"#;
        let counters = ServerCounters::parse(metrics, Some(1.5));
        assert_eq!(
            counters,
            ServerCounters {
                bytes: 1_502_500.0,
                events: 300.0,
                cpu_seconds: Some(1.5),
            }
        );
    }
}
