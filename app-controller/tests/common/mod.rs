//! Helpers of the App controller's tests against the real control plane: installing the
//! CRD and RBAC for a least-privileged user, `kubectl apply`, manifests of many Apps, the
//! controller process, the reconciles in its log, and the events recorded about an App.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kubekit::clientset::{Clientset, ListOptions};
use testenv::ControlPlane;

pub mod replicas;

/// `kubectl apply -f -` of `yaml`, as admin.
pub fn kubectl_apply(cp: &ControlPlane, yaml: &str) {
    let mut child = cp
        .kubectl()
        .args(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kubectl");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(yaml.as_bytes())
        .expect("write manifest");
    let out = child.wait_with_output().expect("kubectl apply");
    assert!(
        out.status.success(),
        "kubectl apply failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `kubectl apply -f -` of `yaml` with `kubeconfig`: whether it succeeded, and its
/// stderr.
pub fn try_apply(kubeconfig: &Path, yaml: &str) -> (bool, String) {
    let out = kubectl(kubeconfig)
        .args(["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            let stdin = child.stdin.take().expect("stdin");
            std::io::Write::write_all(&mut { stdin }, yaml.as_bytes())?;
            child.wait_with_output()
        })
        .expect("run kubectl apply");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`try_apply`], which must succeed.
pub fn apply(kubeconfig: &Path, yaml: &str) {
    let (ok, stderr) = try_apply(kubeconfig, yaml);
    assert!(ok, "kubectl apply failed: {stderr}");
}

/// The pinned kubectl with `kubeconfig` (built with the control plane, which it does not
/// start).
pub fn kubectl(kubeconfig: &Path) -> std::process::Command {
    static KUBECTL: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let path = KUBECTL.get_or_init(|| {
        testenv::bin_dir()
            .expect("the control plane's binaries")
            .join("kubectl")
    });
    let mut command = std::process::Command::new(path);
    command.arg("--kubeconfig").arg(kubeconfig);
    command
}

/// One server of a test run on both the real control plane and kubekit-fake: its
/// admin's kubeconfig, a user's, and the test's namespace.
pub struct Server {
    pub admin: std::path::PathBuf,
    pub user: std::path::PathBuf,
    pub ns: String,
}

/// The real control plane and a kubekit-fake with RBAC (returned to be kept running), each
/// with user `user`'s kubeconfig and a namespace `<prefix>-<random>` to make.
pub async fn real_and_fake(
    user: &str,
    prefix: &str,
) -> (Server, Server, kubekit_fake::FakeApiServer) {
    let cp = testenv::control_plane();
    let real = Server {
        admin: cp.kubeconfig_path().to_path_buf(),
        user: cp.user_kubeconfig(user, &[]),
        ns: format!("{prefix}-{}", fastrand::u32(..)),
    };
    let fake_server = kubekit_fake::FakeApiServer::with_rbac()
        .await
        .expect("the fake starts");
    let fake = Server {
        admin: fake_server.kubeconfig_path().to_path_buf(),
        user: fake_server
            .user_kubeconfig(user, &[])
            .expect("a kubeconfig"),
        ns: format!("{prefix}-{}", fastrand::u32(..)),
    };
    (real, fake, fake_server)
}

/// A free loopback address (the port is free once the listener is dropped).
pub fn free_address() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
}

/// Waits until the controller's `/readyz` at `health` (`host:port`) answers 200.
pub async fn wait_ready(health: &str) {
    testenv::eventually(60, "the controller to be ready", || async {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let mut stream = tokio::net::TcpStream::connect(health).await.ok()?;
        let request = "GET /readyz HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n";
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await.ok()?;
        response.starts_with("HTTP/1.1 200").then_some(())
    })
    .await;
}

/// The text of `app-controller/artifacts/<path>`.
pub fn artifact(path: &str) -> String {
    std::fs::read_to_string(format!("{}/artifacts/{path}", env!("CARGO_MANIFEST_DIR")))
        .expect("artifact")
}

/// The controller process; stopped with SIGTERM when dropped (if still running).
pub struct Controller(pub Child);

impl Controller {
    /// Starts it with `extra` flags, its log (stdout) going to `log`.
    pub fn start_with(kubeconfig: &std::path::Path, ns: &str, extra: &[&str], log: Stdio) -> Self {
        let child = Command::new(env!("CARGO_BIN_EXE_app-controller"))
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--namespace", ns, "--workers", "5"])
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(log)
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start app-controller");
        Self(child)
    }

    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.0.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill -TERM");
        for _ in 0..300 {
            if let Some(status) = self.0.try_wait().expect("try_wait") {
                return status;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        panic!("app-controller did not exit within 30 s of SIGTERM");
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
        }
    }
}

/// Installs the CRD (once per control plane) and the RBAC the controller prints for
/// `flags` in namespace `ns` ([`print_rbac`]), bound to user `user`, and returns that
/// user's kubeconfig.
pub fn install(cp: &ControlPlane, ns: &str, user: &str, flags: &[&str]) -> std::path::PathBuf {
    // Once per control plane (a test binary may start several): tests applying the CRD at
    // once would race to create it.
    static CLUSTER_WIDE: std::sync::Mutex<Vec<std::path::PathBuf>> =
        std::sync::Mutex::new(Vec::new());
    let mut installed = CLUSTER_WIDE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !installed.iter().any(|dir| dir == cp.dir()) {
        kubectl_apply(cp, &artifact("crd/appcontroller.k8s.io_apps.yaml"));
        let out = cp
            .kubectl()
            .args(["wait", "--for", "condition=Established", "--timeout", "60s"])
            .arg("crd/apps.appcontroller.k8s.io")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        installed.push(cp.dir().to_path_buf());
    }
    drop(installed);
    kubectl_apply(cp, &print_rbac(ns, user, flags));
    cp.user_kubeconfig(user, &[])
}

/// What `app-controller --print-rbac` prints for the controller run in `ns` with `flags`:
/// its roles, named `<user>-<ns>` (a user may run controllers in several namespaces that
/// share one Lease's namespace), bound to user `user`.
pub fn print_rbac(ns: &str, user: &str, flags: &[&str]) -> String {
    let (name, subject) = (format!("{user}-{ns}"), format!("user:{user}"));
    let naming = [
        "--namespace",
        ns,
        "--rbac-name",
        &name,
        "--rbac-subject",
        &subject,
    ];
    printed_rbac(&[flags, &naming].concat())
}

/// What `app-controller --print-rbac` prints with `args`.
pub fn printed_rbac(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_app-controller"))
        .arg("--print-rbac")
        .args(args)
        .output()
        .expect("app-controller --print-rbac");
    assert!(
        out.status.success(),
        "app-controller --print-rbac: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("YAML")
}

/// A Lease in `lease_ns` with short timings (4 s, renewed within 3 s, retried every
/// 500 ms), for leader election or a shard ring.
pub fn short_lease(lease_ns: &str) -> [&str; 8] {
    [
        "--leader-elect-namespace",
        lease_ns,
        "--leader-elect-lease-duration",
        "4s",
        "--leader-elect-renew-deadline",
        "3s",
        "--leader-elect-retry-period",
        "500ms",
    ]
}

/// The flags of a replica electing its leader on a Lease in `lease_ns`, as far as its
/// RBAC is concerned.
pub fn leader_flags(lease_ns: &str) -> [&str; 3] {
    ["--leader-elect", "--leader-elect-namespace", lease_ns]
}

/// The events with `reason` about the object named `app` in `ns`.
pub async fn events_for(cs: &Clientset, ns: &str, app: &str, reason: &str) -> Vec<Event> {
    cs.core_v1()
        .events(ns)
        .list(&ListOptions::default().fields(&format!("involvedObject.name={app}")))
        .await
        .expect("list events")
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .collect()
}

/// `count` Apps `<prefix>-<i>` in each namespace, in one manifest.
pub fn apps_manifest(namespaces: &[String], prefix: &str, count: usize) -> String {
    namespaces
        .iter()
        .flat_map(|ns| {
            (0..count).map(move |i| {
                let name = format!("{prefix}-{i}");
                artifact("example/test_app.yaml")
                    .replace("namespace: tcs", &format!("namespace: {ns}"))
                    .replace("name: test-app", &format!("name: {name}"))
                    .replace("name: app-deploy", &format!("name: {name}-deploy"))
                    .replace("name: app-service", &format!("name: {name}-svc"))
            })
        })
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// Every reconcile's (start, end) in one replica's log, by App key (`ns/name`).
pub type Spans = BTreeMap<String, Vec<(Timestamp, Timestamp)>>;

/// The spans of every reconcile in a replica's log, from the `reconcile started` and
/// `reconcile ended` lines of the reconcile span; one not ended yet (the replica runs on,
/// or was killed) ends at `Timestamp::MAX`. `strict`: a line without a time stamp or a
/// key, a reconcile started twice or ended unstarted fails the test; otherwise such lines
/// are passed over (a replica killed mid-write).
pub fn reconciles(log: &str, strict: bool) -> Spans {
    let mut open: HashMap<String, Timestamp> = HashMap::new();
    let mut done = Spans::new();
    for line in log.lines() {
        let started = line.contains("reconcile started");
        if !started && !line.contains("reconcile ended") {
            continue;
        }
        let stamp = line
            .split_whitespace()
            .next()
            .and_then(|s| s.parse::<Timestamp>().ok());
        let key = line
            .split("key=")
            .nth(1)
            .and_then(|k| k.split([' ', '}']).next());
        let (Some(stamp), Some(key)) = (stamp, key) else {
            assert!(!strict, "no time stamp or key in {line:?}");
            continue;
        };
        if started {
            let again = open.insert(key.to_string(), stamp).is_some();
            assert!(!(strict && again), "started twice: {line}");
        } else if let Some(start) = open.remove(key) {
            done.entry(key.to_string())
                .or_default()
                .push((start, stamp));
        } else {
            assert!(!strict, "ended unstarted: {line}");
        }
    }
    for (key, start) in open {
        done.entry(key).or_default().push((start, Timestamp::MAX));
    }
    done
}
