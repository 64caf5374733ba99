#!/usr/bin/env bash
# Builds the pinned control-plane binaries (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, etcd) from the Go module in testenv/go, and kwok (which simulates
# nodes and the pods on them) from the Go module in testenv/go-kwok, and caches them outside
# the clone.
#
#   scripts/build-control-plane.sh        build if needed; print the bin directory last
#
# The cache lives in ${KUBEKIT_CACHE_DIR:-~/.cache/kubekit}/k8s-<version>-etcd-<version>/bin.
# The Kubernetes binaries are keyed by a hash of testenv/go's go.mod and go.sum, kwok by a
# hash of testenv/go-kwok's; a binary missing from a cache whose key matches is built alone,
# so a second run takes well under a second. Beside kwok the build writes kwok-stages.yaml,
# the node and pod stages of kwok's own defaults (kwok's controller needs them passed with
# --config), copied from the pinned kwok module.
# A failed build prints the Go compiler's own output and exits non-zero.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$repo/testenv/go"
kwok_mod="$repo/testenv/go-kwok"

command -v go >/dev/null 2>&1 || {
  echo "build-control-plane: 'go' is not on PATH; install Go >= 1.26 to build the control plane (kwok needs 1.26)" >&2
  exit 1
}

k8s_version=$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$mod/go.mod")
etcd_version=$(awk '$1 == "go.etcd.io/etcd/server/v3" {print $2; exit}' "$mod/go.mod")
[[ -n "$k8s_version" && -n "$etcd_version" ]] || {
  echo "build-control-plane: could not read the pinned versions from $mod/go.mod" >&2
  exit 1
}

cache_root=${KUBEKIT_CACHE_DIR:-$HOME/.cache/kubekit}
dir="$cache_root/k8s-${k8s_version#v}-etcd-${etcd_version#v}"
bin="$dir/bin"
stamp="$dir/.stamp"
want=$(cat "$mod/go.mod" "$mod/go.sum" "$mod/cmd/etcd/main.go" | sha256sum | cut -d' ' -f1)
kwok_stamp="$dir/.kwok.stamp"
kwok_want=$(cat "$kwok_mod/go.mod" "$kwok_mod/go.sum" "$kwok_mod"/overlay/*.go | sha256sum | cut -d' ' -f1)
# <output name> <package>: what testenv/go builds.
k8s_binaries=(
  "etcd ./cmd/etcd"
  "kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver"
  "kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager"
  "kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler"
  "kubectl k8s.io/kubernetes/cmd/kubectl"
)
log="$dir/build.log"

fail() { # <what failed>: print the Go tool's output and stop
  echo "build-control-plane: $1 failed:" >&2
  cat "$log" >&2
  exit 1
}

build() { # <module dir> <ldflags> <output name> <package> [go build flags...]
  echo "build-control-plane: building $3 ($4) ..." >&2
  local start=$SECONDS
  (cd "$1" && go build -trimpath -ldflags "$2" "${@:5}" -o "$bin/$3.tmp" "$4") >"$log" 2>&1 || fail "'go build $4'"
  mv "$bin/$3.tmp" "$bin/$3"
  echo "build-control-plane: built $3 in $((SECONDS - start)) s" >&2
}

mkdir -p "$bin"
# One build at a time per cache: two clones testing at once (or a test binary starting two
# control planes) would otherwise share the build's scratch files.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$dir/.build.lock"
  flock 9
fi

# A cache built from other go.mod/go.sum is rebuilt whole; one that only lacks a binary
# (the list grew) gets that binary.
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
  rm -f "$stamp"
  for entry in "${k8s_binaries[@]}"; do rm -f "$bin/${entry%% *}"; done
fi
missing=()
for entry in "${k8s_binaries[@]}"; do [[ -x "$bin/${entry%% *}" ]] || missing+=("$entry"); done
if ((${#missing[@]})); then
  minor=${k8s_version#v1.}
  minor=${minor%%.*}
  pkg=k8s.io/component-base/version
  ldflags="-s -w -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  (cd "$mod" && go mod download) >"$log" 2>&1 || fail "'go mod download' in $mod"
  for entry in "${missing[@]}"; do
    read -r name package <<<"$entry"
    build "$mod" "$ldflags" "$name" "$package"
  done
fi
echo "$want" >"$stamp"

if [[ ! -f "$kwok_stamp" || "$(cat "$kwok_stamp")" != "$kwok_want" || ! -x "$bin/kwok" || ! -f "$bin/kwok-stages.yaml" ]]; then
  rm -f "$kwok_stamp"
  (cd "$kwok_mod" && go mod download) >"$log" 2>&1 || fail "'go mod download' in $kwok_mod"
  kwok_version=$(cd "$kwok_mod" && go list -m -f '{{.Version}}' sigs.k8s.io/kwok)
  kwok_src=$(cd "$kwok_mod" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  # testenv/go-kwok/overlay/debugging_exec.go replaces kwok's own file of that name (it
  # says why). Go builds nothing changed inside its module cache, so kwok's module is
  # copied from there, patched, and used through a replace directive in a copy of
  # go.mod (-modfile), leaving testenv/go-kwok untouched.
  src="$dir/kwok-src"
  rm -rf "$src"
  cp -r "$kwok_src" "$src"
  chmod -R u+w "$src"
  cp "$kwok_mod/overlay/debugging_exec.go" "$src/pkg/kwok/server/debugging_exec.go"
  cp "$kwok_mod/go.mod" "$dir/kwok.go.mod"
  cp "$kwok_mod/go.sum" "$dir/kwok.go.sum"
  echo "replace sigs.k8s.io/kwok => $src" >>"$dir/kwok.go.mod"
  build "$kwok_mod" "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version#v}" kwok sigs.k8s.io/kwok/cmd/kwok \
    -modfile "$dir/kwok.go.mod"
  rm -rf "$src"
  stages=(node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml)
  {
    echo "# kwok $kwok_version's default stages (kustomize/stage in its module)."
    for s in "${stages[@]}"; do
      [[ -f "$kwok_src/kustomize/stage/$s" ]] || { echo "build-control-plane: kwok $kwok_version has no stage $s" >&2; exit 1; }
      echo "---"
      cat "$kwok_src/kustomize/stage/$s"
    done
  } >"$bin/kwok-stages.yaml.tmp"
  mv "$bin/kwok-stages.yaml.tmp" "$bin/kwok-stages.yaml"
  echo "$kwok_want" >"$kwok_stamp"
fi
echo "$bin"
