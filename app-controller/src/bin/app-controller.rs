//! The App controller on a kubekit manager; `app-controller --help` lists the flags, each
//! with an environment variable fallback. Without `--kubeconfig` and `--master` it uses the
//! in-cluster configuration when running in a pod, else `$KUBECONFIG` or `~/.kube/config`.
//! SIGINT or SIGTERM stops it gracefully (a second signal exits at once); losing the
//! leader lease makes it exit with status 1. With `--shard-ring`, replicas split the Apps
//! between them instead of electing a leader. `RUST_LOG` sets the log level (default `info`).
//!
//! With `--webhook-bind-address HOST:PORT` it also serves the App's validating and
//! defaulting webhooks (`app_controller::webhook`) on the manager's webhook server: with
//! `--webhook-cert-dir DIR`, from `DIR/tls.crt` and `DIR/tls.key` (reloaded when they
//! change; apply `artifacts/webhook.yaml`, whose `caBundle` cert-manager injects); without
//! it, from an authority it generates and rotates, installing the webhook configurations
//! (`app-controller`, or `app-controller-NS` with `--namespace NS`, for that namespace's
//! Apps only) that call `https://WEBHOOK_HOST:PORT` with its bundle.
//!
//! `--print-rbac`, with the flags it would run with, prints the RBAC it needs
//! (`artifacts/rbac.yaml` is its output for `artifacts/deploy.yaml`'s flags).

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use app_controller::controller::{CONTROLLER_NAME, add_to};
use app_controller::webhook::WEBHOOK_CONFIGURATION;
use clap::Parser;
use k8s_openapi::api::rbac::v1::Subject;
use kubekit::cache::ShardKey;
use kubekit::controller::shutdown_signal;
use kubekit::leaderelection::{LeaderElectionConfig, LeaseLock};
use kubekit::manager::rbac::parse_subject;
use kubekit::manager::{Manager, Sharding};
use kubekit::rest::RestConfig;
use kubekit::webhook::{Certificates, WebhookEndpoint};

/// Retries of a failing App before it is dropped (until its next change).
const MAX_RETRIES: usize = 10;

/// The App controller: for every App, a Deployment and a Service kept in line with its spec.
#[derive(Debug, Parser)]
#[command(version)]
struct Flags {
    /// Path to a kubeconfig (default: in-cluster, else $KUBECONFIG or ~/.kube/config).
    #[arg(long, env = "APP_CONTROLLER_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// The API server's address, overriding the kubeconfig's.
    #[arg(long, env = "APP_CONTROLLER_MASTER")]
    master: Option<String>,
    /// The namespace to watch (default: all).
    #[arg(short, long, env = "APP_CONTROLLER_NAMESPACE", default_value = "")]
    namespace: String,
    /// Requests per second to kube-apiserver, the client-side limit of the controller's
    /// writes (its informers and Events have budgets of their own); controller-runtime's
    /// default.
    #[arg(long, env = "APP_CONTROLLER_KUBE_API_QPS", default_value_t = 20.0)]
    kube_api_qps: f32,
    /// The burst above --kube-api-qps.
    #[arg(long, env = "APP_CONTROLLER_KUBE_API_BURST", default_value_t = 30)]
    kube_api_burst: u32,
    /// Worker tasks reconciling Apps.
    #[arg(long, env = "APP_CONTROLLER_WORKERS", default_value_t = 5,
          value_parser = clap::value_parser!(u16).range(1..))]
    workers: u16,
    /// Run the controller only while holding the leader Lease.
    #[arg(long, env = "APP_CONTROLLER_LEADER_ELECT")]
    leader_elect: bool,
    /// Namespace of the Lease (default: the watched namespace, or `default` when watching all).
    #[arg(long, env = "APP_CONTROLLER_LEADER_ELECT_NAMESPACE")]
    leader_elect_namespace: Option<String>,
    /// Name of the Lease.
    #[arg(long, env = "APP_CONTROLLER_LEADER_ELECT_ID", default_value = CONTROLLER_NAME)]
    leader_elect_id: String,
    /// How long the other replicas wait before taking an unrenewed lease (whole seconds).
    #[arg(long, env = "APP_CONTROLLER_LEADER_ELECT_LEASE_DURATION", default_value = "15s",
          value_parser = duration)]
    leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up.
    #[arg(long, env = "APP_CONTROLLER_LEADER_ELECT_RENEW_DEADLINE", default_value = "10s",
          value_parser = duration)]
    leader_elect_renew_deadline: Duration,
    /// Time between attempts to acquire or renew the lease.
    #[arg(long, env = "APP_CONTROLLER_LEADER_ELECT_RETRY_PERIOD", default_value = "2s",
          value_parser = duration)]
    leader_elect_retry_period: Duration,
    /// Exit (status 1) when the leader Lease is lost, instead of stopping the controller
    /// and standing as a candidate again.
    #[arg(long, env = "APP_CONTROLLER_EXIT_ON_LOST_LEADERSHIP")]
    exit_on_lost_leadership: bool,
    /// On SIGTERM, how long the reconciles in flight get before they are dropped and the
    /// lease released (queued Apps are left to the next leader).
    #[arg(long, env = "APP_CONTROLLER_GRACEFUL_SHUTDOWN_TIMEOUT", default_value = "30s",
          value_parser = duration)]
    graceful_shutdown_timeout: Duration,
    /// Run as a member of this sharded ring instead: every replica reconciles the Apps
    /// whose shard key hashes into its ranges (kubekit's sharded manager; the Lease timing
    /// is the --leader-elect-* flags', its namespace --leader-elect-namespace's).
    #[arg(
        long,
        env = "APP_CONTROLLER_SHARD_RING",
        conflicts_with = "leader_elect"
    )]
    shard_ring: Option<String>,
    /// What places an App in a shard: `uid` or `namespace`.
    #[arg(long, env = "APP_CONTROLLER_SHARD_KEY", default_value = "uid", value_parser = shard_key)]
    shard_key: ShardKey,
    /// This replica's identity in the ring (default: the host name, i.e. the pod's name,
    /// and a random suffix).
    #[arg(long, env = "APP_CONTROLLER_SHARD_IDENTITY")]
    shard_identity: Option<String>,
    /// HOST:PORT serving /metrics (and the health endpoints); `0` turns it off.
    #[arg(long, env = "APP_CONTROLLER_METRICS_BIND_ADDRESS", default_value = "0",
          value_parser = bind_address)]
    metrics_bind_address: BindAddress,
    /// HOST:PORT serving /healthz and /readyz (and /metrics); `0` turns it off.
    #[arg(long, env = "APP_CONTROLLER_HEALTH_PROBE_BIND_ADDRESS", default_value = ":8081",
          value_parser = bind_address)]
    health_probe_bind_address: BindAddress,
    /// HOST:PORT serving the App's admission webhooks (HTTPS); `0`, the default: off.
    #[arg(long, env = "APP_CONTROLLER_WEBHOOK_BIND_ADDRESS", default_value = "0",
          value_parser = bind_address)]
    webhook_bind_address: BindAddress,
    /// The name or IP address kube-apiserver calls the webhooks at, with a generated
    /// certificate (it is in the certificate and the installed configurations).
    #[arg(long, env = "APP_CONTROLLER_WEBHOOK_HOST", default_value = "127.0.0.1")]
    webhook_host: String,
    /// A directory with the webhooks' tls.crt and tls.key (cert-manager's Secret); unset:
    /// a certificate authority generated and rotated in memory (one replica only).
    #[arg(long, env = "APP_CONTROLLER_WEBHOOK_CERT_DIR")]
    webhook_cert_dir: Option<PathBuf>,
    /// Print the RBAC this program needs with the other flags given (a ClusterRole, the
    /// Roles of namespaced rules, and their bindings to --rbac-subject) as YAML, and exit
    /// without contacting a server.
    #[arg(long)]
    print_rbac: bool,
    /// Who --print-rbac binds the roles to: `serviceaccount:NAMESPACE:NAME`, `user:NAME`
    /// or `group:NAME`; repeatable.
    #[arg(long, value_parser = parse_subject,
          default_values = ["serviceaccount:app-controller-system:app-controller", "user:app-controller"])]
    rbac_subject: Vec<Subject>,
    /// The name of the roles and bindings --print-rbac prints.
    #[arg(long, default_value = CONTROLLER_NAME)]
    rbac_name: String,
}

/// An address to serve on, or none (`0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BindAddress(Option<SocketAddr>);

/// `0`: off; `:PORT`: every interface; else `HOST:PORT`.
fn bind_address(value: &str) -> Result<BindAddress, String> {
    let value = match value {
        "0" => return Ok(BindAddress(None)),
        v if v.starts_with(':') => format!("0.0.0.0{v}"),
        v => v.to_string(),
    };
    let mut addresses = value
        .to_socket_addrs()
        .map_err(|e| format!("{value}: {e}"))?;
    let address = addresses.next().ok_or(format!("{value}: no address"))?;
    Ok(BindAddress(Some(address)))
}

/// `uid` or `namespace`.
fn shard_key(value: &str) -> Result<ShardKey, String> {
    match value {
        "uid" => Ok(ShardKey::Uid),
        "namespace" => Ok(ShardKey::Namespace),
        other => Err(format!("{other:?} is not a shard key: uid or namespace")),
    }
}

/// `500ms`, `2s` or `2` (seconds).
fn duration(value: &str) -> Result<Duration, String> {
    let (number, unit) = match value.strip_suffix("ms") {
        Some(ms) => (ms, Duration::from_millis(1)),
        None => (
            value.strip_suffix('s').unwrap_or(value),
            Duration::from_secs(1),
        ),
    };
    let n: u32 = number
        .parse()
        .map_err(|_| format!("{value:?} is not a duration like 2s or 500ms"))?;
    Ok(unit * n)
}

/// The manager the flags describe, with the App controller (and its webhooks) added.
fn manager(flags: Flags, config: RestConfig) -> anyhow::Result<Manager> {
    let mut builder = Manager::builder(config)
        .namespace(&flags.namespace)
        .graceful_shutdown_timeout(flags.graceful_shutdown_timeout);
    if let BindAddress(Some(address)) = flags.metrics_bind_address {
        builder = builder.metrics_bind_address(address);
    }
    if let BindAddress(Some(address)) = flags.health_probe_bind_address {
        builder = builder.health_probe_bind_address(address);
    }
    if let BindAddress(Some(address)) = flags.webhook_bind_address {
        builder = match &flags.webhook_cert_dir {
            Some(dir) => builder.webhook_server(
                address,
                Certificates::from_files(dir.join("tls.crt"), dir.join("tls.key")),
            ),
            None => {
                let name = match flags.namespace.as_str() {
                    "" => WEBHOOK_CONFIGURATION.to_string(),
                    ns => format!("{WEBHOOK_CONFIGURATION}-{ns}"),
                };
                let certificates =
                    Certificates::generated("app-controller-webhook-ca", &[&flags.webhook_host]);
                let base = match flags.webhook_host.parse::<std::net::Ipv6Addr>() {
                    Ok(_) => format!("https://[{}]:{}", flags.webhook_host, address.port()),
                    Err(_) => format!("https://{}:{}", flags.webhook_host, address.port()),
                };
                builder
                    .webhook_server(address, certificates)
                    .install_webhook_manifests(&name, WebhookEndpoint::Url(base))
            }
        };
    }
    let namespace = flags
        .leader_elect_namespace
        .unwrap_or(match flags.namespace.as_str() {
            "" => "default".to_string(),
            ns => ns.to_string(),
        });
    if let Some(ring) = flags.shard_ring {
        let mut sharding = Sharding::new(ring, flags.shard_key)
            .lease_namespace(&namespace)
            .lease_duration(flags.leader_elect_lease_duration)
            .renew_deadline(flags.leader_elect_renew_deadline)
            .retry_period(flags.leader_elect_retry_period);
        if let Some(identity) = flags.shard_identity {
            sharding = sharding.identity(identity);
        }
        builder = builder.sharding(sharding);
    }
    if flags.leader_elect {
        builder = builder.exit_on_lost_leadership(flags.exit_on_lost_leadership);
        builder = builder.leader_election(move |clientset| {
            let lock = LeaseLock::from_clientset(clientset, &namespace, flags.leader_elect_id);
            LeaderElectionConfig::new(lock)
                .lease_duration(flags.leader_elect_lease_duration)
                .renew_deadline(flags.leader_elect_renew_deadline)
                .retry_period(flags.leader_elect_retry_period)
                .release_on_cancel(true)
        });
    }
    let mut mgr = builder.build()?;
    add_to(&mut mgr, flags.workers.into(), MAX_RETRIES)?;
    if flags.webhook_bind_address.0.is_some() {
        app_controller::webhook::add_to(mgr.webhooks_mut(), &flags.namespace);
    }
    Ok(mgr)
}

async fn run(flags: Flags) -> anyhow::Result<()> {
    let config = RestConfig::from_flags(flags.master.as_deref(), flags.kubeconfig.as_deref())
        .await?
        .with_rate_limit(flags.kube_api_qps, flags.kube_api_burst);
    manager(flags, config)?.start(shutdown_signal()).await?;
    Ok(())
}

/// The RBAC of the manager the flags describe, as YAML; no server is contacted.
fn rbac(flags: Flags) -> anyhow::Result<String> {
    let (name, subjects) = (flags.rbac_name.clone(), flags.rbac_subject.clone());
    let config = RestConfig::from_url("https://kubernetes.default.svc")?;
    let rbac = manager(flags, config)?.rbac();
    Ok(rbac.manifests(&name, &subjects))
}

#[tokio::main]
async fn main() -> ExitCode {
    let flags = Flags::parse();
    if flags.print_rbac {
        // Before the log goes to stdout: the YAML alone is printed there.
        return match rbac(flags) {
            Ok(yaml) => {
                print!("{yaml}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("app-controller: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    app_controller::run_program("app-controller", run(flags)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_default_like_controller_runtime_and_parse_addresses_and_durations() {
        let flags = Flags::try_parse_from(["app-controller"]).unwrap();
        assert!(!flags.leader_elect);
        assert!(
            !flags.exit_on_lost_leadership,
            "a candidate again by default"
        );
        assert_eq!(flags.leader_elect_id, "app-controller");
        assert_eq!(flags.metrics_bind_address.0, None, "metrics off by default");
        assert_eq!(
            flags.health_probe_bind_address.0,
            Some("0.0.0.0:8081".parse().unwrap())
        );
        assert_eq!(flags.leader_elect_lease_duration, Duration::from_secs(15));
        assert_eq!(flags.graceful_shutdown_timeout, Duration::from_secs(30));
        assert_eq!((flags.kube_api_qps, flags.kube_api_burst), (20.0, 30));
        assert_eq!(
            flags.webhook_bind_address.0, None,
            "webhooks off by default"
        );
        let flags = Flags::try_parse_from([
            "app-controller",
            "--leader-elect",
            "--metrics-bind-address",
            "127.0.0.1:8080",
            "--health-probe-bind-address",
            "0",
            "--leader-elect-retry-period",
            "500ms",
        ])
        .unwrap();
        assert!(flags.leader_elect);
        assert_eq!(
            flags.metrics_bind_address.0,
            Some("127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(flags.health_probe_bind_address.0, None);
        assert_eq!(flags.leader_elect_retry_period, Duration::from_millis(500));
        assert!(Flags::try_parse_from(["app-controller", "--workers", "0"]).is_err());
        let flags = Flags::try_parse_from([
            "app-controller",
            "--shard-ring",
            "apps",
            "--shard-key",
            "namespace",
        ])
        .unwrap();
        assert_eq!(flags.shard_ring.as_deref(), Some("apps"));
        assert_eq!(flags.shard_key, ShardKey::Namespace);
        assert_eq!(
            Flags::try_parse_from(["app-controller"]).unwrap().shard_key,
            ShardKey::Uid
        );
        assert!(
            Flags::try_parse_from(["app-controller", "--shard-ring", "a", "--leader-elect"])
                .is_err(),
            "sharding and leader election are exclusive"
        );
        assert!(Flags::try_parse_from(["app-controller", "--shard-key", "name"]).is_err());
        let flags = Flags::try_parse_from(["app-controller"]).unwrap();
        let subjects: Vec<_> = flags.rbac_subject.iter().map(|s| s.kind.as_str()).collect();
        assert_eq!(
            subjects,
            ["ServiceAccount", "User"],
            "deploy.yaml's and the demo's"
        );
        let flags = Flags::try_parse_from([
            "app-controller",
            "--print-rbac",
            "--rbac-subject",
            "group:ops",
        ])
        .unwrap();
        assert!(flags.print_rbac);
        assert_eq!(
            flags.rbac_subject.len(),
            1,
            "given subjects replace the defaults"
        );
        assert!(Flags::try_parse_from(["app-controller", "--rbac-subject", "ops"]).is_err());
        assert!(
            Flags::try_parse_from(["app-controller", "--leader-elect-lease-duration", "x"])
                .is_err()
        );
    }
}
