//! `kubekit-bench webhook`: admissions per second and latency of kubekit's webhook server
//! against controller-runtime's, both validating Apps with the same checks
//! (`app_controller::webhook::AppValidator` and its Go transcription in
//! `bench/go/webhook`), both serving HTTP/1.1 over TLS with one certificate (ECDSA P-256,
//! issued by a CA this program generates), both reading it from a directory laid out as
//! the kubelet mounts a Secret (`tls.crt` and `tls.key` through the `..data` symlink).
//!
//! The load: C connections, each sending `AdmissionReview`s back to back (HTTP/1.1
//! keep-alive, a closed loop), for a warm-up second and then the measured seconds; one
//! review in four is of an invalid App, which must be denied, the others allowed. A
//! response that is not a 200 with the expected verdict is a failed admission. Each
//! server runs as its own process, measured one after the other (their order alternating
//! from run to run) by a load generator in this process; the server's CPU per admission is
//! read from `/proc/<pid>/stat`. With `--rotate`, the certificate is replaced every second
//! while the load runs (a new key and certificate from the same CA, swapped in at once by
//! moving the `..data` symlink, as the kubelet does), and failed admissions count what the
//! rotation broke; the connections are then replaced every 50 reviews, so that new TLS
//! handshakes meet each new certificate.
//!
//! `kubekit-bench webhook-peer --cert-dir DIR --port PORT` is kubekit's server.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use app_controller::App;
use app_controller::webhook::AppValidator;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use kubekit::webhook::{CertificateAuthority, Certificates, WebhookServer, validate_path};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_util::sync::CancellationToken;

use crate::informer::median;

/// The options of `kubekit-bench webhook`.
#[derive(Debug)]
pub struct Options {
    go_bin: Option<PathBuf>,
    runs: usize,
    seconds: f64,
    connections: Vec<usize>,
    rotate: bool,
}

impl Options {
    /// Parses `--go-bin PATH --runs N --seconds S --connections C,... --rotate`.
    pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut options = Options {
            go_bin: None,
            runs: 3,
            seconds: 5.0,
            connections: vec![1, 8, 32],
            rotate: false,
        };
        while let Some(arg) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
            match arg.as_str() {
                "--go-bin" => options.go_bin = Some(value()?.into()),
                "--runs" => options.runs = positive(&arg, &value()?)?,
                "--seconds" => {
                    let v = value()?;
                    options.seconds = v
                        .parse()
                        .ok()
                        .filter(|s: &f64| *s > 0.0)
                        .ok_or_else(|| format!("--seconds: not a positive number: {v:?}"))?;
                }
                "--connections" => {
                    options.connections = value()?
                        .split(',')
                        .map(|c| positive("--connections", c))
                        .collect::<Result<_, _>>()?;
                }
                "--rotate" => options.rotate = true,
                _ => return Err(format!("unknown option {arg:?}")),
            }
        }
        Ok(options)
    }
}

fn positive(flag: &str, value: &str) -> Result<usize, String> {
    value
        .parse()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("{flag}: not a positive integer: {value:?}"))
}

/// A certificate directory laid out as the kubelet mounts a Secret: `tls.crt` and
/// `tls.key` are symlinks through `..data`, which points at the current version's
/// directory and is replaced in one rename.
struct CertDir {
    root: PathBuf,
    ca: CertificateAuthority,
    version: u64,
}

impl CertDir {
    fn create(root: &Path) -> Result<Self, String> {
        let ca = CertificateAuthority::generate("kubekit-bench webhook CA")
            .map_err(|e| e.to_string())?;
        std::fs::create_dir_all(root).map_err(|e| format!("creating {}: {e}", root.display()))?;
        let mut dir = CertDir {
            root: root.to_owned(),
            ca,
            version: 0,
        };
        dir.rotate()?;
        for file in ["tls.crt", "tls.key"] {
            std::os::unix::fs::symlink(format!("..data/{file}"), root.join(file))
                .map_err(|e| format!("linking {file}: {e}"))?;
        }
        Ok(dir)
    }

    /// Writes a new key and certificate and swaps them in at once.
    fn rotate(&mut self) -> Result<(), String> {
        let io = |what: &str, e: std::io::Error| format!("rotating the certificate ({what}): {e}");
        let (cert, key) = self.ca.issue(&["127.0.0.1"]).map_err(|e| e.to_string())?;
        self.version += 1;
        let name = format!("..v{}", self.version);
        let dir = self.root.join(&name);
        std::fs::create_dir(&dir).map_err(|e| io("mkdir", e))?;
        std::fs::write(dir.join("tls.crt"), cert).map_err(|e| io("tls.crt", e))?;
        std::fs::write(dir.join("tls.key"), key).map_err(|e| io("tls.key", e))?;
        let link = self.root.join("..data_tmp");
        std::os::unix::fs::symlink(&name, &link).map_err(|e| io("symlink", e))?;
        std::fs::rename(&link, self.root.join("..data")).map_err(|e| io("rename", e))?;
        if self.version > 2 {
            let old = self.root.join(format!("..v{}", self.version - 2));
            std::fs::remove_dir_all(old).map_err(|e| io("removing", e))?;
        }
        Ok(())
    }

    fn client_config(&self) -> Result<Arc<rustls::ClientConfig>, String> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(self.ca.ca_bundle().as_bytes()) {
            let cert = cert.map_err(|e| format!("the CA bundle: {e}"))?;
            roots.add(cert).map_err(|e| format!("the CA bundle: {e}"))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

/// A server under test, running as a process of its own.
struct Server {
    name: &'static str,
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(listener.local_addr().map_err(|e| e.to_string())?.port())
}

fn start(name: &'static str, program: &Path, args: &[String]) -> Result<Server, String> {
    let port = free_port()?;
    let child = Command::new(program)
        .args(args)
        .args(["--port".to_string(), port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("starting {}: {e}", program.display()))?;
    Ok(Server { name, child, port })
}

/// The `AdmissionReview` of creating `app`, as kube-apiserver sends it.
fn review(uid: &str, app: serde_json::Value) -> Bytes {
    let name = app["metadata"]["name"].clone();
    let gvk = serde_json::json!({"group": "appcontroller.k8s.io", "version": "v1", "kind": "App"});
    let review = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": gvk,
            "resource": {"group": "appcontroller.k8s.io", "version": "v1", "resource": "apps"},
            "requestKind": gvk,
            "requestResource": {"group": "appcontroller.k8s.io", "version": "v1", "resource": "apps"},
            "name": name,
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "kubernetes-admin", "groups": ["kubeadm:cluster-admins", "system:authenticated"]},
            "object": app,
            "oldObject": null,
            "dryRun": false,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "kubectl-client-side-apply"}
        }
    });
    Bytes::from(review.to_string())
}

fn app(
    name: &str,
    deployment: &str,
    image: &str,
    replicas: i32,
    service: &str,
) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "appcontroller.k8s.io/v1",
        "kind": "App",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": "6d1a2b0c-31f4-4a9e-9a57-3f2f0e5d8c11",
            "creationTimestamp": "2026-11-26T12:00:00Z",
            "labels": {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "storefront"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}
        },
        "spec": {
            "deploymentTemplate": {"name": deployment, "image": image, "replicas": replicas},
            "serviceTemplate": {"name": service}
        }
    })
}

/// The reviews the load cycles through, each with whether it must be allowed: three valid
/// Apps, then one with a negative replica count and a Service named as its Deployment.
fn reviews() -> Vec<(Bytes, bool)> {
    vec![
        (
            review("1", app("web", "web", "nginx:1.27", 3, "web-svc")),
            true,
        ),
        (
            review(
                "2",
                app("shop", "shop", "registry.local/shop:2", 2, "shop-svc"),
            ),
            true,
        ),
        (
            review("3", app("cart", "cart", "cart@sha256:abc", 1, "")),
            true,
        ),
        (review("4", app("bad", "bad", "nginx", -1, "bad")), false),
    ]
}

/// What one load run saw.
#[derive(Debug, Default)]
struct Load {
    admissions: u64,
    failed: u64,
    first_failure: Option<String>,
    latencies_us: Vec<u32>,
    seconds: f64,
}

/// Whether a response body is an `AdmissionReview` with `allowed` as expected.
fn verdict_is(body: &[u8], allowed: bool) -> Result<(), String> {
    let review: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    match review["response"]["allowed"].as_bool() {
        Some(a) if a == allowed => Ok(()),
        Some(a) => Err(format!("allowed {a}, expected {allowed}: {review}")),
        None => Err(format!("no response.allowed: {review}")),
    }
}

/// Opens an HTTP/1.1 connection over TLS to the server, verifying its certificate.
async fn open(
    port: u16,
    tls: &TlsConnector,
) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>, String> {
    let tcp = TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| format!("connecting: {e}"))?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let name = rustls::pki_types::ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into());
    let stream = tls
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake: {e}"))?;
    let (sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| format!("HTTP handshake: {e}"))?;
    tokio::spawn(conn);
    Ok(sender)
}

/// Sends one review on `sender` and checks the verdict.
async fn admit(
    sender: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    port: u16,
    body: &Bytes,
    allowed: bool,
) -> Result<(), String> {
    let request = hyper::Request::post(validate_path::<App>())
        .header("host", format!("127.0.0.1:{port}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, */*")
        .body(Full::new(body.clone()))
        .map_err(|e| e.to_string())?;
    sender
        .ready()
        .await
        .map_err(|e| format!("connection: {e}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("request: {e}"))?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("response body: {e}"))?
        .to_bytes();
    if status != hyper::StatusCode::OK {
        return Err(format!(
            "status {status}: {}",
            String::from_utf8_lossy(&body)
        ));
    }
    verdict_is(&body, allowed)
}

/// One connection's closed loop: sends reviews until `stop`, recording those that
/// completed while `measuring` was set; with `reconnect_every`, a new connection (and TLS
/// handshake) every that many reviews.
async fn connection(
    port: u16,
    tls: TlsConnector,
    reconnect_every: Option<u64>,
    measuring: Arc<AtomicBool>,
    stop: CancellationToken,
) -> Result<Load, String> {
    let reviews = reviews();
    let mut load = Load::default();
    let mut sender = None;
    for (sent, (body, allowed)) in (0u64..).zip(reviews.iter().cycle()) {
        if stop.is_cancelled() || load.failed > 100 {
            break;
        }
        if reconnect_every.is_some_and(|n| sent % n == 0) {
            sender = None;
        }
        let started = Instant::now();
        let outcome = async {
            if sender.is_none() {
                sender = Some(open(port, &tls).await?);
            }
            match sender.as_mut() {
                Some(sender) => admit(sender, port, body, *allowed).await,
                None => unreachable!("a connection was just opened"),
            }
        }
        .await;
        if outcome.is_err() {
            sender = None; // a broken connection is replaced, as kube-apiserver's would be
        }
        if !measuring.load(Ordering::Relaxed) {
            continue;
        }
        load.admissions += 1;
        load.latencies_us
            .push(u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX));
        if let Err(e) = outcome {
            load.failed += 1;
            load.first_failure.get_or_insert(e);
        }
    }
    Ok(load)
}

/// With `--rotate`, each connection is replaced after this many reviews, so that TLS
/// handshakes meet every certificate the rotation installs.
const RECONNECT_EVERY: u64 = 50;

/// Drives `connections` connections at the server for a warm-up second and `seconds`
/// measured ones; with `rotation`, the certificate is rotated every second meanwhile.
async fn drive(
    port: u16,
    tls: TlsConnector,
    connections: usize,
    seconds: f64,
    rotation: Option<&mut CertDir>,
) -> Result<Load, String> {
    let measuring = Arc::new(AtomicBool::new(false));
    let stop = CancellationToken::new();
    let reconnect_every = rotation.is_some().then_some(RECONNECT_EVERY);
    let tasks: Vec<_> = (0..connections)
        .map(|_| {
            tokio::spawn(connection(
                port,
                tls.clone(),
                reconnect_every,
                measuring.clone(),
                stop.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(1)).await;
    measuring.store(true, Ordering::Relaxed);
    let started = Instant::now();
    let measured = Duration::from_secs_f64(seconds);
    match rotation {
        Some(dir) => {
            while started.elapsed() < measured {
                tokio::time::sleep(Duration::from_secs(1).min(measured)).await;
                dir.rotate()?;
            }
        }
        None => tokio::time::sleep(measured).await,
    }
    measuring.store(false, Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    stop.cancel();
    let mut total = Load {
        seconds: elapsed,
        ..Load::default()
    };
    for task in tasks {
        let load = task.await.map_err(|e| format!("a load task: {e}"))??;
        total.admissions += load.admissions;
        total.failed += load.failed;
        total.latencies_us.extend(load.latencies_us);
        if total.first_failure.is_none() {
            total.first_failure = load.first_failure;
        }
    }
    Ok(total)
}

/// Waits until the server completes a TLS handshake (at most 30 s).
async fn wait_ready(server: &mut Server, tls: &TlsConnector) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(status)) = server.child.try_wait() {
            return Err(format!("{} exited before serving: {status}", server.name));
        }
        let name = rustls::pki_types::ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into());
        if let Ok(tcp) = TcpStream::connect(("127.0.0.1", server.port)).await
            && tls.connect(name, tcp).await.is_ok()
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("{} did not serve within 30 s", server.name));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn cpu_seconds(pid: u32) -> Result<f64, String> {
    informer_protocol::Usage::of_process(pid)
        .map(|u| u.cpu_seconds)
        .map_err(|e| format!("reading /proc/{pid}: {e}"))
}

/// One measurement: a server at one load.
#[derive(Debug)]
struct Sample {
    per_second: f64,
    p50_ms: f64,
    p99_ms: f64,
    cpu_us: f64,
    failed: u64,
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let index = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    f64::from(sorted[index]) / 1000.0
}

async fn measure(
    server: &Server,
    tls: &TlsConnector,
    connections: usize,
    options: &Options,
    rotation: Option<&mut CertDir>,
) -> Result<Sample, String> {
    let pid = server.child.id();
    let cpu_before = cpu_seconds(pid)?;
    let mut load = drive(
        server.port,
        tls.clone(),
        connections,
        options.seconds,
        rotation,
    )
    .await?;
    let cpu = cpu_seconds(pid)? - cpu_before;
    if let Some(failure) = &load.first_failure {
        eprintln!(
            "{}: {} failed admissions; first: {failure}",
            server.name, load.failed
        );
    }
    load.latencies_us.sort_unstable();
    let admissions = load.admissions.max(1) as f64;
    Ok(Sample {
        per_second: load.admissions as f64 / load.seconds,
        p50_ms: percentile(&load.latencies_us, 0.50),
        p99_ms: percentile(&load.latencies_us, 0.99),
        // The CPU counted covers the warm-up's end and the wind-down too: an upper bound.
        cpu_us: cpu * 1e6 / admissions,
        failed: load.failed,
    })
}

/// A row of the table: its label, its value in a sample, its decimals.
type Figure = (&'static str, fn(&Sample) -> f64, usize);

const FIGURES: [Figure; 5] = [
    ("admissions/s", |s| s.per_second, 0),
    ("p50 latency (ms)", |s| s.p50_ms, 3),
    ("p99 latency (ms)", |s| s.p99_ms, 3),
    ("server CPU per admission (µs)", |s| s.cpu_us, 1),
    ("failed admissions", |s| s.failed as f64, 0),
];

/// Runs `kubekit-bench webhook-peer`: kubekit's server, until killed.
pub fn peer(mut args: impl Iterator<Item = String>) -> Result<(), String> {
    let (mut cert_dir, mut port) = (None, None);
    while let Some(arg) = args.next() {
        let value = args.next().ok_or_else(|| format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--cert-dir" => cert_dir = Some(PathBuf::from(value)),
            "--port" => port = Some(positive("--port", &value)?),
            _ => return Err(format!("unknown option {arg:?}")),
        }
    }
    let dir = cert_dir.ok_or("--cert-dir is required")?;
    let port = u16::try_from(port.ok_or("--port is required")?).map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let certificates = Certificates::from_files(dir.join("tls.crt"), dir.join("tls.key"));
        let served = WebhookServer::new(certificates)
            .validator::<App, _>(AppValidator)
            .serve(([127, 0, 0, 1], port).into(), CancellationToken::new())
            .await
            .map_err(|e| e.to_string())?;
        served.stopped().await;
        Ok(())
    })
}

/// Runs the benchmark and prints its table.
pub fn run(options: Options) -> Result<(), String> {
    let go_bin = options
        .go_bin
        .clone()
        .ok_or("--go-bin is required: the controller-runtime server (bench/go/webhook)")?;
    let this = std::env::current_exe().map_err(|e| format!("locating kubekit-bench: {e}"))?;
    let scratch =
        std::env::temp_dir().join(format!("kubekit-bench-webhook-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let mut certs = CertDir::create(&scratch)?;
    let tls = TlsConnector::from(certs.client_config()?);
    let dir = scratch.display().to_string();
    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let result = runtime.block_on(async {
        let mut servers = vec![
            start(
                "kubekit",
                &this,
                &["webhook-peer".into(), "--cert-dir".into(), dir.clone()],
            )?,
            start(
                "controller-runtime",
                &go_bin,
                &["--cert-dir".into(), dir.clone()],
            )?,
        ];
        for server in &mut servers {
            wait_ready(server, &tls).await?;
        }
        println!(
            "webhook: AdmissionReviews of Apps (1 in 4 denied), HTTP/1.1 over TLS, {} s per \
             measurement after 1 s of warm-up, {} runs{}",
            options.seconds,
            options.runs,
            if options.rotate {
                ", the certificate rotated every second"
            } else {
                ""
            }
        );
        // samples[connections index][server index]
        let mut samples: Vec<[Vec<Sample>; 2]> = options
            .connections
            .iter()
            .map(|_| [Vec::new(), Vec::new()])
            .collect();
        for run in 0..options.runs {
            for (c, &connections) in options.connections.iter().enumerate() {
                for turn in 0..2 {
                    let s = (turn + run) % 2;
                    let rotation = options.rotate.then_some(&mut certs);
                    let sample =
                        measure(&servers[s], &tls, connections, &options, rotation).await?;
                    eprintln!(
                        "run {} {} at {connections} connections: {sample:?}",
                        run + 1,
                        servers[s].name
                    );
                    samples[c][s].push(sample);
                }
            }
        }
        for server in &mut servers {
            if let Ok(Some(status)) = server.child.try_wait() {
                return Err(format!(
                    "{} exited during the benchmark: {status}",
                    server.name
                ));
            }
        }
        print_table(&options, &samples);
        Ok(())
    });
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn print_table(options: &Options, samples: &[[Vec<Sample>; 2]]) {
    println!(
        "{:<32}{:>14}{:>20}{:>28}",
        format!("median of {} runs", options.runs),
        "kubekit",
        "controller-runtime",
        "kubekit/controller-runtime"
    );
    for (c, connections) in options.connections.iter().enumerate() {
        println!("{connections} connection(s)");
        for (label, value, decimals) in FIGURES {
            let of =
                |s: usize| median(samples[c][s].iter().map(value).collect()).unwrap_or(f64::NAN);
            let (ours, theirs) = (of(0), of(1));
            let ratio = if theirs > 0.0 {
                format!("{:.2}", ours / theirs)
            } else {
                "-".into()
            };
            println!("  {label:<30}{ours:>14.decimals$}{theirs:>20.decimals$}{ratio:>28}");
        }
    }
    println!("ratios: above 1 is better for kubekit for admissions/s, below 1 for the others");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse_and_refuse_what_is_not_a_positive_number() {
        let args = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let o =
            Options::parse(args("--connections 2,4 --seconds 0.5 --rotate").into_iter()).unwrap();
        assert_eq!(o.connections, vec![2, 4]);
        assert!(o.rotate);
        for bad in ["--connections 0", "--seconds -1", "--runs", "--what"] {
            assert!(Options::parse(args(bad).into_iter()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_verdict_counts_only_when_allowed_is_as_expected() {
        let allowed = br#"{"response":{"uid":"1","allowed":true}}"#;
        assert!(verdict_is(allowed, true).is_ok());
        assert!(verdict_is(allowed, false).is_err());
        assert!(verdict_is(b"{}", true).is_err());
        assert!(verdict_is(b"not json", true).is_err());
    }

    #[test]
    fn percentiles_pick_the_sample_at_or_above_the_rank() {
        let sorted: Vec<u32> = (1..=100).map(|i| i * 1000).collect();
        assert_eq!(percentile(&sorted, 0.5), 50.0);
        assert_eq!(percentile(&sorted, 0.99), 99.0);
        assert!(percentile(&[], 0.5).is_nan());
    }

    #[test]
    fn a_rotated_certificate_directory_always_holds_a_matching_pair_through_its_links() {
        let root =
            std::env::temp_dir().join(format!("kubekit-bench-certdir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let mut dir = CertDir::create(&root).unwrap();
        let first = std::fs::read_to_string(root.join("tls.crt")).unwrap();
        for _ in 0..3 {
            dir.rotate().unwrap();
        }
        let cert = std::fs::read_to_string(root.join("tls.crt")).unwrap();
        assert_ne!(cert, first, "the link follows the new version");
        assert!(
            std::fs::read_to_string(root.join("tls.key"))
                .unwrap()
                .contains("PRIVATE KEY")
        );
        assert!(
            !root.join("..v1").exists(),
            "versions older than the previous are removed"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
