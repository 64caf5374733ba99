//! The informer benchmark: kubekit, kube-rs and client-go each sync an informer over N
//! realistic Pods served by the same replay server (the same bytes), then apply M MODIFIED
//! watch events; the table gives each client's medians over the runs and kubekit's ratios.
//!
//! Each client is a child process (a *peer*: `kubekit-informer informer-peer`,
//! `kube-rs-informer`, the Go program `bench/go/informer`) started with
//! `--server URL --updates M`. It prints `synced {json}` once its cache holds every pod;
//! the orchestrator then waits until the peer's watch is open (past its initial events)
//! and triggers the M events into it; the peer prints `updated {json}` once it has seen
//! the M-th and exits. See [`informer_protocol`] for the lines.
//!
//! With `--shape S` (and a real cluster) the objects are N of a shape of the corpus
//! ([`shapes`]): Pods small, typical and large, Deployments, ConfigMaps, Secrets, Events,
//! Nodes; `--corpus` runs every one in turn, a table each, the informers caching the
//! shape's kind. With `--resource widgets` (`--shape widgets`) they are N custom resources
//! (`widgets.bench.kubekit.dev`, [`informer_protocol::widget`]) with a spec and a status:
//! kubekit's typed informer (CBOR where the server serves it, and `kubekit-json` with JSON
//! alone), kube-rs's reflector of the same type, and client-go's dynamic informer (JSON as
//! by default, and `client-go-cbor` with its CBOR gates).
//!
//! With `--kubeconfig`, the pods are created in a real cluster instead, the readers that
//! decode nothing (`kubekit-informer floor-peer`, JSON and protobuf) join the clients as the
//! floor, and the M updates are real: once a peer has synced, a writer patches a label of
//! M pods (32 patches in flight) while the peer watches. The server bounds their rate, so
//! the figures of the watch are the peer's CPU per event and how long after the writer's
//! last patch the peer had seen them all. With `--link RATE/RTT` as well, the peers reach
//! the cluster through a proxy shaped as a network link ([`link`]); the writer does not.

mod fixture;
mod link;
mod real;
mod server;
mod shapes;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use informer_protocol::{Kind, Line, Synced, Updated};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

pub(crate) use fixture::Fixture;

use crate::{option_count, option_value};
use kubekit_informer::floor_peer::Encoding;
use kubekit_informer::informer_peer::Cache;
use link::Link;
pub(crate) use real::Cluster;
use server::ReplayServer;
pub(crate) use shapes::Shape;

/// The clients compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    /// kubekit's informer of typed Pods.
    Kubekit,
    /// kubekit's informer of `Compact<Pod>`.
    KubekitCompact,
    /// kubekit's typed informer asking for JSON alone (with `--resource widgets`: CBOR set
    /// aside).
    KubekitJson,
    /// kubekit's metadata informer of Pods (only with `--clients`).
    KubekitMetadata,
    /// The same, without `managedFields` (only with `--clients`).
    KubekitMetadataStrip,
    KubeRs,
    Go,
    /// client-go with its environment gates `ClientsAllowCBOR` and `ClientsPreferCBOR`.
    GoCbor,
    /// A reader that decodes nothing (against a real cluster).
    Floor(Encoding),
}

impl Client {
    /// The clients of a run without `--clients`.
    const DEFAULT: [Client; 4] = [
        Client::Kubekit,
        Client::KubekitCompact,
        Client::KubeRs,
        Client::Go,
    ];

    /// The floor, added to the default clients against a real cluster.
    const FLOORS: [Client; 2] = [
        Client::Floor(Encoding::Json),
        Client::Floor(Encoding::Protobuf),
    ];

    /// The clients of `--resource widgets` without `--clients`: kubekit's informer with
    /// its defaults (CBOR where served) and with JSON alone, kube-rs, client-go with its
    /// defaults (JSON) and with its CBOR gates.
    const WIDGETS: [Client; 5] = [
        Client::Kubekit,
        Client::KubekitJson,
        Client::KubeRs,
        Client::Go,
        Client::GoCbor,
    ];

    const ALL: [Client; 10] = [
        Client::Kubekit,
        Client::KubekitJson,
        Client::KubekitCompact,
        Client::KubekitMetadata,
        Client::KubekitMetadataStrip,
        Client::KubeRs,
        Client::Go,
        Client::GoCbor,
        Client::Floor(Encoding::Json),
        Client::Floor(Encoding::Protobuf),
    ];

    fn name(self) -> &'static str {
        match self {
            Client::KubeRs => "kube-rs",
            Client::Go => "client-go",
            Client::GoCbor => "client-go-cbor",
            Client::Floor(encoding) => encoding.client_name(),
            _ => self.cache().map_or("", Cache::client_name),
        }
    }

    /// The cache of a kubekit client; `None` for the peers.
    fn cache(self) -> Option<Cache> {
        match self {
            Client::Kubekit => Some(Cache::Typed),
            Client::KubekitJson => Some(Cache::TypedJson),
            Client::KubekitCompact => Some(Cache::Compact),
            Client::KubekitMetadata => Some(Cache::Metadata),
            Client::KubekitMetadataStrip => Some(Cache::MetadataStrip),
            Client::KubeRs | Client::Go | Client::GoCbor | Client::Floor(_) => None,
        }
    }

    fn is_kubekit(self) -> bool {
        self.cache().is_some()
    }
}

/// Command-line options of `kubekit-bench informer`.
pub struct Options {
    pods: usize,
    /// The shapes of object measured, one table each (`--shape`, `--corpus`).
    shapes: Vec<Shape>,
    updates: usize,
    runs: usize,
    clients: Vec<Client>,
    go_bin: Option<PathBuf>,
    kube_rs_bin: Option<PathBuf>,
    /// kubekit's peers (`bench/kubekit-informer`).
    kubekit_bin: Option<PathBuf>,
    fixture: PathBuf,
    verbose: bool,
    kubeconfig: Option<PathBuf>,
    /// `--link RATE/RTT`: the peers reach the real cluster through a link so shaped.
    link: Option<Link>,
    timeout: Duration,
    command_line: String,
}

impl Options {
    /// Parses the options that follow the `informer` subcommand.
    pub fn parse(args: impl Iterator<Item = String>) -> Result<Self, String> {
        let args: Vec<String> = args.collect();
        let mut clients_given = false;
        let mut options = Self {
            pods: 10_000,
            shapes: vec![Shape::Fixture],
            updates: 10_000,
            runs: 3,
            clients: Client::DEFAULT.to_vec(),
            go_bin: None,
            kube_rs_bin: None,
            kubekit_bin: None,
            fixture: default_fixture(),
            verbose: false,
            kubeconfig: None,
            link: None,
            timeout: Duration::from_secs(600),
            command_line: format!("kubekit-bench informer {}", args.join(" ")),
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--pods" => options.pods = option_count(&mut args, "--pods")?,
                "--resource" => match option_value(&mut args, "--resource")?.as_str() {
                    "pods" => options.shapes = vec![Shape::Fixture],
                    "widgets" => options.shapes = vec![Shape::Widgets],
                    other => return Err(format!("--resource {other:?}: pods or widgets")),
                },
                "--shape" => {
                    let list = option_value(&mut args, "--shape")?;
                    options.shapes = list
                        .split(',')
                        .map(Shape::parse)
                        .collect::<Result<_, _>>()?;
                }
                "--corpus" => options.shapes = Shape::CORPUS.to_vec(),
                "--updates" => options.updates = option_count(&mut args, "--updates")?,
                "--runs" => options.runs = option_count(&mut args, "--runs")?,
                "--timeout" => {
                    let seconds = option_count(&mut args, "--timeout")?;
                    options.timeout = Duration::from_secs(seconds as u64);
                }
                "--clients" => {
                    options.clients = parse_clients(&option_value(&mut args, "--clients")?)?;
                    clients_given = true;
                }
                "--go-bin" => options.go_bin = Some(option_value(&mut args, "--go-bin")?.into()),
                "--kube-rs-bin" => {
                    options.kube_rs_bin = Some(option_value(&mut args, "--kube-rs-bin")?.into())
                }
                "--kubekit-bin" => {
                    options.kubekit_bin = Some(option_value(&mut args, "--kubekit-bin")?.into())
                }
                "--fixture" => options.fixture = option_value(&mut args, "--fixture")?.into(),
                "--kubeconfig" => {
                    options.kubeconfig = Some(option_value(&mut args, "--kubeconfig")?.into())
                }
                "--link" => options.link = Some(Link::parse(&option_value(&mut args, "--link")?)?),
                "--verbose" => options.verbose = true,
                other => return Err(format!("unknown option {other:?}")),
            }
        }
        if options.pods == 0 || options.runs == 0 {
            return Err("--pods and --runs must be positive".into());
        }
        if options.link.is_some() && options.kubeconfig.is_none() {
            return Err("--link needs a real cluster (--real or --kubeconfig)".into());
        }
        if options.kubeconfig.is_none() && options.shapes != [Shape::Fixture] {
            return Err("--shape and --corpus need a real cluster (--real or --kubeconfig)".into());
        }
        if options.shapes.contains(&Shape::Widgets) {
            if options.shapes.len() > 1 {
                return Err("--shape widgets is measured alone (its clients differ)".into());
            }
            if !clients_given {
                options.clients = Client::WIDGETS.to_vec();
            }
        } else if options.kubeconfig.is_some() && !clients_given {
            options.clients.extend(Client::FLOORS);
        }
        Ok(options)
    }
}

/// `bench/fixtures/pods.json` of the repository this program was built from.
pub(crate) fn default_fixture() -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .parent()
        .unwrap_or(crate_dir)
        .join("fixtures/pods.json")
}

/// Parses `kubekit,kube-rs,client-go` (any non-empty subset, in the order given).
fn parse_clients(list: &str) -> Result<Vec<Client>, String> {
    let mut clients = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let client = Client::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or(format!(
                "--clients: unknown client {name:?} (kubekit, kubekit-json, kubekit-compact, kubekit-metadata, kubekit-metadata-strip, kube-rs, client-go, client-go-cbor, reader-json, reader-protobuf)"
            ))?;
        if !clients.contains(&client) {
            clients.push(client);
        }
    }
    if clients.is_empty() {
        return Err("--clients: no client given".into());
    }
    Ok(clients)
}

/// How to start a peer.
struct Program {
    client: Client,
    path: PathBuf,
    /// Arguments before the peer options (the subcommand of kubekit's peer).
    args: Vec<String>,
    /// Environment variables it runs with.
    env: Vec<(&'static str, &'static str)>,
}

/// The programs of the clients, their informers caching `kind`.
fn programs(options: &Options, kind: Kind) -> Result<Vec<Program>, String> {
    let this = std::env::current_exe().map_err(|e| format!("locating kubekit-bench: {e}"))?;
    let kubekit =
        (options.kubekit_bin.clone()).unwrap_or_else(|| this.with_file_name("kubekit-informer"));
    options
        .clients
        .iter()
        .map(|&client| {
            let (path, args) = match client {
                _ if client.is_kubekit() => {
                    let flag = client.cache().and_then(Cache::flag);
                    let args = ["informer-peer"].into_iter().chain(flag);
                    (kubekit.clone(), args.map(str::to_string).collect())
                }
                Client::Floor(encoding) => (
                    kubekit.clone(),
                    vec!["floor-peer".to_string(), encoding.flag().to_string()],
                ),
                Client::KubeRs => (
                    options
                        .kube_rs_bin
                        .clone()
                        .unwrap_or_else(|| this.with_file_name("kube-rs-informer")),
                    Vec::new(),
                ),
                _ => (
                    options
                        .go_bin
                        .clone()
                        .ok_or("client-go needs --go-bin PATH (the program of bench/go/informer)")?,
                    Vec::new(),
                ),
            };
            if !path.is_file() {
                return Err(format!(
                    "the {} peer {} does not exist (bench/run.sh informer builds it; or leave it out with --clients)",
                    client.name(),
                    path.display()
                ));
            }
            let mut args = args;
            if kind != Kind::Pods {
                args.extend(["--resource".to_string(), kind.resource().to_string()]);
            }
            let env = match client {
                Client::GoCbor => vec![
                    ("KUBE_FEATURE_ClientsAllowCBOR", "true"),
                    ("KUBE_FEATURE_ClientsPreferCBOR", "true"),
                ],
                _ => Vec::new(),
            };
            Ok(Program {
                client,
                path,
                args,
                env,
            })
        })
        .collect()
}

/// Where the peers sync from.
enum Source {
    Replay(ReplayServer),
    Cluster(Cluster, PathBuf),
}

impl Source {
    fn peer_args(&self) -> [String; 2] {
        match self {
            Source::Replay(server) => ["--server".into(), server.url()],
            Source::Cluster(_, kubeconfig) => {
                ["--kubeconfig".into(), kubeconfig.display().to_string()]
            }
        }
    }
}

/// One peer run's reports.
#[derive(Debug, Clone)]
struct Sample {
    synced: Synced,
    updated: Option<Updated>,
    /// Against a real cluster: seconds from the writer's last patch to the peer's
    /// `updated` line.
    lag_seconds: Option<f64>,
}

/// What the orchestrator expects of each peer.
struct Expect {
    pods: usize,
    updates: usize,
    /// Against a real cluster other pods may exist: at least `pods` objects.
    at_least: bool,
}

impl Expect {
    fn check_synced(&self, client: Client, synced: &Synced) -> Result<(), String> {
        let objects = synced.objects as usize;
        if synced.client != client.name() {
            return Err(format!("reported as {:?}", synced.client));
        }
        if objects < self.pods || (!self.at_least && objects != self.pods) {
            return Err(format!("synced {objects} objects, expected {}", self.pods));
        }
        Ok(())
    }

    fn check_updated(&self, client: Client, updated: &Updated) -> Result<(), String> {
        if updated.client != client.name() || updated.updates as usize != self.updates {
            return Err(format!(
                "reported {} updates as {:?}, expected {} as {:?}",
                updated.updates,
                updated.client,
                self.updates,
                client.name()
            ));
        }
        Ok(())
    }
}

/// Reads the peer's next line; `what` names the line expected.
pub(crate) async fn next_line(
    lines: &mut Lines<BufReader<ChildStdout>>,
    what: &str,
) -> Result<Line, String> {
    match lines.next_line().await {
        Ok(Some(line)) => Line::parse(&line),
        Ok(None) => Err(format!("exited before printing its `{what}` line")),
        Err(e) => Err(format!("reading its output: {e}")),
    }
}

/// Runs one peer to the end; any failure kills it.
async fn run_peer(
    program: &Program,
    source: &Source,
    expect: &Expect,
    timeout: Duration,
) -> Result<Sample, String> {
    let mut child = Command::new(&program.path)
        .args(&program.args)
        .envs(program.env.iter().copied())
        .args(source.peer_args())
        .args(["--updates".to_string(), expect.updates.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", program.path.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout pipe")?;
    let mut lines = BufReader::new(stdout).lines();
    let client = program.client;
    let outcome = tokio::time::timeout(timeout, async {
        let synced = match next_line(&mut lines, "synced").await? {
            Line::Synced(synced) => synced,
            Line::Updated(_) => return Err("printed `updated` before `synced`".to_string()),
        };
        expect.check_synced(client, &synced)?;
        let (mut updated, mut lag_seconds) = (None, None);
        if expect.updates > 0 {
            let report = match source {
                Source::Replay(server) => {
                    tokio::select! {
                        () = server.wait_watching() => server.trigger(),
                        _ = child.wait() => return Err("exited before its watch was open".into()),
                    }
                    next_line(&mut lines, "updated").await?
                }
                Source::Cluster(cluster, _) => {
                    // The writer's patches and the peer's report, side by side.
                    let writes = async {
                        cluster.patch(expect.updates).await?;
                        Ok::<_, String>(std::time::Instant::now())
                    };
                    let report = async {
                        let line = next_line(&mut lines, "updated").await;
                        (line, std::time::Instant::now())
                    };
                    let (written, (line, reported)) = tokio::join!(writes, report);
                    lag_seconds = Some(reported.saturating_duration_since(written?).as_secs_f64());
                    line?
                }
            };
            let report = match report {
                Line::Updated(report) => report,
                Line::Synced(_) => return Err("printed `synced` twice".to_string()),
            };
            expect.check_updated(client, &report)?;
            updated = Some(report);
        }
        if let Ok(Some(line)) = lines.next_line().await {
            return Err(format!("printed more than expected: {line:?}"));
        }
        match child.wait().await {
            Ok(status) if status.success() => Ok(Sample {
                synced,
                updated,
                lag_seconds,
            }),
            _ => Err("did not exit successfully".into()),
        }
    })
    .await
    .unwrap_or_else(|_| Err(format!("timed out after {timeout:?}")));
    match outcome {
        Ok(sample) => Ok(sample),
        Err(e) => Err(format!("{e}; {}", end(&mut child).await)),
    }
}

/// How a failed peer ended: its exit status if it exits within a second, else killed.
pub(crate) async fn end(child: &mut Child) -> String {
    match tokio::time::timeout(Duration::from_secs(1), child.wait()).await {
        Ok(Ok(status)) => status.to_string(),
        Ok(Err(e)) => format!("exit status unknown: {e}"),
        Err(_) => {
            let _ = child.kill().await;
            "killed".into()
        }
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// A figure of the table, read from one run's reports.
struct Figure {
    label: &'static str,
    value: fn(&Sample, usize) -> Option<f64>,
    decimals: usize,
    /// A figure of the watch updates (none without them).
    of_updates: bool,
}

const FIGURES: [Figure; 9] = [
    Figure {
        label: "sync wall (s)",
        value: |s, _| Some(s.synced.sync_seconds),
        decimals: 2,
        of_updates: false,
    },
    Figure {
        label: "CPU at sync (s)",
        value: |s, _| Some(s.synced.cpu_seconds),
        decimals: 2,
        of_updates: false,
    },
    Figure {
        label: "RSS after sync (MiB)",
        value: |s, _| Some(s.synced.rss_bytes as f64 / MIB),
        decimals: 1,
        of_updates: false,
    },
    Figure {
        label: "RSS after sync (KiB/pod)",
        value: |s, pods| Some(s.synced.rss_bytes as f64 / 1024.0 / pods as f64),
        decimals: 1,
        of_updates: false,
    },
    Figure {
        label: "peak RSS at sync (MiB)",
        value: |s, _| Some(s.synced.peak_rss_bytes as f64 / MIB),
        decimals: 1,
        of_updates: false,
    },
    Figure {
        label: "watch events/s",
        value: |s, _| s.updated.as_ref().map(|u| u.events_per_second),
        decimals: 0,
        of_updates: true,
    },
    Figure {
        label: "CPU per event (µs)",
        value: |s, _| {
            let updated = s.updated.as_ref()?;
            let cpu = updated.cpu_seconds - s.synced.cpu_seconds;
            Some(cpu / updated.updates as f64 * 1e6)
        },
        decimals: 0,
        of_updates: true,
    },
    Figure {
        label: "last event after writes (ms)",
        value: |s, _| Some(s.lag_seconds? * 1e3),
        decimals: 0,
        of_updates: true,
    },
    Figure {
        label: "RSS after updates (MiB)",
        value: |s, _| s.updated.as_ref().map(|u| u.rss_bytes as f64 / MIB),
        decimals: 1,
        of_updates: true,
    },
];

/// The median of `values` (the mean of the middle two for an even count).
pub(crate) fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// One run's figures on one line, for stderr.
fn raw_figures(sample: &Sample, pods: usize) -> String {
    FIGURES
        .iter()
        .filter_map(|f| {
            (f.value)(sample, pods).map(|v| format!("{} {v:.prec$}", f.label, prec = f.decimals))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every run of one client.
struct ClientRuns {
    client: Client,
    samples: Vec<Sample>,
    failures: Vec<String>,
}

impl ClientRuns {
    fn median(&self, figure: &Figure, pods: usize) -> Option<f64> {
        median(
            self.samples
                .iter()
                .filter_map(|s| (figure.value)(s, pods))
                .collect(),
        )
    }
}

/// Prints the table of medians and ratios (each kubekit cache against each peer).
fn print_table(results: &[ClientRuns], pods: usize, updates: usize, runs: usize) {
    let (ours, peers): (Vec<&ClientRuns>, Vec<&ClientRuns>) =
        results.iter().partition(|r| r.client.is_kubekit());
    // Against the floor, only the protobuf reader: the JSON one is slower than it.
    let peers: Vec<&ClientRuns> = peers
        .into_iter()
        .filter(|r| r.client != Client::Floor(Encoding::Json))
        .collect();
    let pairs: Vec<(&ClientRuns, &ClientRuns)> = ours
        .iter()
        .flat_map(|&kubekit| peers.iter().map(move |&peer| (kubekit, peer)))
        .collect();
    let width = |r: &ClientRuns| r.client.name().len().max(14) + 2;
    let mut header = format!("{:<28}", format!("median of {runs} runs"));
    for r in results {
        header += &format!("{:>w$}", r.client.name(), w = width(r));
    }
    let ratio = |(kubekit, peer): &(&ClientRuns, &ClientRuns)| {
        format!("{}/{}", kubekit.client.name(), peer.client.name())
    };
    let ratio_width = |pair: &(&ClientRuns, &ClientRuns)| ratio(pair).len().max(26) + 2;
    for pair in &pairs {
        header += &format!("{:>w$}", ratio(pair), w = ratio_width(pair));
    }
    println!("{header}");
    for figure in FIGURES.iter().filter(|f| updates > 0 || !f.of_updates) {
        let mut row = format!("{:<28}", figure.label);
        let value = |r: &ClientRuns| r.median(figure, pods);
        for r in results {
            let cell = match value(r) {
                Some(v) => format!("{v:.prec$}", prec = figure.decimals),
                None if r.samples.is_empty() => "failed".into(),
                None => "-".into(),
            };
            row += &format!("{cell:>w$}", w = width(r));
        }
        for pair @ (kubekit, peer) in &pairs {
            let cell = match (value(kubekit), value(peer)) {
                (Some(ours), Some(theirs)) if theirs > 0.0 => format!("{:.2}", ours / theirs),
                _ => "-".into(),
            };
            row += &format!("{cell:>w$}", w = ratio_width(pair));
        }
        println!("{row}");
    }
    if updates > 0 {
        println!(
            "ratios: below 1 is better for kubekit, except watch events/s (above 1 is better)"
        );
    } else {
        println!("ratios: below 1 is better for kubekit");
    }
    for r in results.iter().filter(|r| !r.failures.is_empty()) {
        println!(
            "{}: {} of {runs} runs failed; first: {}",
            r.client.name(),
            r.failures.len(),
            r.failures[0]
        );
    }
}

/// Runs the benchmark and prints its table.
pub fn run(options: Options) -> Result<(), String> {
    let fixture = Fixture::load(&options.fixture)?;
    // Every shape's peers are found before any object is made.
    let shapes = (options.shapes.iter())
        .map(|&shape| Ok((shape, programs(&options, shape.kind())?)))
        .collect::<Result<Vec<_>, String>>()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("building the runtime: {e}"))?;
    runtime.block_on(async {
        for (shape, programs) in &shapes {
            run_shape(&options, &fixture, *shape, programs).await?;
        }
        Ok(())
    })
}

/// Measures the clients of `programs` on objects of `shape` and prints their table.
async fn run_shape(
    options: &Options,
    fixture: &Fixture,
    shape: Shape,
    programs: &[Program],
) -> Result<(), String> {
    let source = match &options.kubeconfig {
        Some(kubeconfig) => {
            println!(
                "informer: {} {} in a real cluster ({}), then {} label patches; {} runs",
                options.pods,
                match shape {
                    Shape::Fixture => "pods",
                    Shape::Widgets => "widgets (bench.kubekit.dev/v1)",
                    _ => shape.name(),
                },
                kubeconfig.display(),
                options.updates,
                options.runs
            );
            let cluster = match shape {
                Shape::Fixture => Cluster::populate(kubeconfig, fixture, options.pods).await?,
                _ => Cluster::populate_shape(kubeconfig, shape, options.pods).await?,
            };
            let peers_kubeconfig = match options.link {
                Some(link) => {
                    let linked = link::linked_kubeconfig(kubeconfig, link).await?;
                    println!(
                        "link: {} Mbit/s each way, {:?} round trip (a pacing proxy; the writer is not on it)",
                        link.bits_per_second as f64 / 1e6,
                        link.round_trip
                    );
                    linked
                }
                None => kubeconfig.clone(),
            };
            Source::Cluster(cluster, peers_kubeconfig)
        }
        None => {
            let replica = fixture.replicate(options.pods, options.updates);
            println!(
                "informer: {} pods, then {} MODIFIED events; {} runs; replay server on 127.0.0.1 (HTTP/1.1, JSON)",
                options.pods, options.updates, options.runs
            );
            println!(
                "pods: {} bytes of JSON in total, {} per pod on average; events: {} bytes",
                replica.items.bytes().len(),
                replica.items.bytes().len() / options.pods,
                replica.events.bytes().len()
            );
            Source::Replay(ReplayServer::start(replica, options.verbose).await?)
        }
    };
    if shape == Shape::Fixture {
        println!(
            "fixture: {} ({} pods, {} bytes/pod on average)",
            options.fixture.display(),
            fixture.len(),
            fixture.average_bytes()
        );
    }
    println!("command: {}", options.command_line);
    let results = measure(options, programs, &source).await;
    // The table first: a clean-up that fails or times out loses no figure.
    print_table(&results, options.pods, options.updates, options.runs);
    if let Source::Cluster(cluster, _) = &source {
        cluster.clean_up().await?;
    }
    Ok(())
}

async fn measure(options: &Options, programs: &[Program], source: &Source) -> Vec<ClientRuns> {
    let expect = Expect {
        pods: options.pods,
        updates: options.updates,
        at_least: matches!(source, Source::Cluster(..)),
    };
    let mut results: Vec<ClientRuns> = programs
        .iter()
        .map(|p| ClientRuns {
            client: p.client,
            samples: Vec::new(),
            failures: Vec::new(),
        })
        .collect();
    for run in 0..options.runs {
        // Alternate the order, so no client always runs first (or last).
        let mut order: Vec<usize> = (0..programs.len()).collect();
        if run % 2 == 1 {
            order.reverse();
        }
        for index in order {
            let program = &programs[index];
            if let Source::Replay(server) = source {
                server.reset();
            }
            let outcome = run_peer(program, source, &expect, options.timeout).await;
            let name = program.client.name();
            match outcome {
                Ok(sample) => {
                    eprintln!(
                        "run {} {name}: {}",
                        run + 1,
                        raw_figures(&sample, options.pods)
                    );
                    results[index].samples.push(sample);
                }
                Err(e) => {
                    eprintln!("run {} {name}: FAILED: {e}", run + 1);
                    results[index].failures.push(e);
                }
            }
            if let (true, Source::Replay(server)) = (options.verbose, source) {
                let stats = server.stats();
                eprintln!(
                    "run {} {name}: server: {} lists, {} watches, {} bytes",
                    run + 1,
                    stats.lists,
                    stats.watches,
                    stats.bytes
                );
            }
        }
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0]), Some(3.0));
        assert_eq!(median(vec![5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn clients() {
        assert_eq!(
            parse_clients("kube-rs,kubekit,kube-rs").unwrap(),
            [Client::KubeRs, Client::Kubekit]
        );
        assert!(parse_clients("kubekit,go").is_err());
        assert_eq!(
            parse_clients("kubekit-metadata,kubekit-metadata-strip").unwrap(),
            [Client::KubekitMetadata, Client::KubekitMetadataStrip]
        );
        assert!(parse_clients(",").is_err());
    }

    #[test]
    fn options() {
        let args = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        let o = Options::parse(args("--pods 5 --updates 7 --runs 1").into_iter()).unwrap();
        assert_eq!((o.pods, o.updates, o.runs), (5, 7, 1));
        assert_eq!(o.clients, Client::DEFAULT);
        let o = Options::parse(args("--kubeconfig k --updates 7").into_iter()).unwrap();
        assert_eq!(o.updates, 7);
        assert_eq!(
            o.clients[4..],
            Client::FLOORS,
            "the floor joins against a cluster"
        );
        let o = Options::parse(args("--kubeconfig k --clients kubekit").into_iter()).unwrap();
        assert_eq!(o.clients, [Client::Kubekit], "unless the clients are given");
        let o = Options::parse(args("--kubeconfig k --resource widgets").into_iter()).unwrap();
        assert_eq!(
            o.clients,
            Client::WIDGETS,
            "the CBOR and JSON modes of both sides"
        );
        assert_eq!(o.shapes, [Shape::Widgets]);
        let o = Options::parse(args("--kubeconfig k --corpus").into_iter()).unwrap();
        assert_eq!(o.shapes, Shape::CORPUS);
        assert_eq!(o.clients[4..], Client::FLOORS);
        let o = Options::parse(args("--kubeconfig k --shape nodes,secrets").into_iter()).unwrap();
        assert_eq!(o.shapes, [Shape::Nodes, Shape::Secrets]);
        for bad in [
            "--pods 0",
            "--pods",
            "--runs x",
            "--what",
            "--resource nodes",
            "--resource widgets",
            "--corpus",
            "--kubeconfig k --shape pods",
            "--kubeconfig k --shape widgets,nodes",
        ] {
            assert!(Options::parse(args(bad).into_iter()).is_err(), "{bad}");
        }
    }

    #[test]
    fn expectations() {
        let synced = |client: &str, objects| Synced {
            client: client.into(),
            objects,
            sync_seconds: 1.0,
            cpu_seconds: 1.0,
            rss_bytes: 1,
            peak_rss_bytes: 1,
        };
        let exact = Expect {
            pods: 10,
            updates: 3,
            at_least: false,
        };
        assert!(
            exact
                .check_synced(Client::KubeRs, &synced("kube-rs", 10))
                .is_ok()
        );
        assert!(
            exact
                .check_synced(Client::KubeRs, &synced("kubekit", 10))
                .is_err()
        );
        assert!(
            exact
                .check_synced(Client::KubeRs, &synced("kube-rs", 11))
                .is_err()
        );
        let at_least = Expect {
            at_least: true,
            ..exact
        };
        assert!(
            at_least
                .check_synced(Client::Go, &synced("client-go", 11))
                .is_ok()
        );
        assert!(
            at_least
                .check_synced(Client::Go, &synced("client-go", 9))
                .is_err()
        );
    }
}
