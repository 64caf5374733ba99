//! __NAME__'s controllers on a kubekit manager; `__NAME__ --help` lists the flags.
//! `--print-crd` and `--print-rbac` print what `deploy/` holds and exit.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use kubekit::k8s_openapi::api::rbac::v1::Subject;
use kubekit::leaderelection::{LeaderElectionConfig, LeaseLock};
use kubekit::manager::rbac::parse_subject;
use kubekit::prelude::*;

/// The program's name: its Lease's, and its roles' in `--print-rbac`.
const PROGRAM: &str = "__NAME__";

/// __NAME__: the controllers of its custom resources.
#[derive(Debug, Parser)]
#[command(version)]
struct Flags {
    /// Path to a kubeconfig (default: in-cluster, else $KUBECONFIG or ~/.kube/config).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Watch only this namespace (default: all).
    #[arg(long, default_value = "")]
    namespace: String,
    /// Reconciles run at once.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Elect a leader among the replicas (a Lease named after the controller).
    #[arg(long)]
    leader_elect: bool,
    /// The Lease's namespace (default: the watched namespace, else `default`).
    #[arg(long)]
    leader_elect_namespace: Option<String>,
    /// HOST:PORT serving /metrics (and the health endpoints).
    #[arg(long)]
    metrics_bind_address: Option<SocketAddr>,
    /// HOST:PORT serving /healthz and /readyz (and /metrics).
    #[arg(long)]
    health_probe_bind_address: Option<SocketAddr>,
    /// Print the CustomResourceDefinition (deploy/crd.yaml) and exit.
    #[arg(long)]
    print_crd: bool,
    /// Print the RBAC this program needs with the other flags (deploy/rbac.yaml) and exit.
    #[arg(long)]
    print_rbac: bool,
    /// Who --print-rbac binds the roles to: `serviceaccount:NAMESPACE:NAME`, `user:NAME`
    /// or `group:NAME`; repeatable.
    #[arg(long, value_parser = parse_subject, default_value = "serviceaccount:__NAME__-system:__NAME__")]
    rbac_subject: Vec<Subject>,
}

/// The manager the flags describe, with the controller added.
fn manager(flags: &Flags, config: RestConfig) -> anyhow::Result<Manager> {
    let mut builder = Manager::builder(config).namespace(&flags.namespace);
    if let Some(address) = flags.metrics_bind_address {
        builder = builder.metrics_bind_address(address);
    }
    if let Some(address) = flags.health_probe_bind_address {
        builder = builder.health_probe_bind_address(address);
    }
    if flags.leader_elect {
        let namespace = match (&flags.leader_elect_namespace, flags.namespace.as_str()) {
            (Some(ns), _) => ns.clone(),
            (None, "") => "default".to_string(),
            (None, ns) => ns.to_string(),
        };
        builder = builder.leader_election(move |clientset| {
            let lock = LeaseLock::from_clientset(clientset, &namespace, PROGRAM);
            LeaderElectionConfig::new(lock).release_on_cancel(true)
        });
    }
    let mut mgr = builder.build()?;
    let workers = flags.workers.max(1);
    __CRATE__::__SNAKE__::controller::add_to(&mut mgr, workers)?;
    // kubekit api: a kind's controller goes above this line.
    Ok(mgr)
}

async fn run(flags: Flags) -> anyhow::Result<()> {
    let config = RestConfig::from_flags(None, flags.kubeconfig.as_deref()).await?;
    manager(&flags, config)?.start(shutdown_signal()).await?;
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    let flags = Flags::parse();
    if flags.print_crd {
        let crds = [
            __CRATE__::__SNAKE__::crd_yaml(),
            // kubekit api: a kind's CRD goes above this line.
        ];
        print!("{}", crds.join("---\n"));
        return ExitCode::SUCCESS;
    }
    if flags.print_rbac {
        // No server is contacted: the manager is only built.
        let rbac = RestConfig::from_url("https://kubernetes.default.svc")
            .map_err(anyhow::Error::from)
            .and_then(|config| manager(&flags, config));
        return match rbac {
            Ok(mgr) => {
                print!("{}", mgr.rbac().manifests(PROGRAM, &flags.rbac_subject));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{PROGRAM}: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    match run(flags).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{PROGRAM}: {e:#}");
            ExitCode::FAILURE
        }
    }
}
