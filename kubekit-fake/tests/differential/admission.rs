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

#[tokio::test]
async fn admission_policies_match_resources_and_conditions_are_validated_alike() {
    differential("policy-match", async |t: &Target, r: &mut Record| {
        let name = |suffix: &str| format!("{}-{suffix}", t.ns);
        let rule = json!({"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]});
        let policy = |suffix: &str, constraints: Value, extra: Value| {
            let mut spec = json!({"matchConstraints": constraints, "validations": [{"expression": "true"}]});
            for (k, v) in extra.as_object().into_iter().flatten() {
                spec[k] = v.clone();
            }
            json!({"metadata": {"name": name(suffix)}, "spec": spec})
        };
        let binding = |suffix: &str, resources: Value| json!({"metadata": {"name": name(suffix)},
            "spec": {"policyName": "p", "validationActions": ["Deny"], "matchResources": resources}});
        let v = "validatingadmissionpolicies";
        let m = "mutatingadmissionpolicies";
        refusals_of_cluster_scoped(t, r, "admissionregistration.k8s.io", [
            (v, "constraints with a wrong match policy and selectors", policy("selectors", json!({
                "resourceRules": [rule], "matchPolicy": "Loose",
                "namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
                "objectSelector": {"matchLabels": {"k": "bad value!"}}}), json!({}))),
            (v, "rules with wildcards beside names and bad resource names", policy("rules", json!({
                "resourceRules": [{"apiGroups": ["*", "apps"], "apiVersions": ["v1"], "operations": ["CREATE"],
                    "resources": ["deployments"], "resourceNames": ["a/b", "..", "x", "x"]}],
                "excludeResourceRules": [{"apiGroups": [""], "apiVersions": [], "operations": ["DELETE", "*"], "resources": ["pods/*", "pods/log"]}]}), json!({}))),
            (v, "match conditions unnamed, repeated and failing to compile", policy("conditions", json!({"resourceRules": [rule]}),
                json!({"matchConditions": [{"name": "a", "expression": "true"}, {"name": "a", "expression": "object.x =="},
                    {"name": "", "expression": ""}]}))),
            (v, "a message expression that asks the authorizer", policy("message", json!({"resourceRules": [rule]}),
                json!({"validations": [{"expression": "authorizer.path('/healthz').check('get').allowed()",
                    "messageExpression": "string(authorizer.path('/x').check('get').allowed())"}]}))),
            (m, "a mutating policy's match conditions and rules", json!({"metadata": {"name": name("mutating")}, "spec": {
                "reinvocationPolicy": "Never",
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["*", "pods"]}]},
                "matchConditions": [{"name": "bad name!", "expression": "true"}],
                "mutations": [{"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{}"}}]}})),
            ("validatingadmissionpolicybindings", "a binding's match resources", binding("resources", json!({
                "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": [""], "scope": "Everywhere"}],
                "namespaceSelector": {"matchExpressions": [{"key": "bad key!", "operator": "Near"}]}}))),
        ])
        .await;
        // What a valid policy and binding are stored as.
        let group = "admissionregistration.k8s.io";
        let created = create_cluster_scoped(t, group, v, &policy("stored", json!({"resourceRules": [rule]}), json!({}))).await;
        r.answer("a policy defaulted", created.map(|p| p["spec"].clone()));
        let created = create_cluster_scoped(t, group, "validatingadmissionpolicybindings",
            &binding("stored", json!({"resourceRules": [rule]}))).await;
        r.answer("a binding defaulted", created.map(|b| b["spec"].clone()));
        for plural in [v, "validatingadmissionpolicybindings"] {
            let delete = t.rest.delete().group_version(group, "v1").resource(plural).name(&name("stored"));
            delete.send().await.expect("deleted");
        }
    })
    .await;
}

#[tokio::test]
async fn policies_ask_the_authorizer_and_take_every_selected_param_alike() {
    differential("policy-authz", async |t: &Target, r: &mut Record| {
        const ALICE: &str = "kubekit-policy-alice";
        let group = "admissionregistration.k8s.io";
        let cms = t.on("configmaps");
        let name = |suffix: &str| format!("{}-{suffix}", t.ns);
        let ns_only = json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": t.ns}}});
        t.on("roles").create(json!({"metadata": {"name": "writer"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get"]}]})).await.expect("a Role");
        t.on("rolebindings").create(json!({"metadata": {"name": "write"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "writer"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": ALICE}]})).await.expect("a RoleBinding");
        for (param, max) in [("limit-a", "3"), ("limit-b", "1")] {
            cms.create(json!({"metadata": {"name": param, "labels": {"role": "limit"}}, "data": {"max": max}})).await.expect("a param");
        }
        let rules = json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]});
        let when = |prefix: &str| json!([{"name": "named", "expression": format!("object.metadata.name.startsWith('{prefix}')")}]);
        let policy = |suffix: &str, extra: Value| {
            let mut spec = json!({"matchConstraints": rules, "matchConditions": when(&format!("{suffix}-"))});
            for (k, v) in extra.as_object().into_iter().flatten() {
                spec[k] = v.clone();
            }
            json!({"metadata": {"name": name(suffix)}, "spec": spec})
        };
        let binding = |suffix: &str, actions: &str, extra: Value| {
            let mut spec = json!({"policyName": name(suffix), "validationActions": [actions], "matchResources": ns_only});
            for (k, v) in extra.as_object().into_iter().flatten() {
                spec[k] = v.clone();
            }
            json!({"metadata": {"name": name(suffix)}, "spec": spec})
        };
        let params = json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}});
        let policies = [
            policy("sized", json!({"paramKind": params["paramKind"], "validations": [{
                "expression": "!has(object.data) || size(object.data) <= int(params.data.max)",
                "messageExpression": "'at most ' + params.data.max + ' keys, says ' + params.metadata.name"}]})),
            policy("who", json!({"validations": [{
                "expression": "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('list').allowed()",
                "message": "the writer may not list Secrets"}]})),
            policy("why", json!({"validations": [
                {"expression": "authorizer.requestResource.check('create').reason() != ''", "message": "an allowed check has no reason"},
                {"expression": "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('list').reason() != ''",
                    "message": "a denied check has no reason"},
                {"expression": "!authorizer.path('/healthz').check('get').allowed()", "message": "healthz is public"},
                {"expression": "!authorizer.serviceAccount(object.metadata.namespace, 'default').group('').resource('configmaps').check('create').allowed()",
                    "message": "the default service account may create ConfigMaps"}]})),
            policy("unparam", json!({"paramKind": params["paramKind"], "validations": [{"expression": "params != null", "message": "no params"}]})),
        ];
        let bindings = [
            binding("sized", "Deny", json!({"paramRef": {"selector": {"matchLabels": {"role": "limit"}}, "parameterNotFoundAction": "Deny"}})),
            binding("who", "Deny", json!({})),
            binding("why", "Warn", json!({})),
            binding("unparam", "Deny", json!({})),
        ];
        for p in &policies {
            create_cluster_scoped(t, group, "validatingadmissionpolicies", p).await.expect("a policy");
        }
        for b in &bindings {
            create_cluster_scoped(t, group, "validatingadmissionpolicybindings", b).await.expect("a binding");
        }
        let alice = t.as_user(ALICE).await;
        let create = |client: &RestClient, body: Value| {
            client.post().group_version("", "v1").namespace(&t.ns).resource("configmaps").body(&body)
        };
        let cm = |name: &str, keys: usize| {
            let data: serde_json::Map<String, Value> = (0..keys).map(|k| (format!("k{k}"), json!("v"))).collect();
            json!({"metadata": {"name": name}, "data": data})
        };
        // The real server's admission and authorizer see new policies and bindings a
        // moment later.
        testenv::eventually(60, "the policies and the Role in effect", || async {
            let dry = |client: &RestClient, body: Value| create(client, body).param("dryRun", "All");
            let sized = Res::send(dry(&t.rest, cm("sized-probe", 2))).await.is_err();
            let unparam = Res::send(dry(&t.rest, cm("unparam-probe", 0))).await.is_err();
            let who = Res::send(dry(&alice, cm("who-probe", 0))).await.is_err_and(|e| e.to_string().contains("Secrets"));
            let why = with_warnings(dry(&alice, cm("why-probe", 0))).await.is_ok_and(|v| v["warnings"].as_array().is_some_and(|w| !w.is_empty()));
            (sized && unparam && who && why).then_some(())
        })
        .await;
        let data = |answer: kubekit::rest::Result<Value>| answer.map(|c| c["data"].clone());
        r.answer("within every selected param", data(Res::send(create(&t.rest, cm("sized-one", 1))).await));
        r.answer("past one of the selected params", Res::send(create(&t.rest, cm("sized-two", 2))).await);
        r.answer("an admin the authorizer allows", data(Res::send(create(&t.rest, cm("who-admin", 0))).await));
        r.answer("a writer the authorizer does not allow", Res::send(create(&alice, cm("who-alice", 0))).await);
        r.answer("why the writer may create", with_warnings(create(&alice, cm("why-alice", 0))).await.map(|v| v["warnings"].clone()));
        r.answer("a binding without paramRef gives null params", Res::send(create(&t.rest, cm("unparam-x", 0))).await);
        for param in ["limit-a", "limit-b"] {
            cms.delete(param, json!({})).await.expect("the param deleted");
        }
        testenv::eventually(30, "the params gone for admission", || async {
            let dry = create(&t.rest, cm("sized-probe", 0)).param("dryRun", "All");
            Res::send(dry).await.is_err().then_some(())
        })
        .await;
        r.answer("no param selected", Res::send(create(&t.rest, cm("sized-none", 0))).await);
        for (plural, items) in [("validatingadmissionpolicybindings", &bindings), ("validatingadmissionpolicies", &policies)] {
            for item in items.iter() {
                let name = item["metadata"]["name"].as_str().unwrap_or_default();
                t.rest.delete().group_version(group, "v1").resource(plural).name(name).send().await.expect("deleted");
            }
        }
    })
    .await;
}

#[tokio::test]
async fn mutating_webhooks_are_asked_and_reinvoked_alike() {
    differential("webhook-reviews", async |t: &Target, r: &mut Record| {
        let served = webhooks::serve().await;
        let group = "admissionregistration.k8s.io";
        type Secret = k8s_openapi::api::core::v1::Secret;
        let url = format!(
            "{}{}",
            served.base,
            kubekit::webhook::mutate_path::<Secret>()
        );
        let on_secrets = |name: &str, extra: Value| {
            let mut hook = webhook_entry(name, &url, &served.ca_bundle, &t.ns, extra);
            hook["rules"][0]["resources"] = json!(["secrets"]);
            hook["rules"][0]["operations"] = json!(["CREATE", "UPDATE"]);
            hook
        };
        // The first asks to be called again when a later one changes the object; the
        // second changes it at every call (as the first does).
        let configuration = json!({"metadata": {"name": format!("{}-reviews", t.ns)}, "webhooks": [
            on_secrets("first.secrets.kubekit.test", json!({"reinvocationPolicy": "IfNeeded"})),
            on_secrets("second.secrets.kubekit.test", json!({})),
        ]});
        create_cluster_scoped(t, group, "mutatingwebhookconfigurations", &configuration)
            .await
            .expect("the configuration");
        let secrets = t.on("secrets");
        let secret = |name: &str| json!({"metadata": {"name": name}, "stringData": {"k": "v"}});
        testenv::eventually(30, "the webhooks in effect", || async {
            let dry = Res::send(
                secrets
                    .req(t.rest.post())
                    .param("dryRun", "All")
                    .body(&secret("probe")),
            )
            .await
            .ok()?;
            (dry["metadata"]["annotations"]["calls"] == "3").then_some(())
        })
        .await;
        let annotations = |answer: kubekit::rest::Result<Value>| {
            answer.map(|s| s["metadata"]["annotations"].clone())
        };
        r.answer(
            "a create, each webhook called and the first again",
            annotations(secrets.create(secret("s")).await),
        );
        r.answer(
            "a dry run create",
            annotations(
                Res::send(
                    secrets
                        .req(t.rest.post())
                        .param("dryRun", "All")
                        .body(&secret("d")),
                )
                .await,
            ),
        );
        r.answer(
            "a patch, called as an update",
            annotations(
                secrets
                    .patch(
                        "s",
                        PatchType::Merge,
                        json!({"metadata": {"labels": {"a": "b"}}}),
                    )
                    .await,
            ),
        );
        let mut stored = secrets.get("s").await.expect("the secret");
        stored["metadata"]["annotations"]["calls"] = json!("0");
        r.answer(
            "an update that resets the count",
            annotations(secrets.update("s", &stored, false).await),
        );
        r.answer(
            "an apply",
            annotations(
                secrets
                    .apply(
                        "s",
                        ("applier", true, None),
                        json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "labels": {"c": "d"}}}),
                    )
                    .await,
            ),
        );
        let delete = t
            .rest
            .delete()
            .group_version(group, "v1")
            .resource("mutatingwebhookconfigurations")
            .name(&format!("{}-reviews", t.ns));
        delete.send().await.expect("the configuration deleted");
    })
    .await;
}
