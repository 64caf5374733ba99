//! The pinned kube-controller-manager (a real client-go program, built by testenv's
//! scripts) against the fake: its default controllers make the ReplicaSets and Pods of a
//! Deployment, the Pods of a StatefulSet, a DaemonSet (on a Node) and a Job, the Job of a
//! CronJob at the next minute and its Pod, and the EndpointSlice of a Service, and its log
//! has no error the fake causes. Garbage collection and namespace deletion are the fake's
//! own (done at once) in the first test, kube-controller-manager's in the second
//! (`set_own_garbage_collection(false)`).

mod common;

use std::process::Output;

use kubekit_fake::FakeApiServer;
use testenv::{ControllerManager, eventually};

use common::kubectl_output;

/// The fake (with its own garbage collection or without), kube-controller-manager
/// running against it, and a runtime to wait in.
struct Cluster {
    runtime: tokio::runtime::Runtime,
    server: FakeApiServer,
    kcm: ControllerManager,
}

impl Cluster {
    fn start(own_garbage_collection: bool) -> Self {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        let server = runtime
            .block_on(FakeApiServer::start())
            .expect("the fake starts");
        server.set_own_garbage_collection(own_garbage_collection);
        let kubeconfig = server.kubeconfig_path();
        let dir = kubeconfig
            .parent()
            .expect("the fake's directory")
            .join("kcm");
        let kcm = ControllerManager::start(kubeconfig, &dir).expect("kube-controller-manager");
        Self {
            runtime,
            server,
            kcm,
        }
    }

    fn kubectl(&self, args: &[&str], stdin: &str) -> Output {
        kubectl_output(self.server.kubeconfig_path(), args, stdin)
    }

    /// `kubectl` that must succeed.
    fn run(&self, args: &[&str], stdin: &str) {
        let out = self.kubectl(args, stdin);
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// How many objects `kubectl get <what> -l <selector>` lists.
    fn count(&self, what: &str, selector: &str) -> usize {
        let out = self.kubectl(&["get", what, "-l", selector, "-o", "name"], "");
        String::from_utf8_lossy(&out.stdout).lines().count()
    }

    fn wait(&self, secs: u64, what: &str, done: impl Fn(&Self) -> bool) {
        self.runtime.block_on(eventually(secs, what, || async {
            done(self).then_some(())
        }));
    }

    /// Requires kube-controller-manager's log to have no error the fake causes.
    fn assert_no_errors(&self) {
        assert_eq!(
            self.kcm.errors(),
            Vec::<String>::new(),
            "kube-controller-manager's errors"
        );
    }

    fn finish(self) {
        self.runtime.block_on(self.server.shutdown());
    }
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
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick, namespace: default}
spec:
  schedule: "* * * * *"
  jobTemplate:
    metadata: {labels: {app: tick}}
    spec:
      template:
        metadata: {labels: {app: tick}}
        spec: {restartPolicy: Never, containers: [{name: c, image: busybox}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  selector: {app: web}
  ports: [{port: 80}]
"#;

#[test]
fn kube_controller_manager_runs_deployments_stateful_sets_daemon_sets_jobs_cron_jobs_and_endpoint_slices_on_the_fake()
 {
    let cluster = Cluster::start(true);
    cluster.run(&["apply", "-f", "-"], WORKLOADS);
    cluster.wait(60, "the controllers' objects", |c| {
        [
            c.count("replicasets", "app=web") == 1,
            c.count("pods", "app=web") == 2,
            c.count("pods", "app=db") == 2,
            c.count("pods", "app=agent") == 1,
            c.count("pods", "batch.kubernetes.io/job-name=once") == 1,
            c.count("endpointslices", "kubernetes.io/service-name=web") == 1,
        ]
        .iter()
        .all(|m| *m)
    });
    // The CronJob's first Job comes at the next minute's start.
    cluster.wait(75, "the CronJob's Job and its Pod", |c| {
        c.count("jobs", "app=tick") == 1 && c.count("pods", "app=tick") == 1
    });
    cluster.assert_no_errors();
    // The fake collects the Deployment's dependents and empties the namespace at once
    // (which makes kube-controller-manager's controllers log objects gone under them).
    cluster.run(&["delete", "deployment", "web"], "");
    cluster.wait(30, "the Deployment's dependents collected", |c| {
        c.count("replicasets", "app=web") == 0 && c.count("pods", "app=web") == 0
    });
    cluster.run(&["create", "namespace", "doomed"], "");
    cluster.run(&["-n", "doomed", "create", "configmap", "c"], "");
    cluster.run(&["delete", "namespace", "doomed"], "");
    let gone = cluster.kubectl(&["get", "namespace", "doomed"], "");
    assert!(!gone.status.success(), "the namespace is gone");
    cluster.finish();
}

#[test]
fn kube_controller_manager_collects_garbage_and_deletes_namespaces_when_the_fake_does_not() {
    let cluster = Cluster::start(false);
    cluster.run(&["apply", "-f", "-"], WORKLOADS);
    cluster.wait(60, "the Deployment's ReplicaSet and Pods", |c| {
        c.count("replicasets", "app=web") == 1 && c.count("pods", "app=web") == 2
    });
    // Deleted in the background: its garbage collector deletes the dependents.
    cluster.run(&["delete", "deployment", "web", "--wait=false"], "");
    cluster.wait(60, "the Deployment's dependents collected", |c| {
        c.count("replicasets", "app=web") == 0 && c.count("pods", "app=web") == 0
    });
    // In the foreground: the owner keeps a finalizer until the collector has deleted its
    // dependent (ConfigMaps: no controller of theirs races the collector).
    cluster.run(&["create", "configmap", "parent"], "");
    let parent = cluster.kubectl(
        &[
            "get",
            "configmap",
            "parent",
            "-o",
            "jsonpath={.metadata.uid}",
        ],
        "",
    );
    let uid = String::from_utf8_lossy(&parent.stdout).to_string();
    let child = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: child\n  ownerReferences: \
         [{{apiVersion: v1, kind: ConfigMap, name: parent, uid: {uid}, blockOwnerDeletion: true}}]\n"
    );
    cluster.run(&["apply", "-f", "-"], &child);
    cluster.run(
        &[
            "delete",
            "configmap",
            "parent",
            "--cascade=foreground",
            "--wait=false",
        ],
        "",
    );
    cluster.wait(60, "the owner and its dependent gone", |c| {
        let gone = |name: &str| !c.kubectl(&["get", "configmap", name], "").status.success();
        gone("parent") && gone("child")
    });
    // A namespace stays Terminating until its controller empties and finalizes it.
    cluster.run(&["create", "namespace", "doomed"], "");
    cluster.run(&["-n", "doomed", "create", "configmap", "c"], "");
    cluster.run(&["delete", "namespace", "doomed", "--wait=false"], "");
    let phase = cluster.kubectl(
        &[
            "get",
            "namespace",
            "doomed",
            "-o",
            "jsonpath={.status.phase}",
        ],
        "",
    );
    assert_eq!(String::from_utf8_lossy(&phase.stdout), "Terminating");
    cluster.wait(60, "the namespace emptied and removed", |c| {
        !c.kubectl(&["get", "namespace", "doomed"], "")
            .status
            .success()
    });
    cluster.assert_no_errors();
    cluster.finish();
}
