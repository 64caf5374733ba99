#!/usr/bin/env bash
# Runs every kubekit test on a fresh machine: installs what is missing, builds the pinned
# control plane (Go modules, cached in ~/.cache/kubekit), checks formatting and lints, and
# runs the whole workspace's tests, unit and doc tests as well as the tests against the
# real local control plane. Fails if no control plane was started by the tests.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Each step is printed with the time it starts, so a log shows where a run's time goes.
step() { printf '\n==> %s (%s)\n' "$*" "$(date -u +%T)"; }

# The workspace builds some thirty test binaries; with full debug info and incremental
# caches their target directory passes 35 GB, more than a CI disk may have free (the
# linker then dies with SIGBUS). Line tables keep panics' backtraces readable.
export CARGO_INCREMENTAL=0
export CARGO_PROFILE_DEV_DEBUG=line-tables-only

step "prerequisites"
missing=()
command -v openssl >/dev/null || missing+=(openssl)
command -v python3 >/dev/null || missing+=(python3)
if ((${#missing[@]})); then
  echo "installing ${missing[*]} from Debian's packages"
  apt-get update -qq && apt-get install -y -qq "${missing[@]}"
fi
command -v go >/dev/null || { echo "Go >= 1.26 is required (it builds the control plane and kwok)" >&2; exit 1; }
command -v cargo >/dev/null || { echo "Rust (cargo) is required" >&2; exit 1; }
go version
cargo --version

step "control plane binaries (built once, then cached)"
start=$SECONDS
scripts/build-control-plane.sh
echo "control plane binaries ready in $((SECONDS - start)) s"

step "format and lints"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
# kubekit's optional JSON decoder (off by default): its lints, and its unit tests below.
cargo clippy -p kubekit-client --lib --tests --locked --features simd-json -- -D warnings
# kubekit without its default `compact`, `protobuf-writes` and `ws` (the library alone: its
# tests' dev-dependencies would turn them back on), and kubekit-protobuf without `encode`.
K8S_OPENAPI_ENABLED_VERSION=1.37 cargo clippy -p kubekit --lib --locked \
  --no-default-features --features prebuilt-common -- -D warnings
cargo clippy -p kubekit-protobuf --lib --tests --locked -- -D warnings

step "the crates as crates.io would take them"
# Each published crate packaged and built from its package, in dependency order (the
# unpublished ones come from a local registry). k8s-openapi's version comes from the
# environment: the library leaves it to programs.
published=(-p kubekit -p kubekit-client -p kubekit-runtime -p kubekit-webhook -p kubekit-manager
  -p kubekit-applyconfigurations -p kubekit-derive -p kubekit-protobuf -p kubekit-fake)
# cargo unpacks the crates it packaged from a local registry into $CARGO_HOME/registry/src,
# and reuses an unpacked crate it finds there: one left by an earlier run at the same path
# holds that run's sources. Removed, so that each run builds what it packaged.
for crate in "${published[@]}"; do
  [[ $crate == -p ]] || rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/"$crate"-[0-9]*
done
K8S_OPENAPI_ENABLED_VERSION=1.37 cargo package --locked "${published[@]}"
# The minimum supported Rust version (`rust-version` in Cargo.toml) builds them too.
msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)
rustup toolchain list | grep -q "^$msrv" || rustup toolchain install "$msrv" --profile minimal
K8S_OPENAPI_ENABLED_VERSION=1.37 cargo "+$msrv" check --locked --lib "${published[@]}"

step "tests"
marker=$(mktemp)
trap 'rm -f "$marker"' EXIT
KUBEKIT_TESTENV_RAN=$marker cargo test --workspace --locked
started=$(wc -l <"$marker")
if ((started == 0)); then
  echo "FAIL: no test started the local control plane; the control-plane tests did not run" >&2
  exit 1
fi
echo "control-plane tests ran against $started local control plane(s)"
cargo test -p kubekit-client --lib --locked --features simd-json -- rest::json
# The registry's codecs without kubekit-protobuf's `encode` (the workspace turns it on).
cargo test -p kubekit-protobuf --lib --locked -- registry
step "done"
