//! kubekit's benchmark programs. `bench/run.sh` builds and runs them; see `bench/README.md`.
//!
//! Usage: `kubekit-bench <benchmark> [options]`, one subcommand per benchmark:
//!
//! - `workqueue`: add/get/done throughput of [`kubekit::workqueue::Queue`], compared with
//!   client-go's workqueue when `--go-bin` names the Go program built from `bench/go`.
//! - `relist`: memory of an informer at steady state and at the peak of a relist, against
//!   a real API server.

mod relist;
mod workqueue;

use std::process::ExitCode;

const USAGE: &str = "\
usage: kubekit-bench <benchmark> [options]

benchmarks:
  workqueue   add/get/done throughput of the work queue (kubekit vs client-go)
              options: --go-bin PATH   the Go program to compare with (bench/go/workqueue)
                       --runs N        runs per variant and client; the best counts (default 5)
                       --scale F       multiply the work per run by F (default 1.0)
                       --only V,...    only these variants: distinct-1, distinct-2, distinct-8,
                                       hot-1, hot-2, hot-8
                       --keys arc|string  kubekit's key type: Arc<str> (default) or String
                       --verbose       print every run's figures to stderr
  relist      steady-state and relist-peak memory of an informer over N ConfigMaps
              options: --kubeconfig PATH   the cluster to use (required)
                       --objects N         ConfigMaps to create (default 10000)";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let result = match args.next().as_deref() {
        Some("workqueue") => workqueue::Options::parse(args).and_then(workqueue::run),
        Some("relist") => relist::Options::parse(args).and_then(relist::run),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(other) => Err(format!("unknown benchmark {other:?}\n{USAGE}")),
        None => Err(USAGE.to_string()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::from(2)
        }
    }
}
