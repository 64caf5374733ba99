//! The corpus of object shapes (`--shape`, `--corpus`): the objects a real cluster holds
//! besides the fixture's Pods, each written as its users' controllers and kubelets write
//! it, so that a client's memory and time are measured on more than one shape.
//!
//! Every object is the `i`-th of its shape, named and placed by [`Cluster`](super::Cluster);
//! values vary with `i` as names, IPs and hashes do in a cluster (no two objects are
//! equal), and the status is written by a status write after the create, as a kubelet or
//! a controller would, so the server adds managedFields for both. Pods carry no
//! ownerReferences: the garbage collector deletes a Pod whose owner does not exist, and
//! the benchmark makes no ReplicaSets.

use informer_protocol::Kind;
use informer_protocol::widget;
use serde_json::{Value, json};

/// The label (set to `true`) of the Nodes the benchmark makes, by which they are found
/// and deleted.
pub const NODE_LABEL: &str = "bench.kubekit.dev/corpus";

/// A shape of object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// The fixture's Pods (`bench/fixtures/pods.json`), the default.
    Fixture,
    /// Pods with one container, two labels, a short status.
    PodsSmall,
    /// Pods with two containers, six env vars each, ports, probes, the projected
    /// service-account volume, four labels, three annotations, five conditions and
    /// container statuses.
    PodsTypical,
    /// Pods with an app, three sidecars and two init containers, 40 env vars, twelve
    /// annotations (one a 1.5 KB JSON document), statuses with last states and messages.
    PodsLarge,
    /// Deployments of a typical Pod template, paused (the controller writes their
    /// status but makes no ReplicaSets).
    Deployments,
    /// ConfigMaps with a 2 KB configuration file and four short keys.
    ConfigMaps,
    /// Opaque Secrets with a certificate, a key and two short values.
    Secrets,
    /// core/v1 Events about Pods, as a kubelet records them.
    Events,
    /// Nodes with a cloud's labels, capacity, conditions and 30 images in their status.
    Nodes,
    /// The benchmark's custom resource ([`widget::Widget`]).
    Widgets,
}

impl Shape {
    /// The shapes of `--corpus`, in the order they run.
    pub const CORPUS: [Shape; 8] = [
        Shape::PodsSmall,
        Shape::PodsTypical,
        Shape::PodsLarge,
        Shape::Deployments,
        Shape::ConfigMaps,
        Shape::Secrets,
        Shape::Events,
        Shape::Nodes,
    ];

    const ALL: [Shape; 10] = [
        Shape::Fixture,
        Shape::PodsSmall,
        Shape::PodsTypical,
        Shape::PodsLarge,
        Shape::Deployments,
        Shape::ConfigMaps,
        Shape::Secrets,
        Shape::Events,
        Shape::Nodes,
        Shape::Widgets,
    ];

    /// Its name on the command line and in the tables.
    pub fn name(self) -> &'static str {
        match self {
            Shape::Fixture => "fixture",
            Shape::PodsSmall => "pods-small",
            Shape::PodsTypical => "pods-typical",
            Shape::PodsLarge => "pods-large",
            Shape::Deployments => "deployments",
            Shape::ConfigMaps => "configmaps",
            Shape::Secrets => "secrets",
            Shape::Events => "events",
            Shape::Nodes => "nodes",
            Shape::Widgets => "widgets",
        }
    }

    /// The shape named `name`.
    pub fn parse(name: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|shape| shape.name() == name)
            .ok_or_else(|| {
                let known: Vec<_> = Self::ALL.iter().map(|s| s.name()).collect();
                format!("--shape {name:?}: one of {}", known.join(", "))
            })
    }

    /// What the informers cache.
    pub fn kind(self) -> Kind {
        match self {
            Shape::Fixture | Shape::PodsSmall | Shape::PodsTypical | Shape::PodsLarge => Kind::Pods,
            Shape::Deployments => Kind::Deployments,
            Shape::ConfigMaps => Kind::ConfigMaps,
            Shape::Secrets => Kind::Secrets,
            Shape::Events => Kind::Events,
            Shape::Nodes => Kind::Nodes,
            Shape::Widgets => Kind::Widgets,
        }
    }

    /// The name of its `i`-th object.
    pub fn object_name(self, i: usize) -> String {
        match self {
            Shape::Nodes => format!("bench-node-{i:05}"),
            Shape::Events => format!("shop-{}-{:05}.18a{:013x}", i % 50, i, i * 7919),
            _ => format!("{}-{i:05}", self.name()),
        }
    }

    /// The `i`-th object, `namespace/name` (`namespace` empty for Nodes), without a
    /// status; `None` for the fixture, whose Pods come from its file.
    pub fn object(self, i: usize, namespace: &str, name: &str) -> Option<Value> {
        let core = "v1".to_string();
        let (api_version, kind, body) = match self {
            Shape::Fixture => return None,
            Shape::PodsSmall => (core, "Pod", pod_small(i)),
            Shape::PodsTypical => (core, "Pod", pod_typical(i)),
            Shape::PodsLarge => (core, "Pod", pod_large(i)),
            Shape::Deployments => ("apps/v1".into(), "Deployment", deployment(i)),
            Shape::ConfigMaps => (core, "ConfigMap", config_map(i)),
            Shape::Secrets => (core, "Secret", secret(i)),
            Shape::Events => (core, "Event", event(i, namespace)),
            Shape::Nodes => (core, "Node", node(i)),
            Shape::Widgets => (
                format!("{}/{}", widget::GROUP, widget::VERSION),
                "Widget",
                widget_body(i),
            ),
        };
        let mut object = body;
        object["apiVersion"] = json!(api_version);
        object["kind"] = json!(kind);
        let metadata = object["metadata"].as_object_mut()?;
        metadata.insert("name".into(), json!(name));
        if !namespace.is_empty() {
            metadata.insert("namespace".into(), json!(namespace));
        }
        Some(object)
    }

    /// The status the `i`-th object is given after its create, if its shape has one
    /// that its writer (a kubelet, an operator) sets.
    pub fn status(self, i: usize) -> Option<Value> {
        match self {
            Shape::PodsSmall => Some(pod_status(i, &["app"], 2, false)),
            Shape::PodsTypical => Some(pod_status(i, &["app", "sidecar"], 5, false)),
            Shape::PodsLarge => Some(pod_status(
                i,
                &["app", "envoy", "log-shipper", "metrics"],
                5,
                true,
            )),
            Shape::Nodes => Some(node_status(i)),
            Shape::Widgets => Some(widget_status(i)),
            _ => None,
        }
    }
}

/// Labels of the `i`-th workload object: `count` of app, tier, team, version, track,
/// cost-center, in that order.
fn labels(i: usize, count: usize) -> Value {
    let all = [
        ("app", format!("shop-{}", i % 50)),
        ("tier", "backend".to_string()),
        ("team", format!("team-{}", i % 7)),
        ("version", format!("v1.{}.{}", i % 10, i % 4)),
        ("track", "stable".to_string()),
        ("cost-center", format!("cc-{}", 1000 + i % 40)),
    ];
    Value::Object(
        all.into_iter()
            .take(count)
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect(),
    )
}

/// `count` env vars of a container: names, and values as configuration gives them.
fn env(i: usize, prefix: &str, count: usize) -> Vec<Value> {
    (0..count)
        .map(|k| match k % 4 {
            0 => json!({"name": format!("{prefix}_OPTION_{k}"), "value": format!("value-{}-{k}", i % 100)}),
            1 => json!({"name": format!("{prefix}_URL_{k}"), "value": format!("http://shop-{}.bench-{}.svc.cluster.local:8080/api/v{k}", i % 50, i % 10)}),
            2 => json!({"name": format!("{prefix}_POD_{k}"), "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}),
            _ => json!({"name": format!("{prefix}_SECRET_{k}"), "valueFrom": {"secretKeyRef": {"name": format!("shop-{}-credentials", i % 50), "key": format!("key-{k}")}}}),
        })
        .collect()
}

/// A container of the `i`-th Pod: an image, ports, resources, probes, mounts.
fn container(i: usize, name: &str, env_vars: usize, probes: bool) -> Value {
    let mut c = json!({
        "name": name,
        "image": format!("registry.example.com/shop/{name}:v1.{}.{}", i % 10, i % 4),
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": env(i, &name.to_uppercase().replace('-', "_"), env_vars),
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "512Mi"}},
        "volumeMounts": [{"name": format!("kube-api-access-{:05x}", i % 0xfffff), "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    });
    if probes {
        let probe = |path: &str| json!({"httpGet": {"path": path, "port": 8080, "scheme": "HTTP"}, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3});
        c["readinessProbe"] = probe("/readyz");
        c["livenessProbe"] = probe("/healthz");
    }
    c
}

/// The projected volume the ServiceAccount admission plugin adds to a Pod.
fn service_account_volume(i: usize) -> Value {
    json!({
        "name": format!("kube-api-access-{:05x}", i % 0xfffff),
        "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ]},
    })
}

/// What every Pod's spec has beside its containers, as the server defaults it.
fn pod_spec(i: usize, containers: Vec<Value>, volumes: Vec<Value>) -> Value {
    json!({
        "containers": containers,
        "volumes": volumes,
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": format!("shop-{}", i % 50),
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ],
        "priority": 0,
        "enableServiceLinks": true,
        "preemptionPolicy": "PreemptLowerPriority",
    })
}

fn pod_small(i: usize) -> Value {
    let app = json!({
        "name": "app",
        "image": format!("registry.example.com/shop/app:v1.{}.{}", i % 10, i % 4),
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    });
    json!({
        "metadata": {"labels": labels(i, 2)},
        "spec": pod_spec(i, vec![app], Vec::new()),
    })
}

fn pod_typical(i: usize) -> Value {
    json!({
        "metadata": {
            "labels": labels(i, 4),
            "annotations": {
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "kubectl.kubernetes.io/restartedAt": format!("2026-11-{:02}T10:{:02}:00Z", 1 + i % 28, i % 60),
            },
        },
        "spec": pod_spec(i, vec![container(i, "app", 6, true), container(i, "sidecar", 6, true)], vec![service_account_volume(i)]),
    })
}

fn pod_large(i: usize) -> Value {
    let mut annotations = serde_json::Map::new();
    for (k, v) in [
        ("prometheus.io/scrape", "true".to_string()),
        ("prometheus.io/port", "9090".to_string()),
        ("prometheus.io/path", "/metrics".to_string()),
        ("sidecar.istio.io/status", json!({"initContainers": ["istio-init", "istio-validation"], "containers": ["envoy"], "volumes": ["istio-envoy", "istio-data", "istio-podinfo", "istio-token"], "imagePullSecrets": null, "revision": format!("1-2{}-0", i % 3)}).to_string()),
        ("kubectl.kubernetes.io/default-container", "app".to_string()),
        ("kubectl.kubernetes.io/restartedAt", format!("2026-11-{:02}T10:{:02}:00Z", 1 + i % 28, i % 60)),
        ("fluentbit.io/parser", "json".to_string()),
        ("cluster-autoscaler.kubernetes.io/safe-to-evict", "true".to_string()),
        ("checksum/config", format!("{:064x}", (i as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c834))),
        ("checksum/secret", format!("{:064x}", (i as u128 + 1).wrapping_mul(0x6a09_e667_f3bc_c908_b2fb_1366_ea95_7d3e))),
        ("vault.hashicorp.com/agent-inject", "true".to_string()),
        ("app.example.com/config", config_document(i, 1500)),
    ] {
        annotations.insert(k.into(), json!(v));
    }
    let init = |name: &str| {
        let mut c = container(i, name, 4, false);
        c["command"] = json!([
            "/bin/sh",
            "-c",
            format!("/usr/local/bin/{name} --wait --timeout=30s")
        ]);
        c
    };
    let mut volumes = vec![service_account_volume(i)];
    for name in ["istio-envoy", "istio-data", "config", "cache"] {
        volumes.push(json!({"name": name, "emptyDir": {}}));
    }
    let mut spec = pod_spec(
        i,
        vec![
            container(i, "app", 40, true),
            container(i, "envoy", 8, true),
            container(i, "log-shipper", 6, false),
            container(i, "metrics", 4, true),
        ],
        volumes,
    );
    spec["initContainers"] = json!([init("istio-init"), init("migrate")]);
    spec["affinity"] = json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": format!("shop-{}", i % 50)}}, "topologyKey": "kubernetes.io/hostname"}}]}});
    json!({
        "metadata": {"labels": labels(i, 6), "annotations": annotations},
        "spec": spec,
    })
}

/// A uid that differs for every `i` and `salt`.
fn uid(i: usize, salt: u64) -> String {
    let x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ salt.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        x >> 32,
        (x >> 16) & 0xffff,
        x & 0xfff,
        (x >> 20) & 0xfff,
        x.rotate_left(17) & 0xffff_ffff_ffff
    )
}

/// A configuration document of about `bytes` bytes, varying with `i`.
fn config_document(i: usize, bytes: usize) -> String {
    let mut doc = String::from("# generated configuration\n");
    let mut k = 0;
    while doc.len() < bytes {
        doc.push_str(&format!(
            "service.shop-{}.option-{k}: value-{}-{k}\n",
            i % 50,
            (i * 31 + k) % 997
        ));
        k += 1;
    }
    doc
}

/// The status a kubelet writes for a running Pod of `containers`.
fn pod_status(i: usize, containers: &[&str], conditions: usize, restarted: bool) -> Value {
    let time = |minute: usize| format!("2026-12-01T10:{:02}:{:02}Z", minute % 60, i % 60);
    let all_conditions = [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ];
    let statuses: Vec<Value> = containers
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let mut status = json!({
                "name": name, "ready": true, "restartCount": if restarted { 1 + k } else { 0 }, "started": true,
                "state": {"running": {"startedAt": time(5 + k)}},
                "image": format!("registry.example.com/shop/{name}:v1.{}.{}", i % 10, i % 4),
                "imageID": format!("registry.example.com/shop/{name}@sha256:{:064x}", (i as u128 + k as u128 + 7).wrapping_mul(0x2545_f491_4f6c_dd1d_9e37_79b9_7f4a_7c15)),
                "containerID": format!("containerd://{:064x}", (i as u128 * 8 + k as u128 + 1).wrapping_mul(0xd6e8_feb8_6659_fd93_9e37_79b9_7f4a_7c15)),
            });
            if restarted {
                status["lastState"] = json!({"terminated": {
                    "exitCode": 137, "reason": "OOMKilled", "startedAt": time(1), "finishedAt": time(4),
                    "message": format!("container {name} exceeded its memory limit of 512Mi while serving request {} and was killed", i * 13 + k),
                    "containerID": format!("containerd://{:064x}", (i as u128 * 8 + k as u128 + 5).wrapping_mul(0xd6e8_feb8_6659_fd93_9e37_79b9_7f4a_7c15)),
                }});
            }
            status
        })
        .collect();
    let mut status = json!({
        "phase": "Running",
        "conditions": all_conditions.iter().rev().take(conditions).rev().map(|kind| json!({"type": kind, "status": "True", "lastProbeTime": null, "lastTransitionTime": time(2)})).collect::<Vec<_>>(),
        "hostIP": format!("10.0.{}.{}", i / 250 % 250, 1 + i % 250),
        "hostIPs": [{"ip": format!("10.0.{}.{}", i / 250 % 250, 1 + i % 250)}],
        "podIP": format!("10.244.{}.{}", i / 250 % 250, 1 + i % 250),
        "podIPs": [{"ip": format!("10.244.{}.{}", i / 250 % 250, 1 + i % 250)}],
        "startTime": time(1),
        "qosClass": "Burstable",
        "containerStatuses": statuses,
    });
    if restarted {
        status["initContainerStatuses"] = json!(["istio-init", "migrate"].iter().map(|name| json!({
            "name": name, "ready": true, "restartCount": 0, "started": false,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": time(2), "finishedAt": time(3)}},
            "image": format!("registry.example.com/shop/{name}:v1.0.0"),
            "imageID": format!("registry.example.com/shop/{name}@sha256:{:064x}", (i as u128 + 3).wrapping_mul(0x2545_f491_4f6c_dd1d_9e37_79b9_7f4a_7c15)),
        })).collect::<Vec<_>>());
    }
    status
}

fn deployment(i: usize) -> Value {
    let template = pod_typical(i);
    json!({
        "metadata": {"labels": labels(i, 4), "annotations": {"deployment.kubernetes.io/revision": format!("{}", 1 + i % 9)}},
        "spec": {
            "replicas": 3,
            "paused": true,
            "selector": {"matchLabels": {"app": format!("shop-{}", i % 50), "instance": format!("i{i}")}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
            "template": {
                "metadata": {"labels": {"app": format!("shop-{}", i % 50), "instance": format!("i{i}"), "tier": "backend"}, "annotations": template["metadata"]["annotations"]},
                "spec": template["spec"],
            },
        },
    })
}

fn config_map(i: usize) -> Value {
    json!({
        "metadata": {"labels": labels(i, 3)},
        "data": {
            "config.yaml": config_document(i, 2048),
            "LOG_LEVEL": "info",
            "REGION": format!("region-{}", i % 4),
            "FEATURES": "search,checkout,recommendations",
            "TIMEOUT": format!("{}s", 10 + i % 20),
        },
    })
}

fn secret(i: usize) -> Value {
    // k8s-openapi's ByteString serializes as base64, as a Secret's data is written.
    let b64 = |bytes: Vec<u8>| json!(k8s_openapi::ByteString(bytes));
    // Pseudo-random bytes, as a certificate and a key are to a compressor.
    let bytes = |len: usize, salt: u64| -> Vec<u8> {
        let mut x = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    };
    json!({
        "metadata": {"labels": labels(i, 3)},
        "type": "Opaque",
        "data": {
            "tls.crt": b64(bytes(1200, 1)),
            "tls.key": b64(bytes(1190, 2)),
            "username": b64(format!("service-{}", i % 50).into_bytes()),
            "password": b64(bytes(24, 3)),
        },
    })
}

fn event(i: usize, namespace: &str) -> Value {
    let pod = format!("shop-{}-{:010x}-{:05x}", i % 50, i / 50, i % 0xfffff);
    let (reason, message, kind) = match i % 4 {
        0 => (
            "Scheduled",
            format!(
                "Successfully assigned {namespace}/{pod} to bench-node-{:05}",
                i % 500
            ),
            "Normal",
        ),
        1 => (
            "Pulled",
            format!(
                "Container image \"registry.example.com/shop/app:v1.{}.{}\" already present on machine",
                i % 10,
                i % 4
            ),
            "Normal",
        ),
        2 => ("Started", "Started container app".to_string(), "Normal"),
        _ => (
            "BackOff",
            "Back-off restarting failed container app in pod ".to_string() + &pod,
            "Warning",
        ),
    };
    json!({
        "metadata": {},
        "involvedObject": {"kind": "Pod", "namespace": namespace, "name": pod, "uid": uid(i, 0xe), "apiVersion": "v1", "resourceVersion": format!("{}", 100_000 + i), "fieldPath": "spec.containers{app}"},
        "reason": reason,
        "message": message,
        "source": {"component": "kubelet", "host": format!("bench-node-{:05}", i % 500)},
        "firstTimestamp": format!("2026-12-01T10:{:02}:{:02}Z", i / 60 % 60, i % 60),
        "lastTimestamp": format!("2026-12-01T11:{:02}:{:02}Z", i / 60 % 60, i % 60),
        "count": 1 + i % 5,
        "type": kind,
        "reportingComponent": "kubelet",
        "reportingInstance": format!("bench-node-{:05}", i % 500),
    })
}

/// Instance types and zones the Nodes are spread over.
const INSTANCE_TYPES: [&str; 3] = ["m5.xlarge", "m5.2xlarge", "c5.4xlarge"];
const ZONES: [&str; 3] = ["a", "b", "c"];

fn node(i: usize) -> Value {
    let mut node = json!({
        "metadata": {
            "labels": {
                "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
                "kubernetes.io/hostname": format!("bench-node-{i:05}"),
                "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": INSTANCE_TYPES[i % 3],
                "topology.kubernetes.io/region": format!("region-{}", i % 4),
                "topology.kubernetes.io/zone": format!("region-{}{}", i % 4, ZONES[i % 3]),
                "node-role.kubernetes.io/worker": "",
                "pool": format!("pool-{}", i % 6),
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                "csi.volume.kubernetes.io/nodeid": json!({"ebs.csi.aws.com": format!("i-{:017x}", i * 7919)}).to_string(),
            },
        },
        "spec": {
            "podCIDR": format!("10.244.{}.0/24", i % 250),
            "podCIDRs": [format!("10.244.{}.0/24", i % 250)],
            "providerID": format!("aws:///region-{}a/i-{:017x}", i % 4, i * 7919),
        },
    });
    node["metadata"]["labels"][NODE_LABEL] = json!("true");
    node
}

fn node_status(i: usize) -> Value {
    let time = format!("2026-12-01T10:{:02}:{:02}Z", i / 60 % 60, i % 60);
    let condition = |kind: &str, status: &str, reason: &str, message: &str| json!({"type": kind, "status": status, "reason": reason, "message": message, "lastHeartbeatTime": time, "lastTransitionTime": time});
    let resources = json!({"cpu": "4", "ephemeral-storage": "101430960Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": "16095580Ki", "pods": "110"});
    let images: Vec<Value> = (0..30)
        .map(|k| {
            let name = format!("registry.example.com/platform/image-{}", (i + k) % 80);
            json!({"names": [format!("{name}@sha256:{:064x}", ((i + k) as u128 + 11).wrapping_mul(0x2545_f491_4f6c_dd1d_9e37_79b9_7f4a_7c15)), format!("{name}:v{}", k % 7)], "sizeBytes": 10_000_000 + k * 1_234_567})
        })
        .collect();
    json!({
        "capacity": resources,
        "allocatable": resources,
        "conditions": [
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        "addresses": [
            {"type": "InternalIP", "address": format!("10.0.{}.{}", i / 250 % 250, 1 + i % 250)},
            {"type": "Hostname", "address": format!("bench-node-{i:05}")},
            {"type": "InternalDNS", "address": format!("ip-10-0-{}-{}.region-{}.compute.internal", i / 250 % 250, 1 + i % 250, i % 4)},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": format!("{:032x}", (i as u128 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
            "systemUUID": uid(i, 0x5),
            "bootID": uid(i, 0xb),
            "kernelVersion": "6.1.0-28-cloud-amd64",
            "osImage": "Debian GNU/Linux 12 (bookworm)",
            "containerRuntimeVersion": "containerd://1.7.24",
            "kubeletVersion": "v1.37.2",
            "kubeProxyVersion": "v1.37.2",
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
        "images": images,
    })
}

/// The `i`-th Widget without its name: an image, replicas, a command, six env vars, two
/// ports, four settings, three labels and an annotation, as an operator's user writes one.
fn widget_body(i: usize) -> Value {
    json!({
        "metadata": {
            "labels": labels(i, 3),
            "annotations": {"bench.kubekit.dev/owner": format!("owner-{}@example.com", i % 13)},
        },
        "spec": {
            "image": format!("registry.example.com/shop/service-{}:v1.{}.{}", i % 50, i % 10, i % 4),
            "replicas": 1 + i % 5,
            "command": ["/bin/service", "--config=/etc/service/config.yaml", format!("--shard={}", i % 16)],
            "env": (0..6).map(|k| json!({"name": format!("SERVICE_OPTION_{k}"), "value": format!("value-{}-{k}", i % 100)})).collect::<Vec<_>>(),
            "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}, {"name": "metrics", "port": 9090, "protocol": "TCP"}],
            "settings": {"logLevel": "info", "timeout": format!("{}s", 10 + i % 20), "retries": "3", "region": format!("region-{}", i % 4)},
            "paused": false,
        },
    })
}

/// The `i`-th Widget's status: running, with three conditions.
fn widget_status(i: usize) -> Value {
    let condition = |kind: &str, reason: &str| {
        json!({"type": kind, "status": "True", "reason": reason,
            "message": format!("{kind} since the last rollout of generation {}", 1 + i % 3),
            "lastTransitionTime": "2026-12-01T10:00:00Z"})
    };
    json!({
        "phase": "Running", "observedGeneration": 1, "readyReplicas": 1 + i % 5,
        "conditions": [condition("Ready", "AllReplicasReady"), condition("Available", "MinimumReplicasAvailable"), condition("Progressing", "RolloutComplete")],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Event, Node, NodeStatus, Pod, PodStatus, Secret};
    use serde::de::DeserializeOwned;

    /// The `i`-th object of `shape` read as `K`, the fields it writes all known to `K`.
    fn typed<K: DeserializeOwned + serde::Serialize>(shape: Shape, i: usize) -> K {
        let namespace = if shape == Shape::Nodes { "" } else { "bench-3" };
        let object = shape.object(i, namespace, &shape.object_name(i)).unwrap();
        let typed: K = serde_json::from_value(object.clone()).unwrap();
        // Nothing the server would drop as unknown: the typed object says all of it.
        let back = serde_json::to_value(&typed).unwrap();
        assert_eq!(strip_nulls(back), strip_nulls(object), "{}", shape.name());
        typed
    }

    fn strip_nulls(value: Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k, strip_nulls(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.into_iter().map(strip_nulls).collect()),
            other => other,
        }
    }

    #[test]
    fn every_shape_writes_only_fields_its_type_has_and_names_are_parsed_back() {
        for i in [0, 1, 4999, 10_007] {
            let pods: Vec<Pod> = [Shape::PodsSmall, Shape::PodsTypical, Shape::PodsLarge]
                .into_iter()
                .map(|shape| typed(shape, i))
                .collect();
            let containers: Vec<usize> = pods
                .iter()
                .map(|pod| pod.spec.as_ref().unwrap().containers.len())
                .collect();
            assert_eq!(containers, [1, 2, 4]);
            typed::<Deployment>(Shape::Deployments, i);
            typed::<ConfigMap>(Shape::ConfigMaps, i);
            typed::<Secret>(Shape::Secrets, i);
            let event: Event = typed(Shape::Events, i);
            assert_eq!(event.involved_object.namespace.as_deref(), Some("bench-3"));
            let node: Node = typed(Shape::Nodes, i);
            assert_eq!(node.metadata.namespace, None);
        }
        for shape in Shape::ALL {
            assert_eq!(Shape::parse(shape.name()), Ok(shape));
        }
        assert!(Shape::parse("pods").unwrap_err().contains("pods-small"));
    }

    #[test]
    fn statuses_are_what_their_types_read() {
        for shape in [Shape::PodsSmall, Shape::PodsTypical, Shape::PodsLarge] {
            let status: PodStatus = serde_json::from_value(shape.status(7).unwrap()).unwrap();
            let expected = match shape {
                Shape::PodsSmall => 1,
                Shape::PodsTypical => 2,
                _ => 4,
            };
            assert_eq!(status.container_statuses.unwrap().len(), expected);
        }
        let node: NodeStatus = serde_json::from_value(Shape::Nodes.status(7).unwrap()).unwrap();
        assert_eq!(node.images.unwrap().len(), 30);
        assert_eq!(Shape::ConfigMaps.status(7), None);
    }

    #[test]
    fn objects_differ_from_one_another() {
        for shape in Shape::CORPUS {
            let a = shape.object(1, "bench-1", "x").unwrap();
            let b = shape.object(2, "bench-1", "x").unwrap();
            assert_ne!(a, b, "{}", shape.name());
            assert_ne!(shape.object_name(1), shape.object_name(2));
        }
    }
}
