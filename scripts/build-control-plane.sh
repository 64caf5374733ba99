#!/usr/bin/env bash
# Builds the pinned control-plane binaries (kube-apiserver, kube-controller-manager,
# kubectl, etcd) from the Go module in testenv/go and caches them outside the clone.
#
#   scripts/build-control-plane.sh        build if needed; print the bin directory last
#
# The cache lives in ${KUBEKIT_CACHE_DIR:-~/.cache/kubekit}/k8s-<version>-etcd-<version>/bin
# and is keyed by a hash of go.mod and go.sum, so a second run takes well under a second.
# A failed build prints the Go compiler's own output and exits non-zero.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mod="$repo/testenv/go"

command -v go >/dev/null 2>&1 || {
  echo "build-control-plane: 'go' is not on PATH; install Go >= 1.25 to build the control plane" >&2
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
binaries=(kube-apiserver kube-controller-manager kubectl etcd)

complete() {
  [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] || return 1
  local b
  for b in "${binaries[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
}

if ! complete; then
  mkdir -p "$bin"
  rm -f "$stamp"
  minor=${k8s_version#v1.}
  minor=${minor%%.*}
  pkg=k8s.io/component-base/version
  ldflags="-s -w -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  log="$dir/build.log"
  build() { # <output name> <package>
    echo "build-control-plane: building $1 ($2) ..." >&2
    local start=$SECONDS
    if ! (cd "$mod" && go build -trimpath -ldflags "$ldflags" -o "$bin/$1.tmp" "$2") >"$log" 2>&1; then
      echo "build-control-plane: 'go build $2' failed:" >&2
      cat "$log" >&2
      exit 1
    fi
    mv "$bin/$1.tmp" "$bin/$1"
    echo "build-control-plane: built $1 in $((SECONDS - start)) s" >&2
  }
  (cd "$mod" && go mod download) >"$log" 2>&1 || {
    echo "build-control-plane: 'go mod download' failed:" >&2
    cat "$log" >&2
    exit 1
  }
  build etcd ./cmd/etcd
  build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
  build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
  build kubectl k8s.io/kubernetes/cmd/kubectl
  echo "$want" >"$stamp"
fi
echo "$bin"
