//! A real Kubernetes control plane for tests: etcd, kube-apiserver and
//! kube-controller-manager, built from pinned Go modules and started on loopback ports by
//! `scripts/local-cluster.sh`; on request also kube-scheduler and kwok with simulated nodes.
//!
//! # Contract
//!
//! - [`control_plane`] starts one control plane per test binary, the first time any test
//!   asks for it, and hands the same one to every later caller. Tests isolate themselves by
//!   working in their own namespace ([`ControlPlane::create_namespace`]). It has no nodes
//!   and no scheduler: pods stay Pending and nothing but their creator touches them.
//! - [`control_plane_with_nodes`] does the same for a second control plane that also runs
//!   kube-scheduler and kwok with [`NODES`] simulated Nodes: pods are scheduled and become
//!   Running and Ready (no container runs), and the kubelet API answers through
//!   kube-apiserver for every pod: logs show [`POD_LOG_LINES`], exec runs the command on
//!   this machine, port-forward to any port reaches `cat` (bytes sent come back). Only the
//!   test binaries that need running pods ask for it, since the two extra processes cost
//!   CPU and change pods that other tests watch. A binary that asks for both gets two
//!   control planes.
//! - [`control_plane_with_feature_gates`] does the same for a control plane whose
//!   kube-apiserver runs with other feature gates than the script's default
//!   (`ShardedListAndWatch=true`), e.g. `ShardedListAndWatch=false` to test a client
//!   against a server without sharded list and watch; one per set of gates, kept across
//!   [`ControlPlane::restart_apiserver`]; [`control_plane_with_service_cidr`] likewise for
//!   one whose Services get cluster IPs from a wider range than the default /24.
//! - When the test binary ends — normally, through a panicking test, or killed — a watchdog
//!   started with the control plane stops every process and removes its directory.
//! - A control plane that cannot start makes [`control_plane`] panic with the failing
//!   component's log tail and how to build the binaries; tests never skip silently.
//! - [`ControllerManager`] runs the pinned kube-controller-manager against any server,
//!   kubekit-fake's above all, for a controller's tests to meet the real controllers.
//! - If `KUBEKIT_TESTENV_RAN` names a file, one line is appended to it for each control
//!   plane started, so a CI script can prove that the control-plane tests really ran.
//!
//! ```no_run
//! # async fn demo() {
//! let cp = testenv::control_plane();
//! let client = cp.client().await;
//! let ns = cp.create_namespace(&client, "my-test").await;
//! # let _ = ns;
//! # }
//! ```

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

mod controller_manager;

pub use controller_manager::ControllerManager;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// A running local control plane. Obtain the shared one with [`control_plane`].
#[derive(Debug)]
pub struct ControlPlane {
    dir: PathBuf,
    kubeconfig: PathBuf,
    kubectl: PathBuf,
    script: PathBuf,
    /// What `scripts/local-cluster.sh` was started with besides the inherited environment
    /// (kube-apiserver's feature gates, the Service range), for a restart to keep it.
    env: Vec<(String, String)>,
}

static SHARED: OnceLock<Result<ControlPlane, String>> = OnceLock::new();
static SHARED_WITH_NODES: OnceLock<Result<ControlPlane, String>> = OnceLock::new();
static NAMESPACES: AtomicUsize = AtomicUsize::new(0);

/// How many simulated Nodes (`kwok-node-0`, `kwok-node-1`, ...) a control plane from
/// [`control_plane_with_nodes`] has.
pub const NODES: usize = 2;

/// The lines every pod on the simulated nodes logs, oldest first, as `kubectl logs` shows
/// them (without `--timestamps`). `kubectl logs -f` shows them and then waits for more.
pub const POD_LOG_LINES: [&str; 3] = [
    "kubekit pod log line 1",
    "kubekit pod log line 2",
    "kubekit pod log line 3",
];

/// A Deployment `name` of `replicas` Pods labelled `app: <name>`, each with one container
/// `name` whose image is never pulled (no node pulls images here).
pub fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": name },
        "spec": {
            "replicas": replicas,
            "selector": { "matchLabels": { "app": name } },
            "template": {
                "metadata": { "labels": { "app": name } },
                "spec": { "containers": [{ "name": name, "image": format!("kubekit.invalid/{name}") }] }
            }
        }
    }))
    .expect("a Deployment object")
}

/// The control plane shared by every test of this binary, started on first use.
///
/// # Panics
///
/// Panics, with the reason and the failing component's log tail, when the control plane
/// cannot be built or started.
pub fn control_plane() -> &'static ControlPlane {
    match SHARED.get_or_init(|| ControlPlane::start(0, &[])) {
        Ok(cp) => cp,
        Err(e) => panic!("{e}"),
    }
}

/// The control plane with kube-scheduler, kwok and [`NODES`] Ready Nodes shared by every
/// test of this binary that asks for it, started on first use (see the crate's contract).
///
/// # Panics
///
/// Panics, with the reason and the failing component's log tail, when the control plane
/// cannot be built or started, or its Nodes do not become Ready.
pub fn control_plane_with_nodes() -> &'static ControlPlane {
    match SHARED_WITH_NODES.get_or_init(|| ControlPlane::start(NODES, &[])) {
        Ok(cp) => cp,
        Err(e) => panic!("{e}"),
    }
}

/// The control plane (without nodes) whose kube-apiserver runs with `--feature-gates
/// <gates>` (e.g. `ShardedListAndWatch=false`), shared by every test of this binary that
/// asks for the same gates, started on first use.
///
/// # Panics
///
/// As [`control_plane`].
pub fn control_plane_with_feature_gates(gates: &str) -> &'static ControlPlane {
    control_plane_with_env(&[("KUBEKIT_FEATURE_GATES", gates)])
}

/// The control plane (without nodes) whose Services get cluster IPs from `cidr`, which
/// starts at 10.0.0.0 (e.g. `10.0.0.0/16` for 65,533 Services where the default /24 holds
/// 253), shared by every test of this binary that asks for the same range, started on
/// first use.
///
/// # Panics
///
/// As [`control_plane`].
pub fn control_plane_with_service_cidr(cidr: &str) -> &'static ControlPlane {
    control_plane_with_env(&[("KUBEKIT_SERVICE_CIDR", cidr)])
}

/// The control plane (without nodes) that `scripts/local-cluster.sh` starts with `env`,
/// one per `env`.
fn control_plane_with_env(env: &[(&str, &str)]) -> &'static ControlPlane {
    type Env = Vec<(String, String)>;
    type Started = Vec<(Env, &'static Result<ControlPlane, String>)>;
    static STARTED: Mutex<Started> = Mutex::new(Vec::new());
    let key: Env = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut started = STARTED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let cp = match started.iter().find(|(e, _)| *e == key) {
        Some((_, cp)) => *cp,
        None => {
            let cp: &'static Result<ControlPlane, String> =
                Box::leak(Box::new(ControlPlane::start(0, env)));
            started.push((key, cp));
            cp
        }
    };
    match cp {
        Ok(cp) => cp,
        Err(e) => panic!("{e}"),
    }
}

/// The repository's root directory (where `scripts/` lives).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testenv lives one level below the repository root")
        .to_path_buf()
}

/// The directory of the pinned control-plane binaries (kube-apiserver, etcd,
/// kube-controller-manager, kubectl, ...), built first if need be by
/// `scripts/build-control-plane.sh`, which prints it last.
///
/// # Errors
///
/// The script fails (its error output is the message).
pub fn bin_dir() -> Result<PathBuf, String> {
    let out = Command::new("bash")
        .arg(repo_root().join("scripts/build-control-plane.sh"))
        .output()
        .map_err(|e| format!("run build-control-plane.sh: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    Ok(PathBuf::from(stdout.lines().last().unwrap_or_default()))
}

impl ControlPlane {
    fn start(nodes: usize, env: &[(&str, &str)]) -> Result<Self, String> {
        let script = repo_root().join("scripts/local-cluster.sh");
        let dir = std::env::temp_dir().join(format!(
            "kubekit-testenv-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis())
                .unwrap_or_default()
        ));
        let mut up = Command::new("bash");
        up.arg(&script)
            .args(["up", "--dir"])
            .arg(&dir)
            .args(["--nodes", &nodes.to_string()])
            .args(["--watch-pid", &std::process::id().to_string()]);
        up.envs(env.iter().copied());
        let out = up
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            return Err(format!(
                "the local control plane did not start ({}).\n\
                 It is built from Go modules by scripts/build-control-plane.sh (needs Go >= 1.26 \
                 and openssl); try `scripts/local-cluster.sh up` by hand.\n{stderr}",
                out.status
            ));
        }
        let kubeconfig =
            PathBuf::from(stdout.lines().last().ok_or_else(|| {
                format!("local-cluster.sh printed no kubeconfig path:\n{stderr}")
            })?);
        let bin = std::fs::read_to_string(dir.join("bin.path"))
            .map_err(|e| format!("control plane in {} has no bin.path: {e}", dir.display()))?;
        if let Some(marker) = std::env::var_os("KUBEKIT_TESTENV_RAN") {
            let line = format!("{} {}\n", std::process::id(), kubeconfig.display());
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(&marker)
                .and_then(|mut f| f.write_all(line.as_bytes()))
                .map_err(|e| format!("cannot write {}: {e}", Path::new(&marker).display()))?;
        }
        Ok(Self {
            kubectl: Path::new(bin.trim()).join("kubectl"),
            dir,
            kubeconfig,
            script,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        })
    }

    /// Path of the admin kubeconfig (user `kubekit-admin`, group `system:masters`).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The control plane's state directory: certificates, kubeconfigs, etcd data and one
    /// `<component>.log` per process.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A `kube::Config` for the admin user.
    pub async fn config(&self) -> kube::Config {
        config_from(&self.kubeconfig).await
    }

    /// A `kube::Client` for the admin user.
    pub async fn client(&self) -> kube::Client {
        kube::Client::try_from(self.config().await).expect("client from the admin config")
    }

    /// A `kubectl` command (built from the same pinned Kubernetes version) already pointed at
    /// this control plane as admin.
    pub fn kubectl(&self) -> Command {
        let mut cmd = Command::new(&self.kubectl);
        cmd.arg("--kubeconfig").arg(&self.kubeconfig);
        cmd
    }

    /// [`kubectl`](Self::kubectl) with `args`, `stdin` written to its standard input; what
    /// it printed and how it ended, whatever that was.
    pub fn kubectl_with_stdin(&self, args: &[&str], stdin: &str) -> std::process::Output {
        let mut child = (self.kubectl().args(args))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run kubectl");
        let mut input = child.stdin.take().expect("kubectl's stdin");
        std::io::Write::write_all(&mut input, stdin.as_bytes()).expect("write kubectl's stdin");
        drop(input);
        child.wait_with_output().expect("kubectl's output")
    }

    /// Path of the `kubectl` binary that [`ControlPlane::kubectl`] runs.
    pub fn kubectl_path(&self) -> &Path {
        &self.kubectl
    }

    /// The file, in the kubelet's CRI log format, that kwok serves as every pod's log and
    /// attach output ([`POD_LOG_LINES`]). A line appended to it reaches every
    /// `kubectl logs -f` and `kubectl attach` of every pod, and changes every pod's log for
    /// the other tests too.
    pub fn pod_log_path(&self) -> PathBuf {
        self.dir.join("pod.log")
    }

    /// Creates pod `name` in namespace `ns` with one container `main` (its image is never
    /// pulled) and waits, for at most 120 s, until it is Running and Ready on a simulated
    /// node; returns the pod as last read. Needs [`control_plane_with_nodes`].
    ///
    /// # Panics
    ///
    /// Panics when the pod cannot be created or is not Running and Ready in time.
    pub async fn run_pod(&self, client: &kube::Client, ns: &str, name: &str) -> Pod {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": { "name": name, "labels": { "app": name } },
            "spec": { "containers": [{ "name": "main", "image": "kubekit.invalid/main" }] }
        }))
        .expect("pod object");
        let api = Api::<Pod>::namespaced(client.clone(), ns);
        api.create(&PostParams::default(), &pod)
            .await
            .unwrap_or_else(|e| panic!("create pod {ns}/{name}: {e}"));
        eventually_ok(120, &format!("pod {ns}/{name} Running and Ready"), || {
            let api = api.clone();
            async move {
                let pod = api.get(name).await.map_err(|e| e.to_string())?;
                let status = pod.status.clone().unwrap_or_default();
                let ready = status
                    .conditions
                    .iter()
                    .flatten()
                    .any(|c| c.type_ == "Ready" && c.status == "True");
                let phase = status.phase.unwrap_or_default();
                if phase == "Running" && ready {
                    Ok(pod)
                } else {
                    Err(format!("phase {phase:?}, ready {ready}"))
                }
            }
        })
        .await
    }

    /// Writes a kubeconfig for user `name` in `groups`, authenticated by a client certificate
    /// signed by the cluster's CA, and returns its path. The user may do only what RBAC
    /// grants it.
    pub fn user_kubeconfig(&self, name: &str, groups: &[&str]) -> PathBuf {
        let out = Command::new("bash")
            .arg(&self.script)
            .args(["user", "--dir"])
            .arg(&self.dir)
            .arg(name)
            .args(groups)
            .output()
            .expect("run local-cluster.sh user");
        assert!(
            out.status.success(),
            "local-cluster.sh user {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    }

    /// Compacts etcd's history up to `revision` (a resourceVersion the API server handed
    /// out), so that watches and lists from older resourceVersions get 410 Gone — what
    /// happens on a real cluster when a client falls too far behind. History already
    /// compacted past `revision` (by another test on this control plane, or by
    /// kube-apiserver's periodic compaction) is as good.
    pub fn compact_etcd(&self, revision: i64) {
        let port = std::fs::read_to_string(self.dir.join("etcd.port")).expect("etcd.port");
        let body = format!(r#"{{"revision":"{revision}","physical":true}}"#);
        let mut stream =
            std::net::TcpStream::connect(("127.0.0.1", port.trim().parse::<u16>().expect("port")))
                .expect("connect to etcd");
        write!(
            stream,
            "POST /v3/kv/compaction HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("send compaction request");
        let mut response = String::new();
        std::io::Read::read_to_string(&mut stream, &mut response).expect("read etcd's answer");
        assert!(
            response.starts_with("HTTP/1.1 200")
                || response.contains("required revision has been compacted"),
            "etcd refused to compact to revision {revision}: {response}"
        );
    }

    /// Stops kube-apiserver and starts it again on the same port and etcd; returns once it
    /// serves. Every open connection and watch is cut. Tests that call this should run in
    /// their own test binary, since it disturbs every test sharing the control plane.
    pub fn restart_apiserver(&self) {
        let mut restart = Command::new("bash");
        restart
            .arg(&self.script)
            .args(["restart-apiserver", "--dir"])
            .arg(&self.dir);
        restart.envs(self.env.iter().map(|(k, v)| (k, v)));
        let out = restart
            .output()
            .expect("run local-cluster.sh restart-apiserver");
        assert!(
            out.status.success(),
            "local-cluster.sh restart-apiserver failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Creates a namespace with a unique name starting with `prefix` and returns its name.
    /// Each test should work in its own namespace.
    pub async fn create_namespace(&self, client: &kube::Client, prefix: &str) -> String {
        let n = NAMESPACES.fetch_add(1, Ordering::Relaxed);
        let mut name: String = prefix
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .take(40)
            .collect();
        name = format!("{}-{}-{n}", name.trim_matches('-'), std::process::id());
        let ns: Namespace = serde_json::from_value(serde_json::json!({
            "metadata": { "name": name }
        }))
        .expect("namespace object");
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &ns)
            .await
            .unwrap_or_else(|e| panic!("create namespace {name}: {e}"));
        name
    }
}

/// Polls `check` every 100 ms until it returns `Some`, for at most `secs` seconds, and
/// returns that value. For conditions the server reaches asynchronously (a CRD becoming
/// Established, a controller acting).
///
/// # Panics
///
/// Panics naming `what` when `secs` pass first.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let check = || {
        let done = check();
        async move { done.await.ok_or("") }
    };
    eventually_ok(secs, what, check).await
}

/// [`eventually`] for a check that says why it is not done yet: polls `check` every 100 ms
/// until it returns `Ok`, for at most `secs` seconds, and returns that value.
///
/// # Panics
///
/// Panics naming `what` and the last reason `check` gave when `secs` pass first.
pub async fn eventually_ok<T, E, F, Fut>(secs: u64, what: &str, mut check: F) -> T
where
    E: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let why = match check().await {
            Ok(v) => return v,
            Err(why) => why.to_string(),
        };
        let colon = if why.is_empty() { "" } else { ": " };
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}{colon}{why}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Loads a `kube::Config` from the kubeconfig file at `path`.
pub async fn config_from(path: &Path) -> kube::Config {
    let kc = Kubeconfig::read_from(path)
        .unwrap_or_else(|e| panic!("read kubeconfig {}: {e}", path.display()));
    kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap_or_else(|e| panic!("config from {}: {e}", path.display()))
}
