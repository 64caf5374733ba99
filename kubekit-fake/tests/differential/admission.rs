//! Scenarios of admission and authorization: webhooks, admission policies and RBAC.

use super::*;

/// A webhook of a configuration, valid but for what `extra` sets, of a namespace that does
/// not exist (so that it calls nothing).
fn hook(name: &str, extra: Value) -> Value {
    webhook_entry(
        name,
        "https://127.0.0.1:1/hook",
        "",
        "kubekit-nowhere",
        extra,
    )
}

#[tokio::test]
async fn webhook_configurations_rules_selectors_and_conditions_are_validated_alike() {
    differential("webhook-validation", async |t: &Target, r: &mut Record| {
        let name = |suffix: &str| format!("{}-{suffix}", t.ns);
        let configuration = |suffix: &str, hooks: Value| json!({"metadata": {"name": name(suffix)}, "webhooks": hooks});
        let rule = |groups: Value, versions: Value, operations: Value, resources: Value, scope: Value| {
            json!({"rules": [{"apiGroups": groups, "apiVersions": versions, "operations": operations, "resources": resources, "scope": scope}]})
        };
        let v = "validatingwebhookconfigurations";
        let m = "mutatingwebhookconfigurations";
        refusals_of_cluster_scoped(t, r, "admissionregistration.k8s.io", [
            (v, "rules without groups, versions, operations or resources", configuration("empty-rule", json!([
                hook("a.kubekit.test", json!({"rules": [{}]}))]))),
            (v, "wildcards beside names", configuration("wildcards", json!([
                hook("a.kubekit.test", rule(json!(["*", "apps"]), json!(["*", "v1"]), json!(["*", "CREATE"]), json!(["*", "pods"]), json!("*")))]))),
            (v, "resources and subresources wildcards mixed", configuration("subresources", json!([
                hook("a.kubekit.test", rule(json!([""]), json!(["v1"]), json!(["CREATE"]), json!(["*/*", "pods/status"]), json!("Namespaced"))),
                hook("b.kubekit.test", rule(json!([""]), json!(["v1"]), json!(["CREATE"]), json!(["pods/*", "pods/status", "*/scale", "deployments/scale"]), json!("Cluster")))]))),
            (v, "unknown operations and scope, empty strings", configuration("unknown", json!([
                hook("a.kubekit.test", rule(json!([""]), json!([""]), json!(["PATCH", ""]), json!([""]), json!("Somewhere")))]))),
            (v, "selectors of wrong operators and values", configuration("selectors", json!([
                hook("a.kubekit.test", json!({
                    "namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]},
                        {"key": "b", "operator": "Exists", "values": ["x"]}, {"key": "c", "operator": "In"}]},
                    "objectSelector": {"matchLabels": {"bad key!": "v"}}})),
                // One label each: the real server reads a map's in no fixed order.
                hook("b.kubekit.test", json!({"objectSelector": {"matchLabels": {"k": "bad value!"},
                    "matchExpressions": [{"key": "bad key!", "operator": "In", "values": ["bad value!"]}]}}))]))),
            (v, "match conditions repeated, unnamed, empty and failing to compile", configuration("conditions", json!([
                hook("a.kubekit.test", json!({"matchConditions": [
                    {"name": "one", "expression": "true"}, {"name": "one", "expression": "true"},
                    {"name": "", "expression": "true"}, {"name": "bad name!", "expression": "true"},
                    {"name": "empty", "expression": ""}, {"name": "broken", "expression": "object.metadata.name =="},
                    {"name": "unknown", "expression": "nosuch(object)"}]}))]))),
            (v, "service references with bad ports and paths", configuration("service", json!([
                hook("a.kubekit.test", json!({"clientConfig": {"service": {"namespace": "", "name": "", "port": 0, "path": "no-slash"}, "caBundle": ""}})),
                hook("b.kubekit.test", json!({"clientConfig": {"service": {"namespace": "ns", "name": "svc", "port": 70000, "path": "/a//b"}}}))]))),
            (v, "urls without https, with user info, relative", configuration("urls", json!([
                hook("a.kubekit.test", json!({"clientConfig": {"url": "ftp://example.com/x"}})),
                hook("b.kubekit.test", json!({"clientConfig": {"url": "https://user:pw@example.com/x"}})),
                hook("c.kubekit.test", json!({"clientConfig": {"url": "/relative"}})),
                hook("d.kubekit.test", json!({"clientConfig": {}}))]))),
            (m, "a mutating webhook with an unknown reinvocation policy and match policy", configuration("mutating", json!([
                hook("a.kubekit.test", json!({"reinvocationPolicy": "Always", "matchPolicy": "Fuzzy"}))]))),
            (v, "a webhook name that is one label", configuration("one-label", json!([
                hook("single", json!({}))]))),
            (v, "no webhooks at all", configuration("none", json!([]))),
            (v, "a valid configuration with every field", configuration("valid", json!([
                hook("a.kubekit.test", json!({"matchPolicy": "Exact", "failurePolicy": "Ignore",
                    "objectSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["x"]}]},
                    "matchConditions": [{"name": "not-system", "expression": "!request.userInfo.username.startsWith('system:')"}]}))]))),
        ])
        .await;
        // Defaults of what a configuration leaves out.
        let defaults = configuration("defaults", json!([{"name": "d.kubekit.test",
            "clientConfig": {"url": "https://127.0.0.1:1/hook"}, "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}],
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kubekit-nowhere"}}}]));
        for plural in [v, m] {
            let created = create_cluster_scoped(t, "admissionregistration.k8s.io", plural, &defaults).await;
            r.answer(&format!("{plural} defaulted"), created.map(|c| c["webhooks"].clone()));
            let delete = t.rest.delete().group_version("admissionregistration.k8s.io", "v1").resource(plural).name(&name("defaults"));
            delete.send().await.expect("deleted");
        }
    })
    .await;
}
