#!/usr/bin/env bash
# kubekit's main demo on a fresh machine: builds and starts the local control plane (unless
# a cluster is already configured through $KUBECONFIG), then shows it serving through a
# kubekit example program and kubectl. The control plane keeps running afterwards; stop it
# with `scripts/local-cluster.sh down`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ -n "${KUBECONFIG:-}" ]]; then
  kubeconfig=$KUBECONFIG
  echo "==> using the cluster configured in \$KUBECONFIG ($kubeconfig)"
else
  echo "==> starting the local control plane (the first run builds it from Go modules: ~15 min on 2 cores)"
  kubeconfig=$(scripts/local-cluster.sh up | tail -n 1)
fi
bin=$(scripts/build-control-plane.sh | tail -n 1)
kubectl() { "$bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }

echo "==> cargo run -p kubekit-examples --bin cluster-info"
cargo run -q -p kubekit-examples --bin cluster-info -- --kubeconfig "$kubeconfig"

echo "==> kubectl get --raw /readyz"
kubectl get --raw /readyz
echo
echo "==> kubectl get namespaces"
kubectl get namespaces
echo
echo "The control plane keeps running. Use it with:"
echo "  export KUBECONFIG=$kubeconfig"
echo "Stop it with: scripts/local-cluster.sh down"
