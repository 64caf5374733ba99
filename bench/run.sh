#!/usr/bin/env bash
# Runs one of kubekit's benchmarks, building what it needs first.
#
#   bench/run.sh workqueue [options]   kubekit's work queue vs client-go's (see bench/README.md)
#   bench/run.sh relist [options]      informer memory at steady state and during a relist
#
# Rust programs are built with cargo (honouring CARGO_TARGET_DIR), Go programs with
# `go build` from the module in bench/go into bench/target/. Build output goes to stderr;
# the benchmark's table goes to stdout.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bench_target="$root/bench/target"

usage() {
    cat <<'USAGE'
usage: bench/run.sh <benchmark> [options]

benchmarks:
  workqueue   add/get/done throughput of the work queue, kubekit vs client-go
              options: --runs N (default 5), --scale F (default 1.0), --keys arc|string,
                       --only VARIANT,..., --verbose
  relist      informer memory at steady state and at the peak of a relist from the API
              server; starts the local control plane unless --kubeconfig is given
              options: --kubeconfig PATH, --objects N (default 10000)
USAGE
}

# Builds the Rust benchmark program; prints its path.
build_rust() {
    cargo build --release --locked --quiet -p kubekit-bench --manifest-path "$root/Cargo.toml" >&2
    echo "${CARGO_TARGET_DIR:-$root/target}/release/kubekit-bench"
}

# Builds the Go program bench/go/$1 into bench/target/$1-go; prints its path.
build_go() {
    mkdir -p "$bench_target"
    (cd "$root/bench/go" && go build -buildvcs=false -trimpath -o "$bench_target/$1-go" "./$1") >&2
    echo "$bench_target/$1-go"
}

run_workqueue() {
    local rust_bin go_bin
    rust_bin="$(build_rust)"
    go_bin="$(build_go workqueue)"
    "$rust_bin" workqueue --go-bin "$go_bin" "$@"
}

run_relist() {
    local rust_bin
    rust_bin="$(build_rust)"
    if [[ " $* " == *" --kubeconfig "* ]]; then
        "$rust_bin" relist "$@"
    else
        "$rust_bin" relist --kubeconfig "$("$root/scripts/local-cluster.sh" up | tail -n 1)" "$@"
    fi
}

case "${1:-}" in
    workqueue)
        shift
        run_workqueue "$@"
        ;;
    relist)
        shift
        run_relist "$@"
        ;;
    -h | --help | help)
        usage
        ;;
    *)
        usage >&2
        exit 2
        ;;
esac
