//! The pinned kube-controller-manager (a real client-go program, built by testenv's
//! scripts) against the fake: its default controllers make the ReplicaSets and Pods of a
//! Deployment, the Pods of a StatefulSet, a DaemonSet (on a Node) and a Job, and the
//! EndpointSlice of a Service, and its log has no error the fake causes. Garbage
//! collection and namespace deletion are the fake's own (done at once), checked after.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use kubekit_fake::FakeApiServer;
use testenv::eventually;

use common::{bin_dir, kubectl_output};

/// kube-controller-manager, killed when dropped.
struct ControllerManager(Child);

impl Drop for ControllerManager {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts kube-controller-manager on `kubeconfig`, logging into `dir/kcm.log`, with a
/// service-account key and a root CA made by openssl in `dir`.
fn start_controller_manager(kubeconfig: &Path, dir: &Path) -> ControllerManager {
    let openssl = |args: &[&str]| {
        let ok = Command::new("openssl").args(args).current_dir(dir).output();
        assert!(ok.is_ok_and(|o| o.status.success()), "openssl {args:?}");
    };
    openssl(&["genrsa", "-out", "sa.key", "2048"]);
    openssl(&[
        "req", "-x509", "-new", "-key", "sa.key", "-subj", "/CN=ca", "-days", "1", "-out", "ca.crt",
    ]);
    let log = std::fs::File::create(dir.join("kcm.log")).expect("a log file");
    let child = Command::new(bin_dir().join("kube-controller-manager"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args([
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            "0",
            "--leader-elect=false",
        ])
        .args([
            "--service-account-private-key-file",
            "sa.key",
            "--root-ca-file",
            "ca.crt",
        ])
        .args([
            "--service-cluster-ip-range",
            "10.0.0.0/24",
            "--cluster-name",
            "kubekit-fake",
        ])
        .args(["--v", "1"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start kube-controller-manager");
    ControllerManager(child)
}

const WORKLOADS: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default}
spec:
  replicas: 2
  serviceName: db
  podManagementPolicy: Parallel
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: default}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: default}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"#;

/// kube-controller-manager's log lines of errors, but those it logs against the real
/// kube-apiserver too: its consistency check's requeue of a key whose informer has not
/// yet seen the controller's own write (`read version: N is not as new as written
/// version: M`, seen with these workloads on testenv's kube-apiserver 1.37.2), and its
/// note on an empty static manifest.
fn errors(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.starts_with('E'))
        .filter(|l| !l.contains("is not as new as written version"))
        .filter(|l| !l.contains("The manifest file is empty"))
        .collect()
}

#[test]
fn kube_controller_manager_runs_deployments_stateful_sets_daemon_sets_jobs_and_endpoint_slices_on_the_fake()
 {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let server = runtime
        .block_on(FakeApiServer::start())
        .expect("the fake starts");
    let kubeconfig = server.kubeconfig_path().to_path_buf();
    let dir = kubeconfig
        .parent()
        .expect("the fake's directory")
        .join("kcm");
    std::fs::create_dir_all(&dir).expect("a directory");
    let _kcm = start_controller_manager(&kubeconfig, &dir);
    let kubectl = |args: &[&str], stdin: &str| kubectl_output(&kubeconfig, args, stdin);
    let applied = kubectl(&["apply", "-f", "-"], WORKLOADS);
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    let names = |what: &str, selector: &str| {
        let out = kubectl(&["get", what, "-l", selector, "-o", "name"], "");
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    runtime.block_on(eventually(60, "the controllers' objects", || async {
        let made = [
            names("replicasets", "app=web") == 1,
            names("pods", "app=web") == 2,
            names("pods", "app=db") == 2,
            names("pods", "app=agent") == 1,
            names("pods", "batch.kubernetes.io/job-name=once") == 1,
            names("endpointslices", "kubernetes.io/service-name=web") == 1,
        ];
        made.iter().all(|m| *m).then_some(())
    }));
    let log = std::fs::read_to_string(dir.join("kcm.log")).expect("the log");
    assert_eq!(
        errors(&log),
        Vec::<&str>::new(),
        "kube-controller-manager's errors"
    );

    // Deleting the Deployment collects its ReplicaSet and Pods; deleting a namespace, its
    // content.
    let deleted = kubectl(&["delete", "deployment", "web"], "");
    assert!(deleted.status.success());
    runtime.block_on(eventually(
        30,
        "the Deployment's dependents collected",
        || async {
            (names("replicasets", "app=web") == 0 && names("pods", "app=web") == 0).then_some(())
        },
    ));
    assert!(
        kubectl(&["create", "namespace", "doomed"], "")
            .status
            .success()
    );
    assert!(
        kubectl(&["-n", "doomed", "create", "configmap", "c"], "")
            .status
            .success()
    );
    assert!(
        kubectl(&["delete", "namespace", "doomed"], "")
            .status
            .success()
    );
    let gone = kubectl(&["get", "namespace", "doomed"], "");
    assert!(!gone.status.success(), "the namespace is gone");
    runtime.block_on(server.shutdown());
}
