#!/usr/bin/env bash
# kubekit's main demo on a fresh machine: the App controller of the seeds at work.
#
# 1. Uses the cluster of $KUBECONFIG if set, else builds and starts the local control plane
#    (with its two kwok nodes, so the Deployments' pods run and become available).
# 2. Installs the App CRD and the RBAC the controller prints for the flags it runs with
#    (`app-controller --print-rbac`: a ClusterRole, and a Role for its Lease, bound to the
#    user `app-controller`), and makes a kubeconfig for that user on the local control
#    plane, so the controller runs with exactly those permissions.
# 3. Starts the App controller (5 workers, leader election on, metrics on
#    $DEMO_METRICS_ADDRESS, health probes on $DEMO_HEALTH_ADDRESS), applies the two example
#    Apps with kubectl, and shows the Deployments, Services, App status and events that
#    result (with the pods and available replicas when the cluster has nodes), a pod's log
#    and an exec into it, the health endpoints, selected /metrics lines and the Lease holder.
# 4. Stops the controller with SIGTERM (graceful shutdown). The control plane keeps
#    running; stop it with `scripts/local-cluster.sh down`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ -n "${KUBECONFIG:-}" ]]; then
  kubeconfig=$KUBECONFIG
  controller_kubeconfig=$KUBECONFIG
  echo "==> using the cluster configured in \$KUBECONFIG ($kubeconfig)"
else
  echo "==> starting the local control plane (the first run builds it from Go modules: ~10 min on 2 cores)"
  kubeconfig=$(scripts/local-cluster.sh up | tail -n 1)
  controller_kubeconfig=$(scripts/local-cluster.sh user app-controller | tail -n 1)
fi
bin=$(scripts/build-control-plane.sh | tail -n 1)
kubectl() { "$bin/kubectl" --kubeconfig "$kubeconfig" "$@"; }

echo "==> building the App controller"
cargo build -q --release -p app-controller --bin app-controller
controller="${CARGO_TARGET_DIR:-target}/release/app-controller"

echo "==> kubectl apply: the App CRD and the controller's RBAC"
kubectl apply -f app-controller/artifacts/crd/appcontroller.k8s.io_apps.yaml
kubectl wait --for condition=Established --timeout 60s crd/apps.appcontroller.k8s.io
"$controller" --print-rbac --workers 5 --leader-elect --rbac-subject user:app-controller |
  kubectl apply -f -

metrics=${DEMO_METRICS_ADDRESS:-127.0.0.1:8080}
health=${DEMO_HEALTH_ADDRESS:-127.0.0.1:8081}
echo "==> starting app-controller --workers 5 --leader-elect (log in target/app-controller.log)"
mkdir -p target
"$controller" --kubeconfig "$controller_kubeconfig" --workers 5 --leader-elect \
  --metrics-bind-address "$metrics" --health-probe-bind-address "$health" \
  >target/app-controller.log 2>&1 &
controller_pid=$!
trap 'kill -TERM $controller_pid 2>/dev/null || true' EXIT

echo "==> kubectl apply: the example Apps (namespace tcs)"
kubectl create namespace tcs --dry-run=client -o yaml | kubectl apply -f -
kubectl apply -f app-controller/artifacts/example/test_app.yaml
kubectl apply -f app-controller/artifacts/example/test_app_2.yaml

echo "==> waiting for the controller to report the Deployments' status in the Apps"
for app in test-app test-app-2; do
  for _ in $(seq 1 60); do
    [[ -n "$(kubectl get app "$app" -n tcs -o jsonpath='{.status.deploymentStatus.replicas}' 2>/dev/null)" ]] && break
    sleep 1
  done
done

nodes=$(kubectl get nodes -o name 2>/dev/null | wc -l)
if ((nodes > 0)); then
  echo "==> waiting for the Apps to report their Deployments' replicas as available ($nodes node(s))"
  for app in test-app test-app-2; do
    for _ in $(seq 1 60); do
      want=$(kubectl get app "$app" -n tcs -o jsonpath='{.spec.deploymentTemplate.replicas}' 2>/dev/null)
      [[ -n "$want" && "$(kubectl get app "$app" -n tcs -o jsonpath='{.status.deploymentStatus.availableReplicas}' 2>/dev/null)" == "$want" ]] && break
      sleep 1
    done
  done
else
  echo "==> the cluster has no nodes: pods stay Pending and no replica becomes available"
fi

echo "==> kubectl get apps,deployments,services,pods -n tcs"
kubectl get apps,deployments,services,pods -n tcs -o wide
echo
if ((nodes > 0)); then
  pod=$(kubectl get pods -n tcs -o name | head -n 1)
  echo "==> kubectl logs -n tcs $pod --tail 2 (kwok serves every pod's log)"
  kubectl logs -n tcs "$pod" --tail 2
  echo "==> echo hello | kubectl exec -i -n tcs $pod -- sh -c 'cat; exit 3' (kwok runs it on this machine)"
  echo hello | kubectl exec -i -n tcs "$pod" -- sh -c 'cat; exit 3' || echo "(kubectl exited with $?)"
  echo
fi
echo "==> status of App test-app (written by the controller through the status subresource)"
kubectl get app test-app -n tcs -o jsonpath='{.status}'
echo
echo
echo "==> ownerReferences of Deployment app-deploy"
kubectl get deployment app-deploy -n tcs -o jsonpath='{.metadata.ownerReferences}'
echo
echo
echo "==> events in tcs"
kubectl get events -n tcs --sort-by=.lastTimestamp
echo
echo "==> curl http://$health/readyz and /healthz"
curl -s "http://$health/readyz"
curl -s "http://$health/healthz"
echo
echo "==> curl http://$metrics/metrics (selected lines)"
curl -s "http://$metrics/metrics" | grep -E '^(workqueue_adds_total|workqueue_depth|controller_runtime_reconcile_total|controller_runtime_reconcile_errors_total|rest_client_requests_total|reflector_lists_total|informer_objects|leader_election_master_status)'
echo
echo "==> the leader: Lease app-controller in namespace default"
kubectl get lease app-controller -n default -o jsonpath='{.spec.holderIdentity}{"\n"}'
echo
echo "==> stopping the controller (SIGTERM: in-flight work finishes, the Lease is released, then it exits)"
kill -TERM "$controller_pid"
wait "$controller_pid" && echo "app-controller exited cleanly"
trap - EXIT
echo "==> last lines of its log"
tail -n 15 target/app-controller.log
echo
echo "The control plane keeps running. Use it with:"
echo "  export KUBECONFIG=$kubeconfig"
echo "Stop it with: scripts/local-cluster.sh down"
