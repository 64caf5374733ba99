//! The work queue benchmark: kubekit's `Queue` against client-go's `workqueue`, same
//! scenarios, same run.
//!
//! Variants, each with 1, 2 and 8 workers sharing a fixed number of cycles (1,000,000 at
//! scale 1); nothing else runs, so every client does exactly the same operations:
//!
//! - **distinct**: 10,000 distinct keys are queued up front; a cycle is `get` → `done` →
//!   `add` (the same key, which goes to the back): three queue operations.
//! - **hot**: 100 hot keys are queued up front; a cycle is `get` → `add` (an event while
//!   the key is processed: marked dirty) → `done` (re-queued) → `add` (an event while it
//!   waits: merged): four queue operations. Every key is re-added constantly.
//!
//! Keys look like `default/pod-000042`. kubekit holds them as `Arc<str>` by default, the
//! Rust type with the cost model of Go's `string` (immutable, shared, cloned without a
//! copy); `--keys string` uses `String`, which copies on every clone. The runtime has one
//! worker thread per core, as Go has one P per core, and every task runs on it. Each
//! variant runs `--runs` times per client, alternating clients, and the best run of each
//! counts: on a shared machine, the best run is the one least disturbed.

use std::hash::Hash;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubekit::workqueue::Queue;

/// Keys in the distinct variant.
const DISTINCT_KEYS: usize = 10_000;
/// Keys in the hot variant.
const HOT_KEYS: usize = 100;
/// Worker cycles per run, at scale 1.
const CYCLES: u64 = 1_000_000;
/// Worker counts of every variant.
const WORKERS: [usize; 3] = [1, 2, 8];

/// Command-line options of `kubekit-bench workqueue`.
pub struct Options {
    go_bin: Option<PathBuf>,
    runs: usize,
    scale: f64,
    /// Only the variants whose name (`distinct-1`, `hot-8`, ...) is listed.
    only: Vec<String>,
    /// Print every run's figures to stderr.
    verbose: bool,
    /// The Rust type of the keys.
    key_type: KeyType,
}

impl Options {
    /// Parses the options that follow the `workqueue` subcommand.
    pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut options = Self {
            go_bin: None,
            runs: 5,
            scale: 1.0,
            only: Vec::new(),
            verbose: false,
            key_type: KeyType::Arc,
        };
        while let Some(arg) = args.next() {
            let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
            match arg.as_str() {
                "--go-bin" => options.go_bin = Some(PathBuf::from(value("--go-bin")?)),
                "--runs" => {
                    options.runs = value("--runs")?
                        .parse()
                        .map_err(|err| format!("--runs: {err}"))?;
                }
                "--scale" => {
                    options.scale = value("--scale")?
                        .parse()
                        .map_err(|err| format!("--scale: {err}"))?;
                }
                "--verbose" => options.verbose = true,
                "--keys" => {
                    options.key_type = match value("--keys")?.as_str() {
                        "arc" => KeyType::Arc,
                        "string" => KeyType::String,
                        other => return Err(format!("--keys: {other:?} is not arc or string")),
                    };
                }
                "--only" => options
                    .only
                    .extend(value("--only")?.split(',').map(str::to_owned)),
                other => return Err(format!("unknown option {other:?}")),
            }
        }
        if options.runs == 0 || options.scale.is_nan() || options.scale <= 0.0 {
            return Err("--runs and --scale must be positive".into());
        }
        Ok(options)
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Scenario {
    Distinct,
    Hot,
}

#[derive(Clone, Copy)]
struct Variant {
    scenario: Scenario,
    workers: usize,
}

impl Variant {
    fn keys(self) -> usize {
        match self.scenario {
            Scenario::Distinct => DISTINCT_KEYS,
            Scenario::Hot => HOT_KEYS,
        }
    }

    fn name(self) -> String {
        match self.scenario {
            Scenario::Distinct => format!("distinct-{}", self.workers),
            Scenario::Hot => format!("hot-{}", self.workers),
        }
    }

    fn label(self) -> String {
        match self.scenario {
            Scenario::Distinct => format!("distinct {}k keys", self.keys() / 1000),
            Scenario::Hot => format!("hot {} keys", self.keys()),
        }
    }
}

/// One measured run: operations made and the time they took.
#[derive(Clone, Copy)]
struct Sample {
    ops: u64,
    elapsed: Duration,
}

impl Sample {
    fn ops_per_sec(self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64()
    }
}

/// What the queues hold: anything built from a `String` key.
trait Key: From<String> + Hash + Eq + Clone + Send + 'static {}

impl<K: From<String> + Hash + Eq + Clone + Send + 'static> Key for K {}

/// The Rust type the keys are held in.
#[derive(Clone, Copy, PartialEq)]
enum KeyType {
    /// `Arc<str>`: immutable and shared, cloned by a reference count (Go's `string`).
    Arc,
    /// `String`: every clone copies the bytes into a new allocation.
    String,
}

fn keys(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("default/pod-{i:06}")).collect()
}

/// Splits `total` into `parts` quotas differing by at most one.
fn quota(total: u64, parts: usize, index: usize) -> u64 {
    let parts = parts as u64;
    total / parts + u64::from((index as u64) < total % parts)
}

async fn distinct<K: Key>(workers: usize, cycles: u64) -> Sample {
    let queue = Queue::<K>::new();
    for key in keys(DISTINCT_KEYS) {
        queue.add(K::from(key));
    }
    let start = Instant::now();
    let tasks: Vec<_> = (0..workers)
        .map(|index| {
            let queue = queue.clone();
            let quota = quota(cycles, workers, index);
            tokio::spawn(async move {
                for _ in 0..quota {
                    let Some(key) = queue.get().await else {
                        break;
                    };
                    queue.done(&key);
                    queue.add(key);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("worker task");
    }
    let elapsed = start.elapsed();
    queue.shut_down();
    Sample {
        ops: cycles * 3,
        elapsed,
    }
}

async fn hot<K: Key>(workers: usize, cycles: u64) -> Sample {
    let queue = Queue::<K>::new();
    for key in keys(HOT_KEYS) {
        queue.add(K::from(key));
    }
    let start = Instant::now();
    let tasks: Vec<_> = (0..workers)
        .map(|index| {
            let queue = queue.clone();
            let quota = quota(cycles, workers, index);
            tokio::spawn(async move {
                for _ in 0..quota {
                    let Some(key) = queue.get().await else {
                        break;
                    };
                    // An event for the key arrives while it is processed: marked dirty.
                    queue.add(key.clone());
                    // Processing ends: the key goes back to the queue.
                    queue.done(&key);
                    // Another event for it while it waits: merged.
                    queue.add(key);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("worker task");
    }
    let elapsed = start.elapsed();
    queue.shut_down();
    Sample {
        ops: cycles * 4,
        elapsed,
    }
}

fn run_kubekit(runtime: &tokio::runtime::Runtime, variant: Variant, options: &Options) -> Sample {
    let cycles = scaled(CYCLES, options.scale);
    let workers = variant.workers;
    match (variant.scenario, options.key_type) {
        (Scenario::Distinct, KeyType::Arc) => {
            runtime.block_on(distinct::<Arc<str>>(workers, cycles))
        }
        (Scenario::Distinct, KeyType::String) => {
            runtime.block_on(distinct::<String>(workers, cycles))
        }
        (Scenario::Hot, KeyType::Arc) => runtime.block_on(hot::<Arc<str>>(workers, cycles)),
        (Scenario::Hot, KeyType::String) => runtime.block_on(hot::<String>(workers, cycles)),
    }
}

fn scaled(n: u64, scale: f64) -> u64 {
    ((n as f64 * scale) as u64).max(1)
}

fn run_go(go_bin: &PathBuf, variant: Variant, options: &Options) -> Result<Sample, String> {
    let scale = options.scale;
    let scenario = match variant.scenario {
        Scenario::Distinct => "distinct",
        Scenario::Hot => "hot",
    };
    let output = Command::new(go_bin)
        .arg(format!("-variant={scenario}"))
        .arg(format!("-workers={}", variant.workers))
        .arg(format!("-keys={}", variant.keys()))
        .arg(format!("-cycles={}", scaled(CYCLES, scale)))
        .output()
        .map_err(|err| format!("running {}: {err}", go_bin.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "{} failed ({}): {}{}",
            go_bin.display(),
            output.status,
            stdout,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    parse_go_output(&stdout).ok_or_else(|| format!("unexpected output from Go: {stdout:?}"))
}

/// Parses `ops=<n> seconds=<s>`.
fn parse_go_output(stdout: &str) -> Option<Sample> {
    let mut ops = None;
    let mut seconds = None;
    for field in stdout.split_whitespace() {
        if let Some(value) = field.strip_prefix("ops=") {
            ops = value.parse().ok();
        } else if let Some(value) = field.strip_prefix("seconds=") {
            seconds = value.parse::<f64>().ok();
        }
    }
    Some(Sample {
        ops: ops?,
        elapsed: Duration::from_secs_f64(seconds?),
    })
}

fn best(samples: &[Sample]) -> f64 {
    samples
        .iter()
        .map(|sample| sample.ops_per_sec())
        .fold(0.0, f64::max)
}

/// Formats an ops/s figure with thousands separators.
fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value);
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Runs every variant for both clients and prints the table.
pub fn run(options: Options) -> Result<(), String> {
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .map_err(|err| format!("building the runtime: {err}"))?;
    let variants: Vec<Variant> = [Scenario::Distinct, Scenario::Hot]
        .into_iter()
        .flat_map(|scenario| WORKERS.map(|workers| Variant { scenario, workers }))
        .filter(|variant| options.only.is_empty() || options.only.contains(&variant.name()))
        .collect();
    if variants.is_empty() {
        return Err(format!("no variant matches --only {:?}", options.only));
    }

    // Warm up the allocator and the runtime once.
    let warm_up = Options {
        go_bin: None,
        runs: 1,
        scale: options.scale / 10.0,
        only: Vec::new(),
        verbose: false,
        key_type: options.key_type,
    };
    run_kubekit(&runtime, variants[0], &warm_up);

    let mut kubekit = vec![Vec::new(); variants.len()];
    let mut go = vec![Vec::new(); variants.len()];
    for _ in 0..options.runs {
        for (index, &variant) in variants.iter().enumerate() {
            let ours = run_kubekit(&runtime, variant, &options);
            if options.verbose {
                eprintln!(
                    "{} kubekit: {} ops in {:?}",
                    variant.name(),
                    ours.ops,
                    ours.elapsed
                );
            }
            kubekit[index].push(ours);
            if let Some(go_bin) = &options.go_bin {
                let theirs = run_go(go_bin, variant, &options)?;
                if options.verbose {
                    eprintln!(
                        "{} client-go: {} ops in {:?}",
                        variant.name(),
                        theirs.ops,
                        theirs.elapsed
                    );
                }
                go[index].push(theirs);
            }
        }
    }

    let key_type = match options.key_type {
        KeyType::Arc => "Arc<str>",
        KeyType::String => "String",
    };
    println!(
        "workqueue: queue operations per second, best of {} runs; {} threads / GOMAXPROCS; kubekit keys: {}",
        options.runs, threads, key_type
    );
    println!(
        "{:<18} {:>7} {:>16} {:>16} {:>7}",
        "variant", "workers", "kubekit ops/s", "client-go ops/s", "ratio"
    );
    let mut min_ratio = f64::INFINITY;
    for (index, variant) in variants.iter().enumerate() {
        let ours = best(&kubekit[index]);
        if options.go_bin.is_some() {
            let theirs = best(&go[index]);
            let ratio = ours / theirs;
            min_ratio = min_ratio.min(ratio);
            println!(
                "{:<18} {:>7} {:>16} {:>16} {:>7.2}",
                variant.label(),
                variant.workers,
                thousands(ours),
                thousands(theirs),
                ratio
            );
        } else {
            println!(
                "{:<18} {:>7} {:>16} {:>16} {:>7}",
                variant.label(),
                variant.workers,
                thousands(ours),
                "-",
                "-"
            );
        }
    }
    if options.go_bin.is_some() {
        println!("min ratio kubekit/client-go: {min_ratio:.2}");
    }
    Ok(())
}
