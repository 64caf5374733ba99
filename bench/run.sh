#!/usr/bin/env bash
# Runs one of kubekit's benchmarks, building what it needs first.
#
#   bench/run.sh workqueue [options]   kubekit's work queue vs client-go's (see bench/README.md)
#   bench/run.sh apply [options]       a typed apply configuration built and serialized, vs client-go's
#   bench/run.sh relist [options]      informer memory at steady state and during a relist
#   bench/run.sh informer [options]    informer sync and watch updates, kubekit vs kube-rs
#                                      vs client-go on the same bytes
#   bench/run.sh compact [options]     what the compact cache costs and saves per Pod
#   bench/run.sh fake [options]        kubekit-fake vs the real control plane: start and the
#                                      App controller's e2e scenario
#   bench/run.sh shards [options]      per-replica cost of a Pod informer sharded over 1, 2
#                                      and 4 replicas, with and without server-side filtering
#   bench/run.sh ring [--apps N]       per-replica bytes, objects and CPU of a ring of three
#                                      App controllers against one replica
#   bench/run.sh webhook [options]     admissions/s and latency of kubekit's webhook server vs
#                                      controller-runtime's
#   bench/run.sh build [options]       cold and touch-rebuild build times of a small informer
#                                      program, kubekit vs kube-rs
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
  apply       a typed apply configuration built and serialized (the same Deployment),
              kubekit vs client-go's applyconfigurations
              options: --runs N (default 5), --scale F (default 1.0)
  relist      informer memory at steady state and at the peak of a relist from the API
              server; starts the local control plane unless --kubeconfig is given
              options: --kubeconfig PATH, --objects N (default 10000), --compact,
                       --shape pods-small|pods-typical|pods-large (Pods of that shape
                       instead of ConfigMaps)
  informer    sync time, CPU and memory of an informer over N realistic Pods, then the rate
              of M watch updates: kubekit vs kube-rs vs client-go, all served the same bytes
              by a replay server (bench/fixtures/pods.json replicated)
              options: --pods N (default 10000), --updates M (default 10000), --runs R
                       (default 3), --clients kubekit,kubekit-compact,kube-rs,client-go
                       (add kubekit-metadata, kubekit-metadata-strip: metadata informers),
                       --verbose,
                       --timeout SECS, --fixture PATH,
                       --real             create the pods in the local control plane
                                          instead (started if needed) and only sync
                       --kubeconfig PATH  the same in another cluster
                       --resource widgets with --real or --kubeconfig: N custom resources
                                          (widgets.bench.kubekit.dev, a spec and a status)
                                          instead of Pods; clients kubekit (CBOR where
                                          served), kubekit-json, kube-rs, client-go
                                          (dynamic informer, JSON) and client-go-cbor (its
                                          ClientsAllowCBOR/ClientsPreferCBOR gates); start
                                          the cluster with KUBEKIT_FEATURE_GATES=
                                          ShardedListAndWatch=true,CBORServingAndStorage=true
                       --shape S[,S...]   with --real or --kubeconfig: N objects of each
                                          shape instead of the fixture's Pods, one table
                                          each: pods-small, pods-typical, pods-large,
                                          deployments, configmaps, secrets, events,
                                          nodes (the clients cache that kind)
                       --corpus           every one of those shapes in turn
                       --link RATE/RTT    with --real or --kubeconfig: the clients reach
                                          the server through a proxy that paces each
                                          direction to RATE and delays by RTT/2, e.g.
                                          100mbit/20ms, 1gbit/0.5ms
  compact     what the compact cache costs and saves per Pod against typed Pods (build
              time, memory, compressed size, get cold and warm, a lister's list)
              options: --objects N (default 10000), --fixture PATH
  fake        time to start kubekit-fake and run the App controller's e2e scenario against it,
              next to the same scenario on the real local control plane (started by testenv,
              once; the Go build is cached), then each verb's request latency on both
              options: --runs N (default 3; medians)
  shards      per-replica sync time, CPU, RSS and the API server's bytes sent and CPU, for
              1, 2 and 4 replicas of a Pod informer sharded by uid over N Pods, replicas
              run one after another; on two local control planes it starts (and stops)
              in bench/target: one with ShardedListAndWatch (the server filters), one
              without (each informer filters)
              options: --pods N (default 20000), --replicas LIST (default 1,2,4),
                       --runs R (default 3), --compact,
                       --kubeconfig PATH  a cluster of your own instead of the first,
                       --fallback-kubeconfig PATH  and instead of the second
  ring        what a ring of three App controller replicas (sharded by uid, then by
              namespace) costs per replica against one unsharded replica: kube-apiserver's
              bytes sent to each replica's list and watches of Apps, Deployments and
              Services, the objects each caches and drops, its CPU and the server's; on a
              control plane testenv starts (the app-controller sharded_chaos test binary,
              ring_costs)
              options: --apps N (default 300, in 30 namespaces)
  webhook     admissions per second, p50/p99 latency and server CPU of kubekit's webhook
              server against controller-runtime's (bench/go/webhook), both validating Apps
              with the same checks over HTTP/1.1 and TLS, driven by one load generator
              options: --runs N (default 3), --seconds S per load (default 5),
                       --connections C,... (default 1,8,32), --rotate (rotate the
                       certificate every second and reconnect every 50 reviews)
  build       build time of a small program that syncs a Pod informer with one handler
              (bench/build/kubekit-small) against a kube-rs reflector (bench/build/
              kube-rs-small), both with the workspace's Cargo.lock: cold in a fresh target
              directory, then after touching main.rs, in release and debug; the best of the
              runs counts (wall seconds, and user+sys CPU seconds)
              options: --runs N (default 1), --profiles release,debug (default both),
                       --timings  keep cargo's --timings report of each cold build in
                                  bench/target/build-timings/,
                       --features F  kubekit's features in the kubekit program: its
                                  default (the default), "none", or a list such as
                                  prebuilt-all (without the default ones)
USAGE
}

# Builds the Rust benchmark programs (kubekit-bench and the packages named as arguments);
# prints the path of kubekit-bench. The others are next to it.
build_rust() {
    local package args=(-p kubekit-bench)
    for package in "$@"; do args+=(-p "$package"); done
    cargo build --release --locked --quiet "${args[@]}" --manifest-path "$root/Cargo.toml" >&2
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

run_apply() {
    local rust_bin go_bin
    rust_bin="$(build_rust)"
    go_bin="$(build_go apply)"
    "$rust_bin" apply --go-bin "$go_bin" "$@"
}

run_relist() {
    local rust_bin
    rust_bin="$(build_rust)"
    if [[ " $* " == *" --kubeconfig "* ]]; then
        "$rust_bin" relist "$@"
    else
        "$rust_bin" relist --kubeconfig "$("$root/scripts/local-cluster.sh" up --nodes 0 | tail -n 1)" "$@"
    fi
}

run_informer() {
    local rust_bin args=() real=false clients="kubekit,kubekit-compact,kube-rs,client-go"
    while (($#)); do
        case "$1" in
            --real) real=true ;;
            --clients)
                (($# >= 2)) || { echo "--clients needs a value" >&2; exit 2; }
                clients="$2"
                args+=("$1" "$2")
                shift
                ;;
            *) args+=("$1") ;;
        esac
        shift
    done
    rust_bin="$(build_rust kube-rs-informer kubekit-informer)"
    args+=(--kube-rs-bin "$(dirname "$rust_bin")/kube-rs-informer")
    args+=(--kubekit-bin "$(dirname "$rust_bin")/kubekit-informer")
    if [[ ",$clients," == *",client-go,"* || ",$clients," == *",client-go-cbor,"* ]]; then
        args+=(--go-bin "$(build_go informer)")
    fi
    if $real && [[ " ${args[*]} " != *" --kubeconfig "* ]]; then
        args+=(--kubeconfig "$("$root/scripts/local-cluster.sh" up --nodes 0 | tail -n 1)")
    fi
    "$rust_bin" informer "${args[@]}"
}

run_shards() {
    local rust_bin args=("$@") dirs=()
    rust_bin="$(build_rust kubekit-informer)"
    # Starts a local control plane in bench/target/$1 with kube-apiserver's feature gates
    # $2; prints its kubeconfig.
    cluster() {
        KUBEKIT_FEATURE_GATES="$2" "$root/scripts/local-cluster.sh" up --nodes 0 \
            --dir "$bench_target/$1" | tail -n 1
    }
    if [[ " $* " != *" --kubeconfig "* ]]; then
        dirs+=("$bench_target/cluster-sharded")
        args+=(--kubeconfig "$(cluster cluster-sharded ShardedListAndWatch=true)")
    fi
    if [[ " $* " != *" --fallback-kubeconfig "* ]]; then
        dirs+=("$bench_target/cluster-unsharded")
        args+=(--fallback-kubeconfig "$(cluster cluster-unsharded ShardedListAndWatch=false)")
    fi
    local status=0
    "$rust_bin" shards --kubekit-bin "$(dirname "$rust_bin")/kubekit-informer" "${args[@]}" \
        || status=$?
    for dir in "${dirs[@]}"; do
        "$root/scripts/local-cluster.sh" down --dir "$dir" >&2
    done
    return "$status"
}

# Times one cargo command (the arguments after the first) in the current directory with
# target directory $1 and cargo's defaults (none of this shell's CARGO_INCREMENTAL and
# CARGO_PROFILE_*_DEBUG); prints "WALL CPU" in seconds, CPU being user+sys of cargo and
# everything it ran.
timed_cargo() {
    local target="$1" start end cpu
    shift
    cpu="$(mktemp)"
    start="$(date +%s.%N)"
    env -u CARGO_INCREMENTAL -u CARGO_PROFILE_DEV_DEBUG -u CARGO_PROFILE_RELEASE_DEBUG \
        CARGO_TARGET_DIR="$target" /usr/bin/time -o "$cpu" -f '%U %S' cargo "$@" --quiet >&2
    end="$(date +%s.%N)"
    awk -v s="$start" -v e="$end" '{ printf "%.1f %.1f\n", e - s, $1 + $2 }' "$cpu"
    rm -f "$cpu"
}

# What follows kubekit's path in the kubekit program's dependency line for `--features $1`.
kubekit_features() {
    case "$1" in
        default) ;;
        none) printf ', default-features = false' ;;
        *) printf ', default-features = false, features = ["%s"]' "${1//,/\", \"}" ;;
    esac
}

run_build() {
    local runs=1 profiles="release,debug" timings=false features=default
    while (($#)); do
        case "$1" in
            --runs)
                (($# >= 2)) || { echo "--runs needs a value" >&2; exit 2; }
                runs="$2"
                shift
                ;;
            --profiles)
                (($# >= 2)) || { echo "--profiles needs a value" >&2; exit 2; }
                profiles="$2"
                shift
                ;;
            --timings) timings=true ;;
            --features)
                (($# >= 2)) || { echo "--features needs a value" >&2; exit 2; }
                features="$2"
                shift
                ;;
            *) usage >&2; exit 2 ;;
        esac
        shift
    done
    local work crate profile run flags cold_flags figures what kk_wall kk_cpu kr_wall kr_cpu
    work="$(mktemp -d)"
    # shellcheck disable=SC2064 # expand $work now
    trap "rm -rf '$work'" EXIT
    # Each crate is copied out of the workspace with the workspace's Cargo.lock, its path
    # to kubekit made absolute; cargo builds it as a user's program (cargo's defaults,
    # none of this shell's CARGO_* settings).
    for crate in kubekit-small kube-rs-small; do
        cp -r "$root/bench/build/$crate" "$work/$crate"
        cp "$root/Cargo.lock" "$work/$crate/Cargo.lock"
        sed -i "s|path = \"../../../kubekit\"|path = \"$root/kubekit\"$(kubekit_features "$features")|" \
            "$work/$crate/Cargo.toml"
        (cd "$work/$crate" && env -u CARGO_TARGET_DIR cargo fetch --quiet >&2)
    done
    # The best "WALL CPU" of each build (by wall time), by "crate what-profile".
    declare -A best
    keep_best() {
        local old="${best[$1]:-}"
        if [[ -z "$old" ]] || awk -v n="${2%% *}" -v o="${old%% *}" 'BEGIN { exit !(n < o) }'; then
            best[$1]="$2"
        fi
    }
    for ((run = 1; run <= runs; run++)); do
        for crate in kubekit-small kube-rs-small; do
            for profile in ${profiles//,/ }; do
                flags=()
                [[ "$profile" == release ]] && flags+=(--release)
                echo "run $run: $crate, $profile: cold build" >&2
                rm -rf "$work/target"
                cd "$work/$crate"
                cold_flags=("${flags[@]}")
                $timings && cold_flags+=(--timings)
                figures="$(timed_cargo "$work/target" build "${cold_flags[@]}")"
                keep_best "$crate cold-$profile" "$figures"
                if $timings; then
                    mkdir -p "$bench_target/build-timings"
                    cp "$work/target/cargo-timings/cargo-timing.html" \
                        "$bench_target/build-timings/$crate-$profile-run$run.html"
                fi
                touch src/main.rs
                figures="$(timed_cargo "$work/target" build "${flags[@]}")"
                keep_best "$crate touch-$profile" "$figures"
                cd "$root"
            done
        done
    done
    rm -rf "$work/target"
    printf '%-16s %12s %12s %8s %12s %12s %8s\n' build "kubekit s" "kube-rs s" ratio \
        "kubekit cpu" "kube-rs cpu" ratio
    for what in cold touch; do
        for profile in ${profiles//,/ }; do
            read -r kk_wall kk_cpu <<<"${best[kubekit-small $what-$profile]}"
            read -r kr_wall kr_cpu <<<"${best[kube-rs-small $what-$profile]}"
            awk -v n="$what $profile" -v a="$kk_wall" -v b="$kr_wall" -v c="$kk_cpu" \
                -v d="$kr_cpu" 'BEGIN { printf "%-16s %12.1f %12.1f %8.2f %12.1f %12.1f %8.2f\n",
                    n, a, b, a / b, c, d, c / d }'
        done
    done
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
    apply)
        shift
        run_apply "$@"
        ;;
    informer)
        shift
        run_informer "$@"
        ;;
    shards)
        shift
        run_shards "$@"
        ;;
    compact)
        shift
        "$(build_rust)" compact "$@"
        ;;
    fake)
        shift
        "$(build_rust)" fake "$@"
        ;;
    ring)
        shift
        apps=300
        while (($#)); do
            case "$1" in
                --apps) apps="$2"; shift 2 ;;
                *) usage >&2; exit 2 ;;
            esac
        done
        # The table goes to stdout, the test harness's lines to stderr.
        KUBEKIT_RING_APPS="$apps" cargo test --release -p app-controller --test sharded_chaos \
            ring_costs -- --ignored --nocapture --test-threads 1 2> >(cat >&2) |
            grep '^|\|^ring costs'
        ;;
    webhook)
        shift
        "$(build_rust)" webhook --go-bin "$(build_go webhook)" "$@"
        ;;
    build)
        shift
        run_build "$@"
        ;;
    -h | --help | help)
        usage
        ;;
    *)
        usage >&2
        exit 2
        ;;
esac
