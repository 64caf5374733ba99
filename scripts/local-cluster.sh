#!/usr/bin/env bash
# Starts and stops kubekit's local Kubernetes control plane: etcd, kube-apiserver,
# kube-controller-manager and, unless no nodes are asked for, kube-scheduler and kwok with
# simulated nodes, all built from pinned Go modules by scripts/build-control-plane.sh.
#
#   scripts/local-cluster.sh up   [--dir DIR] [--nodes N] [--watch-pid PID]
#       Start a control plane (or find the one already running in DIR) and print the path
#       of its admin kubeconfig as the last line. With --watch-pid, the control plane is
#       stopped and DIR removed as soon as process PID ends (used by the Rust testenv).
#       --nodes N (default $KUBEKIT_NODES, or 2) creates N Nodes kwok-node-0..N-1 that kwok
#       keeps Ready, and starts kube-scheduler: scheduled pods become Running and Ready
#       (no container runs). For every pod, kwok's kubelet endpoint (127.0.0.1, reached
#       through kube-apiserver's node proxy) serves
#         logs          the lines of DIR/pod.log (also for attach);
#         exec          the command run on this machine by kwok, in DIR;
#         port-forward  any port to `cat`, so bytes sent come back.
#       --nodes 0 starts neither kube-scheduler nor kwok: pods stay Pending, untouched.
#       A control plane already running in DIR is reused as it is, with the nodes it has.
#   scripts/local-cluster.sh down [--dir DIR]
#       Stop the control plane running in DIR and remove DIR.
#   scripts/local-cluster.sh user [--dir DIR] NAME [GROUP...]
#       Write a kubeconfig for user NAME (member of GROUPs) with a client certificate
#       signed by the cluster's CA, and print its path. RBAC decides what NAME may do.
#   scripts/local-cluster.sh restart-apiserver [--dir DIR]
#       Stop kube-apiserver and start it again on the same port and etcd (the failure
#       tests use it: clients see their connections cut and the server come back).
#   scripts/local-cluster.sh status [--dir DIR]
#       Exit 0 if the control plane in DIR is serving, 1 otherwise.
#
# DIR defaults to $KUBEKIT_CLUSTER_DIR or ~/.local/state/kubekit/local-cluster. It holds the
# certificates, the kubeconfigs, etcd's data, kwok's configuration (kwok.yaml), the pods'
# log (pod.log) and one log per component (*.log).
# Everything listens on 127.0.0.1 only, on free ports chosen at start.
# kube-apiserver runs with the feature gates in $KUBEKIT_FEATURE_GATES (default
# ShardedListAndWatch=true, the sharded list and watch kubekit's sharding uses; set it to
# ShardedListAndWatch=false to see a server without it). Services get cluster IPs from
# $KUBEKIT_SERVICE_CIDR (default 10.0.0.0/24: 253 Services besides `kubernetes`; a wider
# range must start at 10.0.0.0, e.g. 10.0.0.0/16, the serving certificate names 10.0.0.1).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "local-cluster: $*" >&2; exit 1; }

cmd=${1:-}
[[ -n "$cmd" ]] && shift
dir=${KUBEKIT_CLUSTER_DIR:-$HOME/.local/state/kubekit/local-cluster}
nodes=${KUBEKIT_NODES:-2}
watch_pid=""
args=()
while (($#)); do
  case "$1" in
    --dir) dir=$2; shift 2 ;;
    --watch-pid) watch_pid=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done

components=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

# --- helpers -----------------------------------------------------------------------------

# Prints <n> distinct free ports of 127.0.0.1, chosen at random below the kernel's
# ephemeral range (ip_local_port_range). A port of that range can be taken by any outgoing
# connection between this choice and the component's bind, or while kube-apiserver
# restarts on it.
free_ports() { # <n>
  python3 - "$1" <<'PORTS'
import random, socket, sys
n = int(sys.argv[1])
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low = int(f.read().split()[0])
except (OSError, ValueError, IndexError):
    low = 32768
candidates = list(range(10000, low))
random.shuffle(candidates)
ports = []
for port in candidates:
    if len(ports) == n:
        break
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        ports.append(port)
    except OSError:
        pass
    finally:
        s.close()
while len(ports) < n:  # no room below the ephemeral range: the kernel chooses
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    if s.getsockname()[1] not in ports:
        ports.append(s.getsockname()[1])
    s.close()
print(*ports)
PORTS
}

# A process is alive when it exists and is not a zombie waiting to be reaped.
alive() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) && [[ -n "$st" && "$st" != Z* ]]; }

pid_alive() { [[ -f "$dir/$1.pid" ]] && alive "$(cat "$dir/$1.pid")"; }

log_tail() { # <component>
  echo "----- last lines of $dir/$1.log -----" >&2
  tail -n 40 "$dir/$1.log" >&2 2>/dev/null || echo "(no log)" >&2
}

kubectl_admin() { "$bin/kubectl" --kubeconfig "$dir/admin.kubeconfig" "$@"; }

serving() { [[ -f "$dir/admin.kubeconfig" ]] && kubectl_admin get --raw /readyz >/dev/null 2>&1; }

# Signs a certificate for <subject> with the cluster CA; the other arguments are its
# extensions, one per line of the extension file.
signed_cert() { # <file prefix> <subject> <extension...>
  local out=$1 subj=$2
  shift 2
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$out.key" -out "$out.csr" -subj "$subj" 2>/dev/null
  openssl x509 -req -in "$out.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 365 -out "$out.crt" -extfile <(printf '%s\n' "$@") 2>/dev/null
  rm -f "$out.csr"
}

# Signs a client certificate for CN=<name>, O=<groups...> with the cluster CA.
client_cert() { # <file prefix> <CN> [O...]
  local out=$1 subj="/CN=$2" g
  shift 2
  for g in "$@"; do subj+="/O=$g"; done
  signed_cert "$out" "$subj" 'basicConstraints=CA:FALSE' 'keyUsage=critical,digitalSignature' \
    'extendedKeyUsage=clientAuth'
}

# Signs a serving certificate for CN=<name> and <subjectAltName> with the cluster CA.
server_cert() { # <file prefix> <CN> <subjectAltName>
  signed_cert "$1" "/CN=$2" 'basicConstraints=CA:FALSE' \
    'keyUsage=critical,digitalSignature,keyEncipherment' 'extendedKeyUsage=serverAuth' \
    "subjectAltName=$3"
}

write_kubeconfig() { # <file> <user> <cert prefix>
  cat >"$1" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: kubekit-local
  cluster:
    server: https://127.0.0.1:$(cat "$dir/apiserver.port")
    certificate-authority: $dir/ca.crt
users:
- name: $2
  user:
    client-certificate: $3.crt
    client-key: $3.key
contexts:
- name: $2@kubekit-local
  context:
    cluster: kubekit-local
    user: $2
current-context: $2@kubekit-local
KUBECONFIG
}

make_pki() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$dir/ca.key" -out "$dir/ca.crt" -days 365 -subj "/CN=kubekit-local-ca" 2>/dev/null
  server_cert "$dir/apiserver" kube-apiserver \
    'IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local'
  openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
  openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
  client_cert "$dir/admin" kubekit-admin system:masters
  client_cert "$dir/controller-manager" system:kube-controller-manager system:masters
  client_cert "$dir/scheduler" system:kube-scheduler system:masters
  client_cert "$dir/kwok" kwok-controller system:masters
  # kube-apiserver's client certificate toward the kubelets (kwok's endpoint).
  client_cert "$dir/apiserver-kubelet-client" kube-apiserver-kubelet-client system:masters
  # kwok's kubelet endpoint serves TLS on 127.0.0.1.
  server_cert "$dir/kubelet" kwok-kubelet 'IP:127.0.0.1,DNS:localhost'
}

start() { # <component> <binary> <args...>: runs detached, output in <component>.log
  local name=$1
  shift
  setsid "$@" </dev/null >"$dir/$name.log" 2>&1 &
  echo $! >"$dir/$name.pid"
}

# Signals a component's whole process group (start runs each in its own session, so what
# it started, such as the commands kwok runs for exec, goes too), else the process alone.
signal() { # <signal> <pid>
  kill "-$1" -- "-$2" 2>/dev/null || kill "-$1" "$2" 2>/dev/null
}

stop_all() { # TERM every component, then KILL what is left after 5 s
  local c pid pids=()
  for c in "${components[@]}" watchdog; do
    [[ -f "$dir/$c.pid" ]] || continue
    pid=$(cat "$dir/$c.pid")
    [[ "$c" == watchdog && "$pid" == "${BASHPID:-$$}" ]] && continue
    signal TERM "$pid" && pids+=("$pid")
  done
  local deadline=$((SECONDS + 5)) left
  while :; do
    left=()
    for pid in "${pids[@]}"; do alive "$pid" && left+=("$pid"); done
    ((${#left[@]} == 0)) && return
    ((SECONDS >= deadline)) && break
    sleep 0.1
  done
  for pid in "${left[@]}"; do signal KILL "$pid" || true; done
}

# The endpoint reconciler is off: since 1.37 kube-apiserver refuses to publish a loopback
# address as the `kubernetes` Service's endpoint, and nothing here runs in a Pod.
start_apiserver() { # on the ports recorded in $dir
  local etcd_port api_port
  etcd_port=$(cat "$dir/etcd.port")
  api_port=$(cat "$dir/apiserver.port")
  start kube-apiserver "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --endpoint-reconciler-type none \
    --tls-cert-file "$dir/apiserver.crt" --tls-private-key-file "$dir/apiserver.key" \
    --client-ca-file "$dir/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$dir/sa.pub" --service-account-signing-key-file "$dir/sa.key" \
    --service-cluster-ip-range "${KUBEKIT_SERVICE_CIDR:-10.0.0.0/24}" \
    --authorization-mode RBAC \
    --disable-admission-plugins ServiceAccount \
    --watch-cache-sizes configmaps#0 \
    --feature-gates "${KUBEKIT_FEATURE_GATES:-ShardedListAndWatch=true}" \
    --api-audiences https://kubernetes.default.svc.cluster.local \
    --kubelet-client-certificate "$dir/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$dir/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$dir/ca.crt" --kubelet-preferred-address-types InternalIP \
    --v 1
}

# Until /readyz answers, or die with the logs. With "retry", a component that exited
# because its port was taken meanwhile stops everything and returns 1 instead, so the
# caller starts again on other ports.
wait_serving() { # <what> [retry]
  local deadline=$((SECONDS + ${KUBEKIT_START_TIMEOUT:-120}))
  local c
  while :; do
    # Both alive first: a kube-apiserver could serve from another cluster's etcd that
    # took our etcd's port.
    for c in etcd kube-apiserver; do
      pid_alive "$c" && continue
      if [[ "${2:-}" == retry ]] && grep -q 'address already in use' "$dir/$c.log"; then
        echo "local-cluster: $c's port was taken; starting again on other ports" >&2
        stop_all
        return 1
      fi
      log_tail "$c"
      stop_all
      die "$c exited during $1 (state kept in $dir)"
    done
    serving && return 0
    if ((SECONDS > deadline)); then
      log_tail etcd
      log_tail kube-apiserver
      stop_all
      die "kube-apiserver not ready after ${KUBEKIT_START_TIMEOUT:-120} s during $1 (state kept in $dir)"
    fi
    sleep 0.5
  done
}

# The lines every pod's log shows (kubectl logs, attach); testenv's POD_LOG_LINES matches.
pod_log_lines=(
  "kubekit pod log line 1"
  "kubekit pod log line 2"
  "kubekit pod log line 3"
)

write_kwok_config() { # writes $dir/kwok.yaml: what kwok's kubelet endpoint serves
  # kwok reads the log in the CRI log format of a kubelet's container logs:
  # "<RFC 3339 time> <stream> <F(ull)|P(artial)> <text>".
  local i
  for i in "${!pod_log_lines[@]}"; do
    printf '2026-01-01T00:00:0%dZ stdout F %s\n' "$i" "${pod_log_lines[$i]}"
  done >"$dir/pod.log"
  # kwok's own options are given as flags: a KwokConfiguration in the file would replace
  # all of kwok's defaults.
  cat >"$dir/kwok.yaml" <<KWOK
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: pod-log
spec:
  logs:
  - logsFile: $dir/pod.log
    previousLogsFile: $dir/pod.log
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterAttach
metadata:
  name: pod-log
spec:
  attaches:
  - logsFile: $dir/pod.log
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: local
spec:
  execs:
  - local:
      workDir: $dir
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterPortForward
metadata:
  name: echo
spec:
  forwards:
  - command: [cat]
KWOK
}

start_nodes() { # kube-scheduler, kwok and $nodes Nodes, or die with the logs
  write_kubeconfig "$dir/scheduler.kubeconfig" system:kube-scheduler "$dir/scheduler"
  write_kubeconfig "$dir/kwok.kubeconfig" kwok-controller "$dir/kwok"
  start kube-scheduler "$bin/kube-scheduler" \
    --kubeconfig "$dir/scheduler.kubeconfig" \
    --authentication-kubeconfig "$dir/scheduler.kubeconfig" \
    --authorization-kubeconfig "$dir/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
    --v 1

  local port
  port=$(free_ports 1) || die "could not pick a free port (python3 failed)"
  echo "$port" >"$dir/kubelet.port"
  write_kwok_config
  # KWOK_WORKDIR keeps kwok from reading a ~/.kwok/kwok.yaml of this machine.
  KWOK_WORKDIR="$dir/kwok-workdir" start kwok "$bin/kwok" \
    --kubeconfig "$dir/kwok.kubeconfig" \
    --config "$dir/kwok.yaml" --config "$bin/kwok-stages.yaml" \
    --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --node-ip 127.0.0.1 --node-port "$port" --server-address "127.0.0.1:$port" \
    --tls-cert-file "$dir/kubelet.crt" --tls-private-key-file "$dir/kubelet.key" \
    --cidr 10.244.0.0/16 --node-lease-duration-seconds 40

  local i
  for ((i = 0; i < nodes; i++)); do
    cat <<NODE
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
---
NODE
  done >"$dir/nodes.yaml"
  kubectl_admin apply -f "$dir/nodes.yaml" >/dev/null 2>"$dir/nodes.err" || {
    cat "$dir/nodes.err" >&2; stop_all; die "cannot create the Nodes"; }

  local deadline=$((SECONDS + ${KUBEKIT_START_TIMEOUT:-120})) ready c
  while :; do
    ready=$(kubectl_admin get nodes -l type=kwok -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null | grep -c '^True$' || true)
    ((ready >= nodes)) && break
    for c in kube-scheduler kwok; do
      pid_alive "$c" || { log_tail "$c"; stop_all; die "$c exited during start (state kept in $dir)"; }
    done
    if ((SECONDS > deadline)); then
      log_tail kwok
      stop_all
      die "$ready of $nodes Nodes Ready after ${KUBEKIT_START_TIMEOUT:-120} s (state kept in $dir)"
    fi
    sleep 0.5
  done
}

# --- commands ----------------------------------------------------------------------------

up() {
  [[ "$nodes" =~ ^[0-9]+$ ]] || die "--nodes takes a count, not '$nodes'"
  if [[ -f "$dir/admin.kubeconfig" ]] && pid_alive kube-apiserver; then
    bin=$(cat "$dir/bin.path")
    if serving; then
      echo "local-cluster: already running in $dir" >&2
      echo "$dir/admin.kubeconfig"
      return
    fi
  fi
  [[ -d "$dir" ]] && { stop_all; rm -rf "$dir"; }
  command -v openssl >/dev/null || die "openssl is required (apt-get install openssl)"
  command -v python3 >/dev/null || die "python3 is required to pick free ports"
  bin=$("$repo/scripts/build-control-plane.sh" | tail -n 1)
  mkdir -p "$dir/etcd-data"
  dir=$(cd "$dir" && pwd)
  echo "$bin" >"$dir/bin.path"
  make_pki

  local attempt retry ports etcd_port peer_port api_port
  for attempt in 1 2 3; do
    ports=$(free_ports 3) || die "could not pick free ports (python3 failed)"
    read -r etcd_port peer_port api_port <<<"$ports"
    echo "$etcd_port" >"$dir/etcd.port"
    echo "$api_port" >"$dir/apiserver.port"
    rm -rf "$dir/etcd-data"
    # An 8 GiB backend quota, not etcd's 2 GiB: the informer benchmark's 100k Pods, each
    # written twice (a create and a status write), come close to the default.
    start etcd "$bin/etcd" --name kubekit --data-dir "$dir/etcd-data" \
      --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
      --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
      --initial-cluster "kubekit=http://127.0.0.1:$peer_port" --unsafe-no-fsync --log-level warn \
      --quota-backend-bytes 8589934592
    start_apiserver
    write_kubeconfig "$dir/admin.kubeconfig" kubekit-admin "$dir/admin"
    write_kubeconfig "$dir/controller-manager.kubeconfig" system:kube-controller-manager "$dir/controller-manager"
    ((attempt < 3)) && retry=retry || retry=
    wait_serving start $retry && break
  done

  start kube-controller-manager "$bin/kube-controller-manager" \
    --kubeconfig "$dir/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$dir/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$dir/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
    --service-account-private-key-file "$dir/sa.key" --root-ca-file "$dir/ca.crt" \
    --service-cluster-ip-range "${KUBEKIT_SERVICE_CIDR:-10.0.0.0/24}" --cluster-name kubekit-local \
    --v 1
  sleep 1
  pid_alive kube-controller-manager || { log_tail kube-controller-manager; stop_all; die "kube-controller-manager exited during start"; }
  ((nodes == 0)) || start_nodes

  if [[ -n "$watch_pid" ]]; then
    # Detached watchdog: when the watched process ends (normally, by a panic or a kill),
    # stop every component and remove the state directory.
    setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 0.5; done; exec "$2" down --dir "$3"' \
      watchdog "$watch_pid" "$repo/scripts/local-cluster.sh" "$dir" </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/watchdog.pid"
  fi
  echo "local-cluster: kube-apiserver $(kubectl_admin version -o json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])') serving on https://127.0.0.1:$(cat "$dir/apiserver.port") with $nodes kwok node(s) (logs in $dir)" >&2
  echo "$dir/admin.kubeconfig"
}

down() {
  [[ -d "$dir" ]] || { echo "local-cluster: nothing running in $dir" >&2; return; }
  stop_all
  rm -rf "$dir"
  echo "local-cluster: stopped and removed $dir" >&2
}

user() {
  (("${#args[@]}" >= 1)) || die "usage: local-cluster.sh user [--dir DIR] NAME [GROUP...]"
  [[ -f "$dir/ca.key" ]] || die "no control plane in $dir (run: local-cluster.sh up)"
  local name=${args[0]} safe
  safe=$(printf '%s' "$name" | tr -c 'A-Za-z0-9_.-' '_')
  mkdir -p "$dir/users"
  # Signing updates the CA's serial file (ca.srl): one user at a time, or a concurrent
  # signing fails (tests create users in parallel).
  exec 9>"$dir/users/.lock"
  flock 9
  client_cert "$dir/users/$safe" "$name" "${args[@]:1}"
  write_kubeconfig "$dir/users/$safe.kubeconfig" "$name" "$dir/users/$safe"
  echo "$dir/users/$safe.kubeconfig"
}

restart_apiserver() {
  [[ -f "$dir/apiserver.port" ]] || die "no control plane in $dir (run: local-cluster.sh up)"
  bin=$(cat "$dir/bin.path")
  local pid
  pid=$(cat "$dir/kube-apiserver.pid")
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + 5))
  while alive "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
  alive "$pid" && kill -KILL "$pid" 2>/dev/null
  mv "$dir/kube-apiserver.log" "$dir/kube-apiserver.previous.log"
  start_apiserver
  wait_serving restart
  echo "local-cluster: kube-apiserver restarted" >&2
}

status() {
  [[ -f "$dir/bin.path" ]] || exit 1
  bin=$(cat "$dir/bin.path")
  serving
}

case "$cmd" in
  up) up ;;
  down) down ;;
  user) user ;;
  status) status ;;
  restart-apiserver) restart_apiserver ;;
  *) die "usage: local-cluster.sh up|down|user|status|restart-apiserver [--dir DIR] (see the header of this script)" ;;
esac
