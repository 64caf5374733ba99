//! The App controller: `app-controller [--kubeconfig PATH] [--master URL] [--namespace NS]
//! [--workers N]`. Without `--kubeconfig` and `--master` it uses the in-cluster
//! configuration when running in a pod, else `$KUBECONFIG` or `~/.kube/config`. SIGINT or
//! SIGTERM stops it gracefully (a second signal exits at once). `RUST_LOG` sets the log
//! level (default `info`).

use std::process::ExitCode;

use app_controller::controller::{Options, run};
use kubekit::clientset::Clientset;
use kubekit::controller::shutdown_signal;
use kubekit::rest::Config;

const USAGE: &str =
    "usage: app-controller [--kubeconfig PATH] [--master URL] [--namespace NS] [--workers N]";

/// The command line.
#[derive(Debug, Default)]
struct Flags {
    kubeconfig: Option<String>,
    master: Option<String>,
    options: Options,
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Flags, String> {
    let mut flags = Flags::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (arg.clone(), None),
        };
        if matches!(name.as_str(), "-h" | "--help") {
            return Err(USAGE.into());
        }
        let value = match inline {
            Some(v) => v,
            None => args
                .next()
                .ok_or(format!("{name} needs a value\n{USAGE}"))?,
        };
        match name.as_str() {
            "--kubeconfig" => flags.kubeconfig = Some(value),
            "--master" => flags.master = Some(value),
            "--namespace" | "-n" => flags.options.namespace = value,
            "--workers" => {
                flags.options.workers = value
                    .parse()
                    .ok()
                    .filter(|w| *w > 0)
                    .ok_or(format!("--workers wants a positive number, got {value:?}"))?
            }
            other => return Err(format!("unknown flag {other}\n{USAGE}")),
        }
    }
    Ok(flags)
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let flags = match parse(std::env::args().skip(1)) {
        Ok(f) => f,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let result = async {
        let config = Config::from_flags(
            flags.master.as_deref(),
            flags.kubeconfig.as_deref().map(std::path::Path::new),
        )
        .await?;
        let clientset = Clientset::new(&config)?;
        run(clientset, flags.options, shutdown_signal()).await
    }
    .await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("app-controller: {e:#}");
            ExitCode::FAILURE
        }
    }
}
