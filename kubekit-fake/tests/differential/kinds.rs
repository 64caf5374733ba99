//! Scenarios of the kinds the real server validates and defaults by themselves: core,
//! storage, networking, discovery, certificates, node, scheduling, flow control,
//! coordination and dynamic resource allocation.

use super::*;

/// Requests to a resource of `group`/`version`: in the target's namespace, or
/// cluster-scoped.
struct Kind<'a> {
    t: &'a Target,
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    namespaced: bool,
}

impl Kind<'_> {
    fn req(&self, r: Request) -> Request {
        let r = r.group_version(self.group, self.version);
        let r = match self.namespaced {
            true => r.namespace(&self.t.ns),
            false => r,
        };
        r.resource(self.plural)
    }

    async fn create(&self, body: Value) -> kubekit::rest::Result<Value> {
        Res::send(self.req(self.t.rest.post()).body(&body)).await
    }

    async fn get(&self, name: &str) -> kubekit::rest::Result<Value> {
        Res::send(self.req(self.t.rest.get()).name(name)).await
    }

    async fn update(&self, name: &str, body: &Value) -> kubekit::rest::Result<Value> {
        Res::send(self.req(self.t.rest.put()).name(name).body(body)).await
    }

    /// A JSON merge patch of `name`, or of its `subresource`.
    async fn merge(
        &self,
        name: &str,
        subresource: Option<&str>,
        body: Value,
    ) -> kubekit::rest::Result<Value> {
        let mut r = self.req(self.t.rest.patch(PatchType::Merge)).name(name);
        if let Some(sub) = subresource {
            r = r.subresource(sub);
        }
        Res::send(r.body(&body)).await
    }

    async fn delete(&self, name: &str) -> kubekit::rest::Result<Value> {
        Res::send(self.req(self.t.rest.delete()).name(name)).await
    }

    /// Creates each `(label, body)` of `cases` and records what the server answered.
    async fn create_each(&self, r: &mut Record, cases: Vec<(&str, Value)>) {
        for (label, body) in cases {
            r.answer(label, self.create(body).await);
        }
    }

    /// Deletes the objects named `names` (cluster-scoped ones a scenario made), whatever
    /// became of them.
    async fn clean_up(&self, names: &[String]) {
        for name in names {
            let _ = self.delete(name).await;
        }
    }
}

/// A namespaced resource of `group`/`version` in `t`'s namespace.
fn namespaced<'a>(
    t: &'a Target,
    group: &'static str,
    version: &'static str,
    plural: &'static str,
) -> Kind<'a> {
    Kind {
        t,
        group,
        version,
        plural,
        namespaced: true,
    }
}

/// A cluster-scoped resource of `group`/`version`.
fn cluster<'a>(
    t: &'a Target,
    group: &'static str,
    version: &'static str,
    plural: &'static str,
) -> Kind<'a> {
    Kind {
        t,
        group,
        version,
        plural,
        namespaced: false,
    }
}

/// The name of a cluster-scoped object of `t`'s scenario: `<ns>-<suffix>`, unique on the
/// shared control plane.
fn unique(t: &Target, suffix: &str) -> String {
    format!("{}-{suffix}", t.ns)
}

/// `base` with the fields of `extra` set over it (one level deep).
fn with(base: &Value, extra: Value) -> Value {
    let mut out = base.clone();
    for (k, v) in extra.as_object().into_iter().flatten() {
        out[k] = v.clone();
    }
    out
}

/// `text` in base64, as `data` of a Secret holds it.
fn b64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test]
async fn config_map_keys_binary_data_and_sizes_are_checked_alike() {
    differential("k-configmaps", async |t: &Target, r: &mut Record| {
        let cms = namespaced(t, "", "v1", "configmaps");
        let cm = |name: &str, data: Value, binary: Value| {
            json!({"metadata": {"name": name}, "data": data, "binaryData": binary})
        };
        cms.create_each(r, vec![
            ("keys with dots, dashes and underscores", cm("good", json!({"a.b": "1", "_x-y": "2", ".hidden": "3"}), json!({"bin": "AAEC"}))),
            ("a key with a space", cm("space", json!({"a b": "1"}), json!(null))),
            ("a key of two dots", cm("dots", json!({"..": "1"}), json!(null))),
            ("a key of one dot", cm("dot", json!(null), json!({".": "AA=="}))),
            ("a key of 254 characters", cm("long", json!({"k".repeat(254): "1"}), json!(null))),
            ("a key in data and binaryData", cm("both", json!({"same": "1"}), json!({"same": "AA=="}))),
            ("a key with a slash", cm("slash", json!({"a/b": "1"}), json!(null))),
            ("data of more than 1 MiB", cm("big", json!({"big": "x".repeat(1024 * 1024 + 1)}), json!(null))),
            ("data of exactly 1 MiB", cm("just", json!({"a": "x".repeat(1024 * 1024 - 4), "b": "1234"}), json!(null))),
        ]).await;
        let just = cms.get("just").await.map(|c| json!(c["data"]["b"]));
        r.answer("the 1 MiB configmap", just);
        let frozen = json!({"metadata": {"name": "frozen"}, "immutable": true, "binaryData": {"b": "AA=="}});
        r.answer("an immutable configmap", cms.create(frozen).await);
        r.answer("its binaryData changed", cms.merge("frozen", None, json!({"binaryData": {"b": "AQ=="}})).await);
        r.answer("data added to it", cms.merge("frozen", None, json!({"data": {"new": "1"}})).await);
        r.answer("its labels changed", cms.merge("frozen", None, json!({"metadata": {"labels": {"a": "b"}}})).await);
        r.answer("immutable set to false", cms.merge("frozen", None, json!({"immutable": false})).await);
        r.answer("immutable removed", cms.merge("frozen", None, json!({"immutable": null})).await);
        r.answer("a mutable one made immutable", cms.merge("good", None, json!({"immutable": true, "data": {"a.b": "9"}})).await);
        r.answer("an immutable configmap deleted", cms.delete("frozen").await);
    })
    .await;
}

#[tokio::test]
async fn secret_types_require_their_keys_alike() {
    differential("k-secret-types", async |t: &Target, r: &mut Record| {
        let secrets = namespaced(t, "", "v1", "secrets");
        let secret = |name: &str, kind: &str, data: Value| {
            json!({"metadata": {"name": name}, "type": kind, "data": data})
        };
        let any = b64("x");
        secrets.create_each(r, vec![
            ("tls without keys", secret("tls0", "kubernetes.io/tls", json!({}))),
            ("tls without its key", secret("tls1", "kubernetes.io/tls", json!({"tls.crt": any}))),
            ("tls with both", secret("tls2", "kubernetes.io/tls", json!({"tls.crt": any, "tls.key": any}))),
            ("dockerconfigjson without its key", secret("dcj0", "kubernetes.io/dockerconfigjson", json!({"config": any}))),
            ("dockerconfigjson cut short", secret("dcj1", "kubernetes.io/dockerconfigjson", json!({".dockerconfigjson": b64("{")}))),
            ("dockerconfigjson of an array", secret("dcj2", "kubernetes.io/dockerconfigjson", json!({".dockerconfigjson": b64("[]")}))),
            ("dockerconfigjson valid", secret("dcj3", "kubernetes.io/dockerconfigjson", json!({".dockerconfigjson": b64(r#"{"auths":{}}"#)}))),
            ("dockercfg without its key", secret("dc0", "kubernetes.io/dockercfg", json!({}))),
            ("dockercfg of a string", secret("dc1", "kubernetes.io/dockercfg", json!({".dockercfg": b64("\"s\"")}))),
            ("basic-auth without keys", secret("ba0", "kubernetes.io/basic-auth", json!({}))),
            ("basic-auth with a password only", secret("ba1", "kubernetes.io/basic-auth", json!({"password": ""}))),
            ("ssh-auth with an empty key", secret("ssh0", "kubernetes.io/ssh-auth", json!({"ssh-privatekey": ""}))),
            ("ssh-auth with a key", secret("ssh1", "kubernetes.io/ssh-auth", json!({"ssh-privatekey": any}))),
            ("a token without its account", secret("sat0", "kubernetes.io/service-account-token", json!({}))),
            ("a bootstrap token", secret("bootstrap-token-abcdef", "bootstrap.kubernetes.io/token", json!({"token-id": b64("abcdef")}))),
            ("a type of one's own", secret("own", "example.com/thing", json!({"a": any}))),
            ("a type with a space", secret("spaced", "my type", json!({}))),
        ]).await;
        r.answer("tls with both re-typed to basic-auth", secrets.merge("tls2", None, json!({"type": "kubernetes.io/basic-auth"})).await);
        r.answer("tls with its key removed", secrets.merge("tls2", None, json!({"data": {"tls.key": null}})).await);
    })
    .await;
}

#[tokio::test]
async fn secret_string_data_merges_into_data_on_every_write_alike() {
    differential("k-secret-data", async |t: &Target, r: &mut Record| {
        let secrets = namespaced(t, "", "v1", "secrets");
        let created = json!({"metadata": {"name": "s"}, "data": {"user": b64("root"), "pass": b64("old")},
            "stringData": {"pass": "new", "host": "db"}});
        r.answer("stringData over data", secrets.create(created).await);
        r.answer("stringData in a merge patch", secrets.merge("s", None, json!({"stringData": {"port": "5432"}})).await);
        let mut current = secrets.get("s").await.expect("s");
        current["stringData"] = json!({"user": "admin"});
        current["type"] = Value::Null;
        r.answer("stringData in an update without a type", secrets.update("s", &current).await);
        r.answer("a stringData key with a space", secrets.merge("s", None, json!({"stringData": {"a b": "1"}})).await);
        r.answer("a data key of two dots", secrets.merge("s", None, json!({"data": {"..": b64("1")}})).await);
        let big = json!({"metadata": {"name": "big"}, "stringData": {"a": "x".repeat(1024 * 1024 + 1)}});
        r.answer("more than 1 MiB", secrets.create(big).await);
        let typed = json!({"metadata": {"name": "typed"}, "type": "kubernetes.io/basic-auth", "stringData": {"username": "u"}});
        r.answer("basic-auth from stringData", secrets.create(typed).await);
        let empty = json!({"metadata": {"name": "empty"}, "stringData": {}});
        r.answer("an empty stringData", secrets.create(empty).await);
        r.answer("immutable with stringData", secrets.merge("s", None, json!({"immutable": true, "stringData": {"late": "1"}})).await);
        r.answer("stringData into an immutable secret", secrets.merge("s", None, json!({"stringData": {"later": "1"}})).await);
    })
    .await;
}

/// `v` with the random suffix of the token volume's name (`kube-api-access-<5>`) masked.
fn token_volume_masked(v: Value) -> Value {
    let name = regex::Regex::new("kube-api-access-[a-z0-9]{5}").expect("a regex");
    let text = name
        .replace_all(&v.to_string(), "kube-api-access-<random>")
        .into_owned();
    serde_json::from_str(&text).unwrap_or(v)
}

#[tokio::test]
async fn service_accounts_and_the_pods_that_name_them_are_admitted_alike() {
    differential("k-serviceaccounts", async |t: &Target, r: &mut Record| {
        let accounts = namespaced(t, "", "v1", "serviceaccounts");
        let robot = json!({"metadata": {"name": "robot"}, "automountServiceAccountToken": false,
            "secrets": [{"name": "robot-token"}], "imagePullSecrets": [{"name": "registry"}]});
        r.answer("an account with secrets and pull secrets", accounts.create(robot).await);
        r.answer("an account with a bad name", accounts.create(json!({"metadata": {"name": "Robot_1"}})).await);
        r.answer("its pull secrets changed", accounts.merge("robot", None, json!({"imagePullSecrets": [{"name": "other"}, {}]})).await);
        let pods = namespaced(t, "", "v1", "pods");
        let pod = |name: &str, spec: Value| {
            json!({"metadata": {"name": name},
                "spec": with(&json!({"containers": [{"name": "c", "image": "nginx"}]}), spec)})
        };
        let shown = |p: Value| token_volume_masked(json!({"serviceAccountName": p["spec"]["serviceAccountName"],
            "automount": p["spec"]["automountServiceAccountToken"], "volumes": p["spec"]["volumes"],
            "mounts": p["spec"]["containers"][0]["volumeMounts"], "pullSecrets": p["spec"]["imagePullSecrets"]}));
        let created = pods.create(pod("robot", json!({"serviceAccountName": "robot"}))).await;
        r.answer("a pod of an account that mounts no token", created.map(shown));
        let created = pods.create(pod("ghost", json!({"serviceAccountName": "ghost"}))).await;
        r.answer("a pod of a missing account", created);
        let created = pods.create(pod("own", json!({"serviceAccountName": "robot", "automountServiceAccountToken": true}))).await;
        r.answer("a pod that mounts the token itself", created.map(shown));
        let created = pods.create(pod("old", json!({"serviceAccount": "robot"}))).await;
        r.answer("a pod naming the account the old way", created.map(shown));
        let created = pods.create(pod("clash", json!({"serviceAccount": "robot", "serviceAccountName": "other"}))).await;
        r.answer("a pod naming two accounts", created);
    })
    .await;
}

#[tokio::test]
async fn endpoints_addresses_and_ports_are_checked_alike() {
    differential("k-endpoints", async |t: &Target, r: &mut Record| {
        let endpoints = namespaced(t, "", "v1", "endpoints");
        let subset = |addresses: Value, ports: Value| json!({"addresses": addresses, "ports": ports});
        let eps = |name: &str, subsets: Value| json!({"metadata": {"name": name}, "subsets": subsets});
        let ip = |ip: &str| json!([{"ip": ip}]);
        let http = json!([{"port": 80}]);
        endpoints.create_each(r, vec![
            ("addresses and named ports", eps("good", json!([{
                "addresses": [{"ip": "10.1.0.1", "hostname": "web-0", "nodeName": "node-1",
                    "targetRef": {"kind": "Pod", "name": "web-0", "namespace": t.ns}}],
                "notReadyAddresses": [{"ip": "10.1.0.2"}],
                "ports": [{"name": "http", "port": 80}, {"name": "dns", "port": 53, "protocol": "UDP", "appProtocol": "dns"}]}]))),
            ("no subsets", eps("empty", json!([]))),
            ("an address that is no IP", eps("not-ip", json!([subset(ip("10.1.0"), http.clone())]))),
            ("a loopback address", eps("loopback", json!([subset(ip("127.0.0.1"), http.clone())]))),
            ("a link-local address", eps("link-local", json!([subset(ip("169.254.1.1"), http.clone())]))),
            ("a link-local multicast address", eps("multicast", json!([subset(ip("224.0.0.1"), http.clone())]))),
            ("a subset without addresses", eps("no-addresses", json!([{"ports": http.clone()}]))),
            ("a port of 0", eps("port-zero", json!([subset(ip("10.1.0.1"), json!([{"port": 0}]))]))),
            ("two ports without names", eps("unnamed", json!([subset(ip("10.1.0.1"), json!([{"port": 80}, {"port": 81}]))]))),
            ("two ports of one name", eps("same-name", json!([subset(ip("10.1.0.1"), json!([{"name": "a", "port": 80}, {"name": "a", "port": 81}]))]))),
            ("a port of an unknown protocol", eps("protocol", json!([subset(ip("10.1.0.1"), json!([{"port": 80, "protocol": "ICMP"}]))]))),
            ("a bad hostname", eps("hostname", json!([subset(json!([{"ip": "10.1.0.1", "hostname": "Web_0"}]), http.clone())]))),
            ("a bad node name", eps("node-name", json!([subset(json!([{"ip": "10.1.0.1", "nodeName": "Node_1"}]), http.clone())]))),
            ("a port name in capitals", eps("port-name", json!([subset(ip("10.1.0.1"), json!([{"name": "HTTP", "port": 80}]))]))),
        ]).await;
        r.answer("a loopback address patched in", endpoints.merge("good", None, json!({"subsets": [subset(ip("127.0.0.2"), http.clone())]})).await);
    })
    .await;
}

#[tokio::test]
async fn endpoint_slices_are_defaulted_and_checked_alike() {
    differential("k-endpointslices", async |t: &Target, r: &mut Record| {
        let slices = namespaced(t, "discovery.k8s.io", "v1", "endpointslices");
        let slice = |name: &str, kind: Value, endpoints: Value, ports: Value| {
            json!({"metadata": {"name": name, "labels": {"kubernetes.io/service-name": "web"}},
                "addressType": kind, "endpoints": endpoints, "ports": ports})
        };
        let one = |address: &str| json!([{"addresses": [address]}]);
        slices.create_each(r, vec![
            ("an IPv4 slice with conditions", slice("v4", json!("IPv4"), json!([
                {"addresses": ["10.1.0.1"], "conditions": {"ready": true, "serving": true, "terminating": false},
                 "hostname": "web-0", "nodeName": "node-1", "zone": "a", "hints": {"forZones": [{"name": "a"}]},
                 "targetRef": {"kind": "Pod", "name": "web-0"}},
                {"addresses": ["10.1.0.2"]}]), json!([{"port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}]))),
            ("an IPv6 slice", slice("v6", json!("IPv6"), one("fd00::1"), json!([{"name": "http", "port": 8080, "appProtocol": "http"}]))),
            ("an FQDN slice", slice("fqdn", json!("FQDN"), one("db.example.com"), json!([{"port": 5432}]))),
            ("no address type", slice("none", json!(null), one("10.1.0.1"), json!([]))),
            ("an unknown address type", slice("v5", json!("IPv5"), one("10.1.0.1"), json!([]))),
            ("an endpoint without addresses", slice("empty", json!("IPv4"), json!([{"addresses": []}]), json!([]))),
            ("an IPv6 address in an IPv4 slice", slice("mixed", json!("IPv4"), one("fd00::1"), json!([]))),
            ("a bad FQDN", slice("bad-fqdn", json!("FQDN"), one("Db_1"), json!([]))),
            ("a port name in capitals", slice("port-name", json!("IPv4"), one("10.1.0.1"), json!([{"name": "HTTP", "port": 80}]))),
            ("two ports of one name", slice("same-port", json!("IPv4"), one("10.1.0.1"), json!([{"name": "a", "port": 80}, {"name": "a", "port": 81}]))),
            ("a port of an unknown protocol", slice("protocol", json!("IPv4"), one("10.1.0.1"), json!([{"port": 80, "protocol": "ICMP"}]))),
            ("a bad node name", slice("node", json!("IPv4"), json!([{"addresses": ["10.1.0.1"], "nodeName": "Node_1"}]), json!([]))),
            ("a bad hostname", slice("host", json!("IPv4"), json!([{"addresses": ["10.1.0.1"], "hostname": "Web.0"}]), json!([]))),
        ]).await;
        r.answer("the address type changed", slices.merge("v4", None, json!({"addressType": "IPv6"})).await);
        r.answer("the endpoints changed", slices.merge("v4", None, json!({"endpoints": [{"addresses": ["10.1.0.9"]}]})).await);
    })
    .await;
}

#[tokio::test]
async fn replication_controllers_are_defaulted_from_their_template_alike() {
    differential("k-rcs", async |t: &Target, r: &mut Record| {
        let rcs = namespaced(t, "", "v1", "replicationcontrollers");
        let template = |labels: Value, restart: &str| json!({"metadata": {"labels": labels},
            "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "nginx"}]}});
        let rc = |name: &str, spec: Value| json!({"metadata": {"name": name}, "spec": spec});
        let web = json!({"app": "web"});
        rcs.create_each(r, vec![
            ("selector and labels from the template", rc("plain", json!({"replicas": 0, "template": template(web.clone(), "Always")}))),
            ("an empty selector", rc("empty", json!({"replicas": 0, "selector": {}, "template": template(web.clone(), "Always")}))),
            ("a selector the template lacks", rc("mismatch", json!({"replicas": 0, "selector": {"app": "db"}, "template": template(web.clone(), "Always")}))),
            ("no template", rc("no-template", json!({"replicas": 0, "selector": web.clone()}))),
            ("negative replicas", rc("negative", json!({"replicas": -1, "template": template(web.clone(), "Always")}))),
            ("pods that restart never", rc("never", json!({"replicas": 0, "template": template(web.clone(), "Never")}))),
            ("a template without labels", rc("unlabelled", json!({"replicas": 0, "template": template(json!(null), "Always")}))),
            ("negative minReadySeconds", rc("ready", json!({"replicas": 0, "minReadySeconds": -1, "template": template(web.clone(), "Always")}))),
        ]).await;
        let relabelled = json!({"spec": {"selector": {"app": "web", "tier": "x"}}});
        r.answer("a selector its template lacks patched in", rcs.merge("plain", None, relabelled).await);
        let both = json!({"spec": {"selector": {"app": "web2"}, "template": {"metadata": {"labels": {"app": "web2"}}}}});
        let changed = rcs.merge("plain", None, both).await;
        r.answer("selector and template changed together", changed.map(|c| json!([c["metadata"]["labels"], c["spec"]["selector"]])));
    })
    .await;
}

#[tokio::test]
async fn core_events_are_checked_as_their_version_requires_alike() {
    differential("k-core-events", async |t: &Target, r: &mut Record| {
        let events = namespaced(t, "", "v1", "events");
        let event = |name: &str, extra: Value| with(&json!({"metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": t.ns},
            "reason": "Started", "message": "started", "type": "Normal"}), extra);
        let timed = json!({"eventTime": "2026-01-01T00:00:00.000000Z", "reportingComponent": "kubelet",
            "reportingInstance": "node-1", "action": "Start"});
        events.create_each(r, vec![
            ("an old-style event", event("old", json!({}))),
            ("an old-style event of another namespace's object", event("elsewhere", json!({"involvedObject": {"kind": "Pod", "name": "p", "namespace": "other"}}))),
            ("an old-style event of a cluster object", event("cluster", json!({"involvedObject": {"kind": "Node", "name": "n"}}))),
            ("a new-style event", event("new", timed.clone())),
            ("a new-style event without a reporter", event("no-reporter", with(&timed, json!({"reportingComponent": null})))),
            ("a new-style event of a bad reporter", event("bad-reporter", with(&timed, json!({"reportingComponent": "a b"})))),
            ("a new-style event without an instance", event("no-instance", with(&timed, json!({"reportingInstance": null})))),
            ("a new-style event without an action", event("no-action", with(&timed, json!({"action": null})))),
            ("a new-style event with a long action", event("long-action", with(&timed, json!({"action": "a".repeat(129)})))),
            ("a new-style event without a reason", event("no-reason", with(&timed, json!({"reason": null})))),
            ("a new-style event with a long message", event("long-message", with(&timed, json!({"message": "m".repeat(1025)})))),
            ("a new-style event of a cluster object", event("new-cluster", with(&timed, json!({"involvedObject": {"kind": "Node", "name": "n"}})))),
            ("an event of an odd type", event("odd", json!({"type": "Odd"}))),
        ]).await;
        r.answer("an old-style event's message changed", events.merge("old", None, json!({"message": "changed", "count": 2})).await);
    })
    .await;
}

#[tokio::test]
async fn events_k8s_io_events_require_their_fields_alike() {
    differential("k-new-events", async |t: &Target, r: &mut Record| {
        let events = namespaced(t, "events.k8s.io", "v1", "events");
        let valid = json!({"eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "example.com/ctl",
            "reportingInstance": "ctl-1", "action": "Sync", "reason": "Synced", "type": "Normal", "note": "synced",
            "regarding": {"kind": "Pod", "name": "p", "namespace": t.ns}});
        let event = |name: &str, extra: Value| with(&with(&valid, json!({"metadata": {"name": name}})), extra);
        events.create_each(r, vec![
            ("a valid event", event("valid", json!({}))),
            ("no eventTime", event("no-time", json!({"eventTime": null}))),
            ("no reportingController", event("no-controller", json!({"reportingController": null}))),
            ("no reportingInstance", event("no-instance", json!({"reportingInstance": null}))),
            ("no action", event("no-action", json!({"action": null}))),
            ("no reason", event("no-reason", json!({"reason": null}))),
            ("an odd type", event("odd", json!({"type": "Odd"}))),
            ("no type", event("no-type", json!({"type": null}))),
            ("a note of 1025 characters", event("long-note", json!({"note": "n".repeat(1025)}))),
            ("a series of one", event("series-one", json!({"series": {"count": 1, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}}))),
            ("a series without its time", event("series-time", json!({"series": {"count": 2}}))),
            ("deprecated fields set", event("deprecated", json!({"deprecatedCount": 3, "deprecatedSource": {"component": "x"}}))),
            ("a bad name", event("Bad_Name", json!({}))),
        ]).await;
        r.answer("its note changed", events.merge("valid", None, json!({"note": "changed"})).await);
        r.answer("its series added", events.merge("valid", None, json!({"series": {"count": 2, "lastObservedTime": "2026-01-01T00:02:00.000000Z"}})).await);
        r.answer("its reason changed", events.merge("valid", None, json!({"reason": "Other"})).await);
    })
    .await;
}

#[tokio::test]
async fn persistent_volumes_are_defaulted_and_checked_alike() {
    differential("k-pvs", async |t: &Target, r: &mut Record| {
        let pvs = cluster(t, "", "v1", "persistentvolumes");
        let names: Vec<String> = (0..14).map(|i| unique(t, &format!("pv{i}"))).collect();
        let pv = |i: usize, spec: Value| json!({"metadata": {"name": names[i]}, "spec": spec});
        let host = json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}});
        pvs.create_each(r, vec![
            ("a host path volume", pv(0, host.clone())),
            ("no capacity", pv(1, with(&host, json!({"capacity": null})))),
            ("no access modes", pv(2, with(&host, json!({"accessModes": null})))),
            ("an unknown access mode", pv(3, with(&host, json!({"accessModes": ["ReadWriteSometimes"]})))),
            ("no volume source", pv(4, with(&host, json!({"hostPath": null})))),
            ("two volume sources", pv(5, with(&host, json!({"nfs": {"server": "nfs.example.com", "path": "/x"}})))),
            ("a relative host path", pv(6, with(&host, json!({"hostPath": {"path": "data/../x"}})))),
            ("an unknown reclaim policy", pv(7, with(&host, json!({"persistentVolumeReclaimPolicy": "Keep"})))),
            ("a capacity of another resource", pv(8, with(&host, json!({"capacity": {"cpu": "1"}})))),
            ("a local volume without node affinity", pv(9, with(&host, json!({"hostPath": null, "local": {"path": "/mnt/disk"}})))),
            ("a block volume of a class", pv(10, with(&host, json!({"volumeMode": "Block", "storageClassName": "fast",
                "mountOptions": ["ro"], "persistentVolumeReclaimPolicy": "Delete"})))),
            ("an unknown volume mode", pv(11, with(&host, json!({"volumeMode": "Tape"})))),
            ("a CSI volume", pv(12, with(&host, json!({"hostPath": null, "csi": {"driver": "csi.example.com", "volumeHandle": "vol-1"}})))),
            ("a CSI volume without a handle", pv(13, with(&host, json!({"hostPath": null, "csi": {"driver": "csi.example.com"}})))),
        ]).await;
        // The real server's message shows a Go diff of the sources.
        let moved = pvs.merge(&names[0], None, json!({"spec": {"hostPath": {"path": "/other"}}})).await;
        r.push("its source changed", code_and_fields(moved));
        r.answer("its capacity changed", pvs.merge(&names[0], None, json!({"spec": {"capacity": {"storage": "2Gi"}}})).await.map(|p| p["spec"].clone()));
        pvs.clean_up(&names).await;
    })
    .await;
}

#[tokio::test]
async fn persistent_volume_claims_are_defaulted_and_checked_alike() {
    differential("k-pvcs", async |t: &Target, r: &mut Record| {
        let claims = namespaced(t, "", "v1", "persistentvolumeclaims");
        let spec = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "manual"});
        let claim = |name: &str, extra: Value| json!({"metadata": {"name": name}, "spec": with(&spec, extra)});
        claims.create_each(r, vec![
            ("a claim", claim("data", json!({}))),
            ("no access modes", claim("no-modes", json!({"accessModes": null}))),
            ("an unknown access mode", claim("odd-mode", json!({"accessModes": ["ReadManyTimes"]}))),
            ("no storage request", claim("no-request", json!({"resources": {"requests": {}}}))),
            ("a negative request", claim("negative", json!({"resources": {"requests": {"storage": "-1Gi"}}}))),
            ("a limit below the request", claim("limited", json!({"resources": {"requests": {"storage": "2Gi"}, "limits": {"storage": "1Gi"}}}))),
            ("a block claim with a selector", claim("block", json!({"volumeMode": "Block", "selector": {"matchLabels": {"disk": "ssd"}}}))),
            ("an unknown volume mode", claim("tape", json!({"volumeMode": "Tape"}))),
            ("a data source of an unknown kind", claim("source", json!({"dataSource": {"kind": "Widget", "name": "w"}}))),
            ("a data source without a name", claim("unnamed-source", json!({"dataSource": {"kind": "PersistentVolumeClaim"}}))),
            ("a claim cloned from another", claim("clone", json!({"dataSource": {"kind": "PersistentVolumeClaim", "name": "data"}}))),
            ("a read-write-once-pod claim with another mode", claim("rwop", json!({"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"]}))),
            ("a bad class name", claim("class", json!({"storageClassName": "Fast_1"}))),
        ]).await;
        r.push("its class changed", code_and_fields(claims.merge("data", None, json!({"spec": {"storageClassName": "other"}})).await));
        r.push("an unbound claim resized", code_and_fields(claims.merge("data", None, json!({"spec": {"resources": {"requests": {"storage": "2Gi"}}}})).await));
        r.answer("its labels changed", claims.merge("data", None, json!({"metadata": {"labels": {"a": "b"}}})).await.map(|c| c["metadata"]["labels"].clone()));
    })
    .await;
}

#[tokio::test]
async fn nodes_are_checked_and_tainted_when_created_alike() {
    differential("k-nodes", async |t: &Target, r: &mut Record| {
        let nodes = cluster(t, "", "v1", "nodes");
        let names: Vec<String> = (0..10).map(|i| unique(t, &format!("n{i}"))).collect();
        let node = |i: usize, spec: Value| json!({"metadata": {"name": names[i], "labels": {"kubekit.dev/test": "yes"}}, "spec": spec});
        let shown = |n: Value| json!({"spec": n["spec"], "status": n["status"], "labels": n["metadata"]["labels"]});
        let created = nodes.create(node(0, json!({"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24", "fd00:1::/64"],
            "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}], "providerID": "kwok://n0"}))).await;
        r.answer("a node with CIDRs and a taint", created.map(shown));
        let created = nodes.create(node(1, json!({}))).await;
        r.answer("a bare node", created.map(shown));
        nodes.create_each(r, vec![
            ("a bad pod CIDR", node(2, json!({"podCIDR": "10.244.1.0", "podCIDRs": ["10.244.1.0"]}))),
            ("two pod CIDRs of one family", node(3, json!({"podCIDRs": ["10.244.1.0/24", "10.244.2.0/24"]}))),
            ("a pod CIDR unlike the first of podCIDRs", node(4, json!({"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.2.0/24"]}))),
            ("a taint of an unknown effect", node(5, json!({"taints": [{"key": "a", "effect": "Sometimes"}]}))),
            ("a taint without a key", node(6, json!({"taints": [{"effect": "NoSchedule"}]}))),
            ("a taint repeated", node(7, json!({"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "value": "b", "effect": "NoSchedule"}]}))),
            ("a taint of a bad value", node(8, json!({"taints": [{"key": "a", "value": "b c", "effect": "NoExecute"}]}))),
            ("a bad node name", json!({"metadata": {"name": format!("{}_N", t.ns)}})),
        ]).await;
        let cordoned = nodes.merge(&names[1], None, json!({"spec": {"unschedulable": true}})).await;
        r.answer("a node cordoned", cordoned.map(|n| n["spec"]["unschedulable"].clone()));
        let recut = nodes.merge(&names[0], None, json!({"spec": {"podCIDR": "10.244.9.0/24", "podCIDRs": ["10.244.9.0/24"]}})).await;
        r.answer("a node's pod CIDR changed", recut);
        nodes.clean_up(&names).await;
    })
    .await;
}

#[tokio::test]
async fn storage_classes_are_defaulted_and_keep_their_parameters_alike() {
    differential("k-storageclasses", async |t: &Target, r: &mut Record| {
        let classes = cluster(t, "storage.k8s.io", "v1", "storageclasses");
        let names: Vec<String> = (0..9).map(|i| unique(t, &format!("sc{i}"))).collect();
        let class = |i: usize, extra: Value| with(&json!({"metadata": {"name": names[i]}, "provisioner": "csi.example.com",
            "parameters": {"type": "ssd"}}), extra);
        let many: serde_json::Map<String, Value> = (0..513).map(|i| (format!("p{i}"), json!("v"))).collect();
        classes.create_each(r, vec![
            ("a class", class(0, json!({}))),
            ("no provisioner", class(1, json!({"provisioner": null}))),
            ("a provisioner with a space", class(2, json!({"provisioner": "csi example"}))),
            ("a class that recycles", class(3, json!({"reclaimPolicy": "Recycle"}))),
            ("an unknown binding mode", class(4, json!({"volumeBindingMode": "Later"}))),
            ("a class that waits, retains and expands", class(5, json!({"reclaimPolicy": "Retain",
                "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": true, "mountOptions": ["discard"],
                "allowedTopologies": [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["a"]}]}]}))),
            ("a topology term without values", class(6, json!({"allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": []}]}]}))),
            ("too many parameters", class(7, json!({"parameters": many}))),
            ("a parameter of an empty name", class(8, json!({"parameters": {"": "v"}}))),
        ]).await;
        r.answer("its parameters changed", classes.merge(&names[0], None, json!({"parameters": {"type": "hdd"}})).await);
        r.answer("its provisioner changed", classes.merge(&names[0], None, json!({"provisioner": "other.example.com"})).await);
        r.answer("its reclaim policy changed", classes.merge(&names[0], None, json!({"reclaimPolicy": "Retain"})).await);
        r.answer("its binding mode changed", classes.merge(&names[0], None, json!({"volumeBindingMode": "WaitForFirstConsumer"})).await);
        r.answer("expansion allowed", classes.merge(&names[0], None, json!({"allowVolumeExpansion": true, "mountOptions": ["ro"]})).await);
        classes.clean_up(&names).await;
    })
    .await;
}

#[tokio::test]
async fn csi_drivers_are_defaulted_and_checked_alike() {
    differential("k-csidrivers", async |t: &Target, r: &mut Record| {
        let drivers = cluster(t, "storage.k8s.io", "v1", "csidrivers");
        let names: Vec<String> = (0..8).map(|i| format!("d{i}.{}.csi.example.com", t.ns)).collect();
        let driver = |i: usize, spec: Value| json!({"metadata": {"name": names[i]}, "spec": spec});
        drivers.create_each(r, vec![
            ("a driver with no spec", driver(0, json!({}))),
            ("a driver of ephemeral volumes", driver(1, json!({"attachRequired": false, "podInfoOnMount": true,
                "volumeLifecycleModes": ["Ephemeral", "Persistent"], "fsGroupPolicy": "File", "storageCapacity": true,
                "tokenRequests": [{"audience": "vault", "expirationSeconds": 3600}], "requiresRepublish": true, "seLinuxMount": true}))),
            ("an unknown lifecycle mode", driver(2, json!({"volumeLifecycleModes": ["Forever"]}))),
            ("an unknown fsGroup policy", driver(3, json!({"fsGroupPolicy": "Sometimes"}))),
            ("a token request too short", driver(4, json!({"tokenRequests": [{"audience": "a", "expirationSeconds": 60}]}))),
            ("a token audience twice", driver(5, json!({"tokenRequests": [{"audience": "a"}, {"audience": "a"}]}))),
            ("a name too long", json!({"metadata": {"name": format!("{}.{}", "d".repeat(64), t.ns)}, "spec": {}})),
            ("an update period below 10 seconds", driver(6, json!({"nodeAllocatableUpdatePeriodSeconds": 5}))),
        ]).await;
        r.answer("attachRequired changed", drivers.merge(&names[0], None, json!({"spec": {"attachRequired": false}})).await);
        r.answer("podInfoOnMount changed", drivers.merge(&names[0], None, json!({"spec": {"podInfoOnMount": true}})).await);
        r.answer("storageCapacity changed", drivers.merge(&names[0], None, json!({"spec": {"storageCapacity": true}})).await.map(|d| d["spec"].clone()));
        r.answer("lifecycle modes changed", drivers.merge(&names[0], None, json!({"spec": {"volumeLifecycleModes": ["Ephemeral"]}})).await);
        drivers.clean_up(&names).await;
    })
    .await;
}

#[tokio::test]
async fn volume_attachments_are_checked_and_keep_their_spec_alike() {
    differential("k-attachments", async |t: &Target, r: &mut Record| {
        let attachments = cluster(t, "storage.k8s.io", "v1", "volumeattachments");
        let names: Vec<String> = (0..7).map(|i| unique(t, &format!("va{i}"))).collect();
        let attachment = |i: usize, spec: Value| json!({"metadata": {"name": names[i]}, "spec": spec});
        let spec = json!({"attacher": "csi.example.com", "nodeName": "node-1", "source": {"persistentVolumeName": "pv-1"}});
        attachments.create_each(r, vec![
            ("an attachment", attachment(0, spec.clone())),
            ("no attacher", attachment(1, with(&spec, json!({"attacher": null})))),
            ("no node", attachment(2, with(&spec, json!({"nodeName": null})))),
            ("no source", attachment(3, with(&spec, json!({"source": {}})))),
            ("both sources", attachment(4, with(&spec, json!({"source": {"persistentVolumeName": "pv-1",
                "inlineVolumeSpec": {"csi": {"driver": "csi.example.com", "volumeHandle": "h"}}}})))),
            ("a bad attacher", attachment(5, with(&spec, json!({"attacher": "Bad Attacher"})))),
            ("a bad node name", attachment(6, with(&spec, json!({"nodeName": "Node_1"})))),
        ]).await;
        r.answer("its node changed", attachments.merge(&names[0], None, json!({"spec": {"nodeName": "node-2"}})).await);
        let attached = json!({"status": {"attached": true, "attachmentMetadata": {"device": "/dev/sdb"}}});
        r.answer("attached through status", attachments.merge(&names[0], Some("status"), attached).await);
        let failed = json!({"status": {"attachError": {"message": "no such disk", "time": "2026-01-01T00:00:00Z", "errorCode": 5}}});
        r.answer("an attach error", attachments.merge(&names[0], Some("status"), failed).await);
        attachments.clean_up(&names).await;
    })
    .await;
}

#[tokio::test]
async fn csi_storage_capacities_are_checked_alike() {
    differential("k-capacities", async |t: &Target, r: &mut Record| {
        let capacities = namespaced(t, "storage.k8s.io", "v1", "csistoragecapacities");
        let capacity = |name: &str, extra: Value| with(&json!({"metadata": {"name": name}, "storageClassName": "fast",
            "capacity": "10Gi", "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": "a"}}}), extra);
        capacities.create_each(r, vec![
            ("a capacity", capacity("a", json!({"maximumVolumeSize": "5Gi"}))),
            ("no class", capacity("no-class", json!({"storageClassName": null}))),
            ("a bad class", capacity("bad-class", json!({"storageClassName": "Fast_1"}))),
            ("a negative capacity", capacity("negative", json!({"capacity": "-1Gi"}))),
            ("a bad topology", capacity("topology", json!({"nodeTopology": {"matchExpressions": [{"key": "zone", "operator": "In"}]}}))),
            ("no capacity", capacity("none", json!({"capacity": null, "nodeTopology": null}))),
            ("a bad name", capacity("Cap_1", json!({}))),
        ]).await;
        r.answer("its class changed", capacities.merge("a", None, json!({"storageClassName": "slow"})).await);
        r.answer("its capacity changed", capacities.merge("a", None, json!({"capacity": "20Gi"})).await);
    })
    .await;
}

#[tokio::test]
async fn runtime_classes_are_checked_and_keep_their_handler_alike() {
    differential("k-runtimeclasses", async |t: &Target, r: &mut Record| {
        let classes = cluster(t, "node.k8s.io", "v1", "runtimeclasses");
        let names: Vec<String> = (0..8).map(|i| unique(t, &format!("rc{i}"))).collect();
        let class = |i: usize, extra: Value| with(&json!({"metadata": {"name": names[i]}, "handler": "runc"}), extra);
        classes.create_each(r, vec![
            ("a class with overhead and scheduling", class(0, json!({"overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}},
                "scheduling": {"nodeSelector": {"runtime": "kata"}, "tolerations": [{"key": "kata", "operator": "Exists", "effect": "NoSchedule"}]}}))),
            ("no handler", class(1, json!({"handler": null}))),
            ("a handler in capitals", class(2, json!({"handler": "Kata"}))),
            ("a handler with a dot", class(3, json!({"handler": "kata.v2"}))),
            ("a negative overhead", class(4, json!({"overhead": {"podFixed": {"cpu": "-1"}}}))),
            ("a bad node selector", class(5, json!({"scheduling": {"nodeSelector": {"bad key!": "x"}}}))),
            ("a toleration of a bad operator", class(6, json!({"scheduling": {"tolerations": [{"key": "a", "operator": "Near"}]}}))),
            ("a toleration with a value and Exists", class(7, json!({"scheduling": {"tolerations": [{"key": "a", "operator": "Exists", "value": "b"}]}}))),
        ]).await;
        r.answer("its handler changed", classes.merge(&names[0], None, json!({"handler": "crun"})).await);
        r.answer("its overhead changed", classes.merge(&names[0], None, json!({"overhead": {"podFixed": {"cpu": "500m"}}})).await.map(|c| c["overhead"].clone()));
        classes.clean_up(&names).await;
    })
    .await;
}

#[tokio::test]
async fn priority_classes_are_checked_and_keep_their_value_alike() {
    differential("k-priorityclasses", async |t: &Target, r: &mut Record| {
        let classes = cluster(t, "scheduling.k8s.io", "v1", "priorityclasses");
        let names: Vec<String> = (0..6).map(|i| unique(t, &format!("pc{i}"))).collect();
        let class = |i: usize, extra: Value| {
            with(
                &json!({"metadata": {"name": names[i]}, "value": 100}),
                extra,
            )
        };
        classes
            .create_each(
                r,
                vec![
                    ("a class", class(0, json!({"description": "batch work"}))),
                    (
                        "a value above a billion",
                        class(1, json!({"value": 1_000_000_001})),
                    ),
                    (
                        "a value of a billion",
                        class(
                            2,
                            json!({"value": 1_000_000_000, "preemptionPolicy": "Never"}),
                        ),
                    ),
                    ("a negative value", class(3, json!({"value": -5}))),
                    (
                        "an unknown preemption policy",
                        class(4, json!({"preemptionPolicy": "Sometimes"})),
                    ),
                    (
                        "a name with the system prefix",
                        json!({"metadata": {"name": format!("system-{}", t.ns)}, "value": 100}),
                    ),
                    ("no value", json!({"metadata": {"name": names[5]}})),
                ],
            )
            .await;
        r.answer(
            "its value changed",
            classes.merge(&names[0], None, json!({"value": 200})).await,
        );
        r.answer(
            "its preemption policy changed",
            classes
                .merge(&names[0], None, json!({"preemptionPolicy": "Never"}))
                .await,
        );
        r.answer(
            "its description changed",
            classes
                .merge(&names[0], None, json!({"description": "other"}))
                .await,
        );
        r.answer(
            "globalDefault false said aloud",
            classes
                .merge(&names[0], None, json!({"globalDefault": false}))
                .await,
        );
        r.answer(
            "a system class deleted",
            cluster(t, "scheduling.k8s.io", "v1", "priorityclasses")
                .delete("system-node-critical")
                .await,
        );
        classes.clean_up(&names).await;
    })
    .await;
}

#[tokio::test]
async fn flow_schemas_and_priority_levels_are_defaulted_and_checked_alike() {
    differential("k-flowcontrol", async |t: &Target, r: &mut Record| {
        let levels = cluster(t, "flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations");
        let schemas = cluster(t, "flowcontrol.apiserver.k8s.io", "v1", "flowschemas");
        let level_names: Vec<String> = (0..7).map(|i| unique(t, &format!("pl{i}"))).collect();
        let schema_names: Vec<String> = (0..6).map(|i| unique(t, &format!("fs{i}"))).collect();
        let level = |i: usize, spec: Value| json!({"metadata": {"name": level_names[i]}, "spec": spec});
        let spec_only = |answer: kubekit::rest::Result<Value>| answer.map(|o| o["spec"].clone());
        let created = levels.create(level(0, json!({"type": "Limited", "limited": {}}))).await;
        r.answer("a limited level with no fields", spec_only(created));
        let created = levels.create(level(1, json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue"}}}))).await;
        r.answer("a level that queues", spec_only(created));
        let created = levels.create(level(2, json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 0, "lendablePercent": 50,
            "borrowingLimitPercent": 10, "limitResponse": {"type": "Queue", "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 5}}}}))).await;
        r.answer("a level with every field", spec_only(created));
        levels.create_each(r, vec![
            ("an exempt level of a new name", level(3, json!({"type": "Exempt", "exempt": {}}))),
            ("a limited level without its fields", level(4, json!({"type": "Limited"}))),
            ("a hand larger than the queues", level(5, json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue",
                "queuing": {"queues": 2, "handSize": 4, "queueLengthLimit": 5}}}}))),
            ("a lendable percent above 100", level(6, json!({"type": "Limited", "limited": {"lendablePercent": 101}}))),
        ]).await;
        let schema = |i: usize, spec: Value| json!({"metadata": {"name": schema_names[i]}, "spec": spec});
        // A user of no other scenario: the schema classifies the shared server's requests.
        let rule = json!([{"subjects": [{"kind": "User", "user": {"name": unique(t, "flow-user")}}],
            "resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "namespaces": ["*"]}]}]);
        let created = schemas.create(schema(0, json!({"priorityLevelConfiguration": {"name": level_names[0]}, "rules": rule}))).await;
        r.answer("a flow schema with no precedence", spec_only(created));
        schemas.create_each(r, vec![
            ("a precedence of 0", schema(1, json!({"priorityLevelConfiguration": {"name": level_names[0]}, "matchingPrecedence": 0}))),
            ("a precedence above 10000", schema(2, json!({"priorityLevelConfiguration": {"name": level_names[0]}, "matchingPrecedence": 10001}))),
            ("no priority level", schema(3, json!({"priorityLevelConfiguration": {}}))),
            ("an unknown distinguisher", schema(4, json!({"priorityLevelConfiguration": {"name": "x"}, "distinguisherMethod": {"type": "ByColour"}}))),
            ("a rule without subjects", schema(5, json!({"priorityLevelConfiguration": {"name": "x"},
                "rules": [{"resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "clusterScope": true}]}]}))),
        ]).await;
        schemas.clean_up(&schema_names).await;
        levels.clean_up(&level_names).await;
    })
    .await;
}

/// A PEM certificate request of `CN=alice, O=dev` (an ECDSA P-256 key), in base64.
const CSR: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIWk1JR0FBZ0VBTUI0eERqQU1CZ05WQkFNTUJXRnNhV05sTVF3d0NnWURWUVFLREFOa1pYWXdXVEFUQmdjcQpoa2pPUFFJQkJnZ3Foa2pPUFFNQkJ3TkNBQVM3ODZSQzU3cHUrcjhpNmdzZ2NuSE4xMmplSU1UM09tSTNvQlpuCjhua2hJZkM0U3o4VVRuMkFPOTYwclpvbnVNYzNBSmJLUXBFTFJnY2pSeVlncW1JSm9BQXdDZ1lJS29aSXpqMEUKQXdJRFNBQXdSUUlnTjEyRlgwd3ZYeDJweXBGK0d3V0tmaFlrUnpRWGVrM3dzbzVLd01jQVM3WUNJUUR1Yk9RNgpJbXJiUHNZUUltNFQ0d2FsYTlTdGJzZFNUOVduZFhVTU0ycWJsdz09Ci0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo=";

#[tokio::test]
async fn certificate_signing_requests_are_checked_approved_and_keep_their_spec_alike() {
    differential("k-csrs", async |t: &Target, r: &mut Record| {
        let csrs = cluster(t, "certificates.k8s.io", "v1", "certificatesigningrequests");
        let names: Vec<String> = (0..10).map(|i| unique(t, &format!("csr{i}"))).collect();
        let csr = |i: usize, extra: Value| json!({"metadata": {"name": names[i]}, "spec": with(&json!({"request": CSR,
            "signerName": "example.com/signer", "usages": ["client auth"]}), extra)});
        let spec_and_status = |answer: kubekit::rest::Result<Value>| answer.map(|c| {
            let mut spec = c["spec"].clone();
            // The requester is whoever the test's credentials are: not compared.
            for who in ["username", "uid", "groups", "extra"] {
                spec.as_object_mut().map(|s| s.remove(who));
            }
            json!({"spec": spec, "status": c["status"]})
        });
        let created = csrs.create(csr(0, json!({"expirationSeconds": 3600}))).await;
        r.answer("a request", spec_and_status(created));
        let cases = vec![
            ("no request", csr(1, json!({"request": null}))),
            ("a request that is no PEM", csr(2, json!({"request": b64("not a pem")}))),
            ("no signer", csr(3, json!({"signerName": null}))),
            ("a signer without a path", csr(4, json!({"signerName": "example.com"}))),
            ("no usages", csr(5, json!({"usages": []}))),
            ("an unknown usage", csr(6, json!({"usages": ["time travel"]}))),
            ("a usage twice", csr(7, json!({"usages": ["client auth", "client auth"]}))),
            ("an expiration below ten minutes", csr(8, json!({"expirationSeconds": 599}))),
            ("an API server client certificate for a server", csr(9, json!({"signerName": "kubernetes.io/kube-apiserver-client", "usages": ["server auth"]}))),
        ];
        for (label, body) in cases {
            r.answer(label, spec_and_status(csrs.create(body).await));
        }
        let approval = |kind: &str, reason: &str| json!({"status": {"conditions": [
            {"type": kind, "status": "True", "reason": reason, "message": "by the test"}]}});
        let approved = csrs.merge(&names[0], Some("approval"), approval("Approved", "TestApproved")).await;
        r.answer("approved", spec_and_status(approved));
        // The real server drops them.
        let managers = csrs.get(&names[0]).await;
        let managers = managers.map(|c| json!({"managedFields": c["metadata"]["managedFields"]}));
        r.answer("the managers of the approved request", managers);
        let both = json!({"status": {"conditions": [{"type": "Approved", "status": "True", "reason": "TestApproved"},
            {"type": "Denied", "status": "True", "reason": "TestDenied"}]}});
        r.answer("approved and denied", csrs.merge(&names[0], Some("approval"), both).await);
        let odd = csrs.merge(&names[0], Some("approval"), approval("Maybe", "Unsure")).await;
        r.answer("its approval replaced by an odd condition", odd);
        let denied = csrs.merge(&names[9], Some("approval"), approval("Denied", "TestDenied")).await;
        r.answer("another request denied", spec_and_status(denied));
        let spec_changed = csrs.merge(&names[0], None, json!({"spec": {"usages": ["server auth"]}})).await;
        r.answer("its spec changed", spec_and_status(spec_changed));
        let status_changed = csrs.merge(&names[0], None, json!({"status": {"certificate": b64("x")}})).await;
        r.answer("its status changed through the object", spec_and_status(status_changed));
        csrs.clean_up(&names).await;
    })
    .await;
}

#[tokio::test]
async fn ingress_classes_are_checked_alike() {
    differential("k-ingressclasses", async |t: &Target, r: &mut Record| {
        let classes = cluster(t, "networking.k8s.io", "v1", "ingressclasses");
        let names: Vec<String> = (0..8).map(|i| unique(t, &format!("ic{i}"))).collect();
        let class = |i: usize, spec: Value| json!({"metadata": {"name": names[i]}, "spec": spec});
        classes.create_each(r, vec![
            ("a class with cluster parameters", class(0, json!({"controller": "example.com/ingress",
                "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters", "name": "external"}}))),
            ("a class with namespace parameters", class(1, json!({"controller": "example.com/ingress",
                "parameters": {"kind": "ConfigMap", "name": "params", "scope": "Namespace", "namespace": t.ns}}))),
            ("no controller", class(2, json!({}))),
            ("a controller without a path", class(3, json!({"controller": "example.com"}))),
            ("namespace parameters without a namespace", class(4, json!({"controller": "example.com/ingress",
                "parameters": {"kind": "ConfigMap", "name": "p", "scope": "Namespace"}}))),
            ("cluster parameters with a namespace", class(5, json!({"controller": "example.com/ingress",
                "parameters": {"kind": "ConfigMap", "name": "p", "scope": "Cluster", "namespace": "x"}}))),
            ("parameters of an unknown scope", class(6, json!({"controller": "example.com/ingress",
                "parameters": {"kind": "ConfigMap", "name": "p", "scope": "Galaxy"}}))),
            ("parameters without a kind", class(7, json!({"controller": "example.com/ingress", "parameters": {"name": "p"}}))),
        ]).await;
        r.answer("its controller changed", classes.merge(&names[0], None, json!({"spec": {"controller": "example.com/other"}})).await);
        r.answer("its parameters changed", classes.merge(&names[0], None, json!({"spec": {"parameters": {"name": "internal"}}})).await);
        classes.clean_up(&names).await;
    })
    .await;
}

#[tokio::test]
async fn ingress_backends_rules_and_tls_are_checked_alike() {
    differential("k-ingress-backends", async |t: &Target, r: &mut Record| {
        let ingresses = namespaced(t, "networking.k8s.io", "v1", "ingresses");
        let service = |port: Value| json!({"service": {"name": "web", "port": port}});
        let rule = |host: &str, backend: Value| json!({"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}});
        let ingress = |name: &str, spec: Value| json!({"metadata": {"name": name}, "spec": spec});
        ingresses.create_each(r, vec![
            ("a default backend, TLS and a named port", ingress("good", json!({"ingressClassName": "nginx",
                "defaultBackend": service(json!({"number": 80})),
                "tls": [{"hosts": ["a.example.com", "*.example.com"], "secretName": "tls"}],
                "rules": [rule("a.example.com", service(json!({"name": "http"}))), rule("*.example.com", service(json!({"number": 8080})))]}))),
            ("no rules and no default backend", ingress("empty", json!({}))),
            ("a backend of neither service nor resource", ingress("neither", json!({"defaultBackend": {}}))),
            ("a backend of both service and resource", ingress("both", json!({"defaultBackend": {"service": {"name": "web", "port": {"number": 80}},
                "resource": {"apiGroup": "k8s.example.com", "kind": "Bucket", "name": "b"}}}))),
            ("a service port of number and name", ingress("port-both", json!({"defaultBackend": service(json!({"number": 80, "name": "http"}))}))),
            ("a service port of neither", ingress("port-neither", json!({"defaultBackend": service(json!({}))}))),
            ("a service port too high", ingress("port-high", json!({"defaultBackend": service(json!({"number": 65536}))}))),
            ("a bad service name", ingress("service-name", json!({"defaultBackend": {"service": {"name": "Web_1", "port": {"number": 80}}}}))),
            ("a wildcard inside a host", ingress("wild", json!({"rules": [rule("a.*.example.com", service(json!({"number": 80})))]}))),
            ("a TLS host with a wildcard inside", ingress("tls-host", json!({"defaultBackend": service(json!({"number": 80})),
                "tls": [{"hosts": ["a.*.com"]}]}))),
            ("a rule without http", ingress("no-http", json!({"rules": [{"host": "a.example.com"}]}))),
            ("an exact path with a regex", ingress("regex", json!({"rules": [{"http": {"paths": [{"path": "/a(.*)", "pathType": "Exact",
                "backend": service(json!({"number": 80}))}]}}]}))),
            ("a bad class name", ingress("class", json!({"ingressClassName": "Nginx_1", "defaultBackend": service(json!({"number": 80}))}))),
            ("a rule with no paths", ingress("no-paths", json!({"rules": [{"host": "a.example.com", "http": {"paths": []}}]}))),
        ]).await;
    })
    .await;
}

#[tokio::test]
async fn network_policy_peers_and_ip_blocks_are_checked_alike() {
    differential("k-netpol-peers", async |t: &Target, r: &mut Record| {
        let policies = namespaced(t, "networking.k8s.io", "v1", "networkpolicies");
        let from = |peers: Value| json!({"podSelector": {}, "ingress": [{"from": peers}]});
        let to_ports = |ports: Value| json!({"podSelector": {}, "egress": [{"ports": ports}]});
        let policy = |name: &str, spec: Value| json!({"metadata": {"name": name}, "spec": spec});
        policies.create_each(r, vec![
            ("peers of every kind and a port range", policy("good", json!({"podSelector": {"matchLabels": {"app": "db"}},
                "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}, "namespaceSelector": {}},
                    {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}], "ports": [{"port": 5432, "endPort": 5440}]}],
                "egress": [{"to": [{"ipBlock": {"cidr": "fd00::/8"}}], "ports": [{"protocol": "UDP", "port": "dns"}]}]}))),
            ("an empty peer", policy("empty-peer", from(json!([{}])))),
            ("an ipBlock with a selector", policy("block-and-pods", from(json!([{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}])))),
            ("an ipBlock that is no CIDR", policy("bad-cidr", from(json!([{"ipBlock": {"cidr": "10.0.0.0"}}])))),
            ("an ipBlock without a CIDR", policy("no-cidr", from(json!([{"ipBlock": {"cidr": ""}}])))),
            ("an except outside the CIDR", policy("outside", from(json!([{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["192.168.0.0/24"]}}])))),
            ("an except as wide as the CIDR", policy("as-wide", from(json!([{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.0.0/16"]}}])))),
            ("an end port below the port", policy("backwards", to_ports(json!([{"port": 100, "endPort": 90}])))),
            ("an end port with a named port", policy("named-range", to_ports(json!([{"port": "http", "endPort": 90}])))),
            ("an end port without a port", policy("no-port", to_ports(json!([{"endPort": 90}])))),
            ("a port of a bad name", policy("bad-name", to_ports(json!([{"port": "HTTP_1"}])))),
            ("an unknown protocol", policy("protocol", to_ports(json!([{"protocol": "ICMP", "port": 1}])))),
            ("an unknown policy type", policy("type", json!({"podSelector": {}, "policyTypes": ["Sideways"]}))),
            ("a bad pod selector", policy("selector", json!({"podSelector": {"matchLabels": {"bad key!": "x"}}}))),
        ]).await;
    })
    .await;
}

#[tokio::test]
async fn ip_addresses_and_service_cidrs_are_checked_alike() {
    differential("k-ipaddresses", async |t: &Target, r: &mut Record| {
        let addresses = cluster(t, "networking.k8s.io", "v1", "ipaddresses");
        let cidrs = cluster(t, "networking.k8s.io", "v1", "servicecidrs");
        // Addresses outside the cluster's service range, so no allocator holds them (each
        // test process has a control plane of its own).
        let ip = |host: u32| format!("192.0.2.{}", 10 + host);
        let parent = json!({"resource": "services", "namespace": t.ns, "name": "web"});
        let address = |name: &str, parent: Value| json!({"metadata": {"name": name}, "spec": {"parentRef": parent}});
        let kept = ip(0);
        // Its spec only: the fake does not record the parent reference itself (`.`) in
        // managedFields, as the real server does.
        let created = addresses.create(address(&kept, parent.clone())).await;
        r.answer("an address of a service", created.map(|a| a["spec"].clone()));
        addresses.create_each(r, vec![
            ("a name that is no IP", address(&unique(t, "ip"), parent.clone())),
            ("an address not in canonical form", address("2001:db8:0:0:0:0:0:1", parent.clone())),
            ("an address without a parent", address(&ip(1), json!(null))),
            ("a parent without a resource", address(&ip(2), json!({"name": "web", "namespace": t.ns}))),
            ("a parent without a name", address(&ip(3), json!({"resource": "services", "namespace": t.ns}))),
        ]).await;
        r.answer("its parent changed", addresses.merge(&kept, None, json!({"spec": {"parentRef": {"name": "other"}}})).await);
        let cidr = |i: usize, ranges: Value| json!({"metadata": {"name": unique(t, &format!("cidr{i}"))}, "spec": {"cidrs": ranges}});
        cidrs.create_each(r, vec![
            ("no ranges", cidr(0, json!([]))),
            ("a range that is no CIDR", cidr(1, json!(["10.96.0.0"]))),
            ("two ranges of one family", cidr(2, json!(["10.96.0.0/16", "10.97.0.0/16"]))),
            ("three ranges", cidr(3, json!(["10.96.0.0/16", "fd00::/108", "10.98.0.0/16"]))),
            ("a range not in canonical form", cidr(4, json!(["10.96.0.1/16"]))),
        ]).await;
        addresses.clean_up(&[kept]).await;
    })
    .await;
}

#[tokio::test]
async fn device_classes_and_resource_claims_are_checked_alike() {
    differential("k-dra", async |t: &Target, r: &mut Record| {
        let classes = cluster(t, "resource.k8s.io", "v1", "deviceclasses");
        let claims = namespaced(t, "resource.k8s.io", "v1", "resourceclaims");
        let names: Vec<String> = (0..3).map(|i| unique(t, &format!("dc{i}"))).collect();
        let class = |i: usize, spec: Value| json!({"metadata": {"name": names[i]}, "spec": spec});
        classes.create_each(r, vec![
            ("a class with a selector", class(0, json!({"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}))),
            ("a selector without an expression", class(2, json!({"selectors": [{}]}))),
        ]).await;
        // The CEL compilers' own words differ.
        let broken = class(1, json!({"selectors": [{"cel": {"expression": "device.driver =="}}]}));
        r.push("a selector that does not compile", code_and_fields(classes.create(broken).await));
        let claim = |name: &str, requests: Value| json!({"metadata": {"name": name}, "spec": {"devices": {"requests": requests}}});
        let exactly = |extra: Value| with(&json!({"deviceClassName": names[0]}), extra);
        claims.create_each(r, vec![
            ("a claim of one device", claim("one", json!([{"name": "gpu", "exactly": exactly(json!({}))}]))),
            ("a claim of all devices", claim("all", json!([{"name": "gpu", "exactly": exactly(json!({"allocationMode": "All"}))}]))),
            ("a claim of three", claim("three", json!([{"name": "gpu", "exactly": exactly(json!({"count": 3}))}]))),
            ("a request without a class", claim("no-class", json!([{"name": "gpu", "exactly": {}}]))),
            ("a request of neither kind", claim("neither", json!([{"name": "gpu"}]))),
            ("a request of a bad name", claim("bad-name", json!([{"name": "GPU_1", "exactly": exactly(json!({}))}]))),
            ("two requests of one name", claim("twice", json!([{"name": "gpu", "exactly": exactly(json!({}))}, {"name": "gpu", "exactly": exactly(json!({}))}]))),
            ("a count of zero", claim("zero", json!([{"name": "gpu", "exactly": exactly(json!({"count": 0}))}]))),
            ("a count with All", claim("all-count", json!([{"name": "gpu", "exactly": exactly(json!({"allocationMode": "All", "count": 2}))}]))),
            ("an unknown allocation mode", claim("mode", json!([{"name": "gpu", "exactly": exactly(json!({"allocationMode": "Some"}))}]))),
        ]).await;
        r.answer("a claim's requests changed", claims.merge("one", None, json!({"spec": {"devices": {"requests": [{"name": "tpu", "exactly": {"deviceClassName": "x"}}]}}})).await);
        classes.clean_up(&names).await;
    })
    .await;
}

/// A Pod named `name` of one container `c` (nginx), with `spec` set over its spec and
/// `container` over its container.
fn pod(name: &str, spec: Value, container: Value) -> Value {
    let c = with(&json!({"name": "c", "image": "nginx"}), container);
    json!({"metadata": {"name": name}, "spec": with(&json!({"containers": [c]}), spec)})
}

#[tokio::test]
async fn pod_volumes_and_mounts_are_checked_alike() {
    differential("k-pod-volumes", async |t: &Target, r: &mut Record| {
        let pods = namespaced(t, "", "v1", "pods");
        let mount = |name: &str, path: &str| json!({"volumeMounts": [{"name": name, "mountPath": path}]});
        let vols = |volumes: Value| json!({"volumes": volumes});
        let empty = |name: &str| json!({"name": name, "emptyDir": {}});
        pods.create_each(r, vec![
            ("a volume without a source", pod("no-source", vols(json!([{"name": "v"}])), json!({}))),
            ("a volume of two sources", pod("two-sources", vols(json!([{"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}])), json!({}))),
            ("two volumes of one name", pod("same-name", vols(json!([empty("v"), empty("v")])), json!({}))),
            ("a volume of a bad name", pod("bad-name", vols(json!([empty("V_1")])), json!({}))),
            ("a mount of no volume", pod("no-volume", json!({}), mount("missing", "/data"))),
            ("a relative mount path", pod("relative", vols(json!([empty("v")])), mount("v", "data"))),
            ("one path mounted twice", pod("twice", vols(json!([empty("a"), empty("b")])),
                json!({"volumeMounts": [{"name": "a", "mountPath": "/d"}, {"name": "b", "mountPath": "/d"}]}))),
            ("a subPath that climbs", pod("climb", vols(json!([empty("v")])), json!({"volumeMounts": [{"name": "v", "mountPath": "/d", "subPath": "../x"}]}))),
            ("an absolute subPath", pod("absolute", vols(json!([empty("v")])), json!({"volumeMounts": [{"name": "v", "mountPath": "/d", "subPath": "/x"}]}))),
            ("a host path with ..", pod("host-dots", vols(json!([{"name": "v", "hostPath": {"path": "/a/../b"}}])), json!({}))),
            ("a host path of an unknown type", pod("host-type", vols(json!([{"name": "v", "hostPath": {"path": "/a", "type": "Pipe"}}])), json!({}))),
            ("a secret volume without a name", pod("secret", vols(json!([{"name": "v", "secret": {}}])), json!({}))),
            ("a config map item with ..", pod("item", vols(json!([{"name": "v", "configMap": {"name": "c", "items": [{"key": "k", "path": "../k"}]}}])), json!({}))),
            ("a negative default mode", pod("mode", vols(json!([{"name": "v", "configMap": {"name": "c", "defaultMode": -1}}])), json!({}))),
            ("an emptyDir of a negative size", pod("size", vols(json!([{"name": "v", "emptyDir": {"sizeLimit": "-1Gi"}}])), json!({}))),
        ]).await;
        let created = pods.create(pod("good", vols(json!([{"name": "v", "configMap": {"name": "c"}}, {"name": "s", "secret": {"secretName": "s"}},
            {"name": "d", "downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
            {"name": "h", "hostPath": {"path": "/var/log"}}, {"name": "e", "emptyDir": {}}])), mount("v", "/etc/config"))).await;
        r.answer("volumes defaulted", created.map(|p| json!([p["spec"]["volumes"], p["spec"]["containers"][0]["volumeMounts"]])));
    })
    .await;
}

#[tokio::test]
async fn pod_probes_security_contexts_and_resources_are_checked_alike() {
    differential("k-pod-checks", async |t: &Target, r: &mut Record| {
        let pods = namespaced(t, "", "v1", "pods");
        let http = json!({"httpGet": {"path": "/", "port": 80}});
        pods.create_each(r, vec![
            ("a probe of two handlers", pod("two-handlers", json!({}), json!({"livenessProbe": {"httpGet": {"port": 80}, "exec": {"command": ["true"]}}}))),
            ("a probe of no handler", pod("no-handler", json!({}), json!({"readinessProbe": {"periodSeconds": 5}}))),
            ("a probe of a negative delay", pod("delay", json!({}), json!({"livenessProbe": with(&http, json!({"initialDelaySeconds": -1}))}))),
            ("a liveness probe that needs two successes", pod("success", json!({}), json!({"livenessProbe": with(&http, json!({"successThreshold": 2}))}))),
            ("a probe of a port too high", pod("port", json!({}), json!({"startupProbe": {"tcpSocket": {"port": 70000}}}))),
            ("a probe of a bad port name", pod("port-name", json!({}), json!({"readinessProbe": {"httpGet": {"port": "HTTP_1"}}}))),
            ("a negative user", pod("user", json!({"securityContext": {"runAsUser": -1}}), json!({}))),
            ("a container's negative group", pod("group", json!({}), json!({"securityContext": {"runAsGroup": -1}}))),
            ("an unknown seccomp type", pod("seccomp", json!({"securityContext": {"seccompProfile": {"type": "Strict"}}}), json!({}))),
            ("a localhost seccomp without a profile", pod("localhost", json!({"securityContext": {"seccompProfile": {"type": "Localhost"}}}), json!({}))),
            ("a limit below the request", pod("limit", json!({}), json!({"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}))),
            ("a negative request", pod("negative", json!({}), json!({"resources": {"requests": {"memory": "-1"}}}))),
            ("an unknown resource", pod("unknown", json!({}), json!({"resources": {"requests": {"gpus": "1"}}}))),
            ("an extended resource without a limit", pod("extended", json!({}), json!({"resources": {"requests": {"example.com/gpu": "1"}}}))),
            ("an extended resource requested below its limit", pod("extended-below", json!({}),
                json!({"resources": {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}}}))),
            ("a fractional hugepage", pod("hugepages", json!({}), json!({"resources": {"requests": {"hugepages-2Mi": "1Mi", "memory": "1Gi"}, "limits": {"hugepages-2Mi": "1Mi", "memory": "1Gi"}}}))),
            ("whole hugepages", pod("whole-hugepages", json!({}), json!({"resources": {"requests": {"hugepages-2Mi": "4Mi", "memory": "1Gi"}, "limits": {"hugepages-2Mi": "4Mi", "memory": "1Gi"}}}))),
        ]).await;
        let created = pods.create(pod("probed", json!({}), json!({"livenessProbe": http.clone(), "readinessProbe": {"tcpSocket": {"port": 80}},
            "startupProbe": {"exec": {"command": ["true"]}}, "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}))).await;
        r.answer("probes and resources defaulted", created.map(|p| p["spec"]["containers"][0].clone()));
    })
    .await;
}

#[tokio::test]
async fn leases_keep_their_times_and_holders_alike() {
    differential("k-leases", async |t: &Target, r: &mut Record| {
        let leases = namespaced(t, "coordination.k8s.io", "v1", "leases");
        let lease = |name: &str, spec: Value| json!({"metadata": {"name": name}, "spec": spec});
        leases.create_each(r, vec![
            ("a held lease", lease("held", json!({"holderIdentity": "pod-a_1234", "leaseDurationSeconds": 15,
                "acquireTime": "2026-01-01T00:00:00.000000Z", "renewTime": "2026-01-01T00:00:10.123456Z", "leaseTransitions": 2}))),
            ("an empty lease", lease("empty", json!({}))),
            ("a lease of another strategy", lease("strategy", json!({"strategy": "Sideways"}))),
            ("a preferred holder without a strategy", lease("preferred", json!({"preferredHolder": "pod-b"}))),
            ("a lease of the oldest-emulation strategy", lease("oldest", json!({"strategy": "OldestEmulationVersion", "holderIdentity": "a"}))),
        ]).await;
        let renewed = leases.merge("held", None, json!({"spec": {"renewTime": "2026-01-01T00:00:20.000000Z", "holderIdentity": "pod-b"}})).await;
        r.answer("renewed by another holder", renewed);
        r.answer("released", leases.merge("held", None, json!({"spec": {"holderIdentity": null, "leaseTransitions": 3}})).await);
        r.answer("a negative transition count patched in", leases.merge("held", None, json!({"spec": {"leaseTransitions": -1}})).await);
    })
    .await;
}
