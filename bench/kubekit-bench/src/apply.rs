//! The typed apply benchmark: building and serializing a server-side apply configuration
//! with kubekit's `applyconfigurations` against client-go's, the same Deployment (two
//! labels, three replicas, a selector, a pod template with one container: image, two
//! args, two ports, two env vars, CPU and memory limits), in the same run.
//!
//! Each operation builds the configuration from nothing and serializes it as each
//! client's `Apply` does (serde_json here, encoding/json in Go), one thread each. Before
//! timing, the two bodies of configuration 0 are compared as JSON: the benchmark refuses
//! to compare configurations the two sides did not both produce. Each client runs `--runs`
//! times, alternating, and the best run of each counts.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use kubekit::applyconfigurations::api::apps::v1::{Deployment, DeploymentSpec};
use kubekit::applyconfigurations::api::core::v1::{
    Container, ContainerPort, EnvVar, PodSpec, PodTemplateSpec, ResourceRequirements,
};
use kubekit::applyconfigurations::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kubekit::k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::{option_count, option_value};

/// Configurations per run, at scale 1.
const OPS: u64 = 200_000;

/// Command-line options of `kubekit-bench apply`.
pub struct Options {
    go_bin: Option<PathBuf>,
    runs: usize,
    scale: f64,
}

impl Options {
    /// Parses the options that follow the `apply` subcommand.
    pub fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut options = Self {
            go_bin: None,
            runs: 5,
            scale: 1.0,
        };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--go-bin" => options.go_bin = Some(option_value(&mut args, &arg)?.into()),
                "--runs" => options.runs = option_count(&mut args, &arg)?,
                "--scale" => {
                    let value = option_value(&mut args, &arg)?;
                    options.scale = value
                        .parse()
                        .map_err(|err| format!("--scale {value:?}: {err}"))?;
                }
                other => return Err(format!("unknown option {other:?}")),
            }
        }
        if options.runs == 0 || options.scale.is_nan() || options.scale <= 0.0 {
            return Err("--runs and --scale must be positive".into());
        }
        Ok(options)
    }
}

fn port(number: i32, name: &str) -> ContainerPort {
    ContainerPort::default()
        .container_port(number)
        .protocol("TCP")
        .name(name)
}

/// The configuration of bench/go/apply, field for field.
fn deployment(i: u64) -> Deployment {
    let name = format!("web-{i}");
    let labels = [("app", name.clone()), ("tier", "frontend".to_string())];
    let container = Container::default()
        .name("web")
        .image("nginx:1.29")
        .args(["-g".to_string(), "daemon off;".to_string()])
        .ports([port(80, "http"), port(443, "https")])
        .env([
            EnvVar::default().name("MODE").value("fast"),
            EnvVar::default().name("LEVEL").value("3"),
        ])
        .resources(ResourceRequirements::default().limits([
            ("cpu", Quantity("500m".into())),
            ("memory", Quantity("256Mi".into())),
        ]));
    Deployment::new(&name, "demo").labels(labels.clone()).spec(
        DeploymentSpec::default()
            .replicas(3)
            .selector(LabelSelector::default().match_labels(labels.clone()))
            .template(
                PodTemplateSpec::default()
                    .metadata(
                        kubekit::applyconfigurations::apimachinery::pkg::apis::meta::v1::ObjectMeta::default()
                            .labels(labels),
                    )
                    .spec(PodSpec::default().containers([container])),
            ),
    )
}

/// One measured run.
#[derive(Clone, Copy)]
struct Sample {
    ops: u64,
    elapsed: Duration,
}

impl Sample {
    fn nanos_per_op(self) -> f64 {
        self.elapsed.as_secs_f64() * 1e9 / self.ops as f64
    }
}

/// Builds and serializes `ops` configurations.
fn kubekit_run(ops: u64) -> Result<Sample, String> {
    let mut total = 0;
    let start = Instant::now();
    for i in 0..ops {
        let body = serde_json::to_vec(&deployment(i)).map_err(|e| e.to_string())?;
        total += body.len();
    }
    let elapsed = start.elapsed();
    std::hint::black_box(total);
    Ok(Sample { ops, elapsed })
}

/// Runs the Go program once.
fn go_run(bin: &PathBuf, ops: u64) -> Result<Sample, String> {
    let out = Command::new(bin)
        .args(["-ops", &ops.to_string()])
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{}: {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |key: &str| {
        text.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .ok_or_else(|| format!("the Go program printed no {key}: {text}"))
    };
    let seconds: f64 = field("seconds=")?
        .parse()
        .map_err(|e| format!("seconds: {e}"))?;
    Ok(Sample {
        ops: field("ops=")?.parse().map_err(|e| format!("ops: {e}"))?,
        elapsed: Duration::from_secs_f64(seconds),
    })
}

/// Fails unless the Go program's body of configuration 0 is kubekit's, as JSON.
fn same_bodies(bin: &PathBuf) -> Result<usize, String> {
    let out = Command::new(bin)
        .arg("-print")
        .output()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    let go: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("the Go program's body is not JSON: {e}"))?;
    let ours = serde_json::to_value(deployment(0)).map_err(|e| e.to_string())?;
    if go != ours {
        return Err(format!(
            "the two bodies differ:\n go: {go}\n kubekit: {ours}"
        ));
    }
    Ok(serde_json::to_vec(&deployment(0))
        .map_err(|e| e.to_string())?
        .len())
}

/// Runs the benchmark and prints its table.
pub fn run(options: Options) -> Result<(), String> {
    let ops = ((OPS as f64 * options.scale) as u64).max(1);
    let bytes = serde_json::to_vec(&deployment(0))
        .map_err(|e| e.to_string())?
        .len();
    if let Some(bin) = &options.go_bin {
        same_bodies(bin)?;
    }
    let (mut best, mut best_go): (Option<Sample>, Option<Sample>) = (None, None);
    let faster = |best: Option<Sample>, s: Sample| match best {
        Some(b) if b.nanos_per_op() <= s.nanos_per_op() => Some(b),
        _ => Some(s),
    };
    for _ in 0..options.runs {
        best = faster(best, kubekit_run(ops)?);
        if let Some(bin) = &options.go_bin {
            best_go = faster(best_go, go_run(bin, ops)?);
        }
    }
    println!(
        "typed apply: build and serialize a Deployment configuration ({bytes} bytes), {ops} per run, best of {}",
        options.runs
    );
    println!("{:<12} {:>10}", "client", "ns/op");
    let kubekit = best.expect("at least one run");
    println!("{:<12} {:>10.0}", "kubekit", kubekit.nanos_per_op());
    if let Some(go) = best_go {
        println!("{:<12} {:>10.0}", "client-go", go.nanos_per_op());
        println!(
            "kubekit's time per configuration is {:.2}x client-go's",
            kubekit.nanos_per_op() / go.nanos_per_op()
        );
    }
    Ok(())
}
