//! `kubekit-informer`: kubekit's peers of the informer benchmark (see the library docs and
//! `bench/README.md`), started by `kubekit-bench informer`.

use std::process::ExitCode;

use kubekit_informer::{floor_peer, informer_peer};

const USAGE: &str = "usage: kubekit-informer informer-peer|floor-peer [options]
  informer-peer  kubekit's Pod informer
              options: --server URL | --kubeconfig PATH, --updates M,
                       --compact   cache Compact<Pod> instead of typed Pods
                       --metadata  cache the Pods' PartialObjectMetadata (factory.for_metadata)
                       --metadata-strip  the same without managedFields
  floor-peer     the readers that decode nothing, the floor of the benchmark
              options: --server URL | --kubeconfig PATH, --updates M, --json | --protobuf";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let result = match args.next().as_deref() {
        Some("informer-peer") => informer_peer::parse(args).and_then(informer_peer::run),
        Some("floor-peer") => floor_peer::parse(args).and_then(floor_peer::run),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(other) => Err(format!("unknown peer {other:?}\n{USAGE}")),
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
