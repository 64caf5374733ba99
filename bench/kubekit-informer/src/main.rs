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
                       --shard I/N  cache the I-th of N equal uid ranges only
  floor-peer     the readers that decode nothing, the floor of the benchmark
              options: --server URL | --kubeconfig PATH, --updates M, --json | --protobuf";

fn main() -> ExitCode {
    informer_protocol::main_with_subcommands(USAGE, |name, args| {
        Some(match name {
            "informer-peer" => informer_peer::parse(args).and_then(informer_peer::run),
            "floor-peer" => floor_peer::parse(args).and_then(floor_peer::run),
            _ => return None,
        })
    })
}
