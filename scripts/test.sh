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
# Each published crate packaged (cargo resolves the unpublished ones among them from a local
# registry of the packages), then the packages unpacked into a workspace of their own, each
# naming the others as crates.io would, and checked there by the minimum supported Rust
# version (`rust-version` in Cargo.toml): what a user's build of the published crates
# compiles. The workspace's lock file keeps the versions of their dependencies. (cargo
# package's own verification would build each package, dependencies included, a second time
# with the current toolchain; the tests below build the same sources with it.)
# The published crates are those whose `publish` is not false, as the API check below finds them.
crates=$(python3 scripts/public_api.py crates)
published=()
while read -r crate _; do
  published+=(-p "$crate")
done <<<"$crates"
rm -f target/package/*.crate
K8S_OPENAPI_ENABLED_VERSION=1.37 cargo package --no-verify --locked "${published[@]}"
unpacked=target/packaged
rm -rf "$unpacked" && mkdir -p "$unpacked"
{
  echo '[workspace]'
  echo 'resolver = "3"'
  echo 'members = ["*"]'
  echo '[patch.crates-io]'
  for package in target/package/*.crate; do
    tar -xzf "$package" -C "$unpacked"
    dir=$(basename "$package" .crate)
    echo "${dir%-*} = { path = \"$dir\" }"
  done
} >"$unpacked/Cargo.toml"
cp Cargo.lock "$unpacked/"
msrv=$(sed -n 's/^rust-version = "\(.*\)"$/\1/p' Cargo.toml)
rustup toolchain list | grep -q "^$msrv" || rustup toolchain install "$msrv" --profile minimal
(cd "$unpacked" && K8S_OPENAPI_ENABLED_VERSION=1.37 CARGO_TARGET_DIR=../msrv cargo "+$msrv" check --workspace)
# What each published crate's public API changed since the version api/ records, breaking
# or compatible, and whether the crate's version allows it (scripts/public-api.sh).
scripts/public-api.sh check

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
