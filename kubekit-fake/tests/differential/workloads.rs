//! Scenarios of workloads and of kubectl's everyday commands on them.

use super::*;

/// A Pod template of one container, labelled `labels`, restarting `restart`.
fn pod_template(labels: Value, restart: &str) -> Value {
    json!({"metadata": {"labels": labels},
           "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "nginx"}]}})
}

/// A workload of `kind` named `name`, selecting `app: <name>`, scaled to zero where it
/// has replicas (so that no controller starts Pods while compared), with `extra` set over
/// its spec (one level deep).
fn workload(kind: &str, name: &str, extra: Value) -> Value {
    let labels = json!({"app": name});
    let mut spec = json!({"selector": {"matchLabels": labels},
                          "template": pod_template(labels, "Always")});
    if kind != "DaemonSet" {
        spec["replicas"] = json!(0);
    }
    for (k, v) in extra.as_object().into_iter().flatten() {
        spec[k] = v.clone();
    }
    json!({"metadata": {"name": name}, "spec": spec})
}

/// What both servers must agree on of an accepted workload: its labels, generation and
/// spec (a Job's generated uids masked); a refusal whole.
fn spec_only(answer: kubekit::rest::Result<Value>) -> kubekit::rest::Result<Value> {
    answer.map(|o| {
        with_uids_masked(json!({"labels": o["metadata"]["labels"],
            "generation": o["metadata"]["generation"], "spec": o["spec"]}))
    })
}

/// Creates each `(label, body)` of `cases` as a `resource` and records the answer (see
/// [`spec_only`]), uids masked.
async fn create_each(t: &Target, r: &mut Record, resource: &str, cases: Vec<(&str, Value)>) {
    let res = t.on(resource);
    for (label, body) in cases {
        r.answer(label, spec_only(res.create(body).await));
        r.mask_uids_of_last();
    }
}

/// Merge-patches `name` of `resource` with each `(label, patch)` of `cases` and records
/// the answer (see [`spec_only`]), uids masked.
async fn patch_each(
    t: &Target,
    r: &mut Record,
    resource: &str,
    name: &str,
    cases: Vec<(&str, Value)>,
) {
    let res = t.on(resource);
    for (label, patch) in cases {
        r.answer(
            label,
            spec_only(res.patch(name, PatchType::Merge, patch).await),
        );
        r.mask_uids_of_last();
    }
}

#[tokio::test]
async fn deployment_rolling_update_strategies_are_checked_alike() {
    differential("w-strategy", async |t: &Target, r: &mut Record| {
        let rolling = |surge: Value, unavailable: Value| {
            json!({"strategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}})
        };
        let d = |name: &str, extra: Value| workload("Deployment", name, extra);
        create_each(t, r, "deployments", vec![
            ("surge and unavailable both 0", d("d0", rolling(json!(0), json!(0)))),
            ("surge and unavailable both 0%", d("d1", rolling(json!("0%"), json!("0%")))),
            ("unavailable above 100%", d("d2", rolling(json!(1), json!("150%")))),
            ("surge above 100%", d("d3", rolling(json!("200%"), json!(0)))),
            ("a negative surge", d("d4", rolling(json!(-1), json!(1)))),
            ("a percentage without its sign", d("d5", rolling(json!("abc"), json!(1)))),
            ("percentages", d("d6", rolling(json!("50%"), json!("10%")))),
            ("counts", d("d7", rolling(json!(3), json!(0)))),
            ("only a surge", d("d8", json!({"strategy": {"rollingUpdate": {"maxSurge": 2}}}))),
            ("recreate with a rolling update", d("d9", json!({"strategy": {"type": "Recreate",
                "rollingUpdate": {"maxSurge": 1}}}))),
            ("an unknown strategy", d("d10", json!({"strategy": {"type": "BlueGreen"}}))),
            ("recreate", d("d11", json!({"strategy": {"type": "Recreate"}}))),
        ]).await;
        patch_each(t, r, "deployments", "d6", vec![
            ("changed to recreate keeping the rolling update", json!({"spec": {"strategy": {"type": "Recreate"}}})),
            ("changed to recreate dropping it", json!({"spec": {"strategy": {"type": "Recreate", "rollingUpdate": null}}})),
            ("changed back to rolling", json!({"spec": {"strategy": {"type": "RollingUpdate"}}})),
            ("both set to zero", json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}}})),
        ]).await;
    })
    .await;
}

#[tokio::test]
async fn deployment_limits_deadlines_and_pauses_are_checked_alike() {
    differential("w-limits", async |t: &Target, r: &mut Record| {
        let d = |name: &str, extra: Value| workload("Deployment", name, extra);
        create_each(t, r, "deployments", vec![
            ("negative replicas", d("d0", json!({"replicas": -1}))),
            ("a negative history limit", d("d1", json!({"revisionHistoryLimit": -1}))),
            ("no history kept", d("d2", json!({"revisionHistoryLimit": 0}))),
            ("a negative ready time", d("d3", json!({"minReadySeconds": -5}))),
            ("a deadline equal to the ready time", d("d4", json!({"minReadySeconds": 30, "progressDeadlineSeconds": 30}))),
            ("a deadline below the ready time", d("d5", json!({"minReadySeconds": 60, "progressDeadlineSeconds": 10}))),
            ("a deadline above the ready time", d("d6", json!({"minReadySeconds": 60, "progressDeadlineSeconds": 61}))),
            ("a ready time above the default deadline", d("d7", json!({"minReadySeconds": 700}))),
            ("paused", d("d8", json!({"paused": true}))),
            ("pods that never restart", d("d9", json!({"template": pod_template(json!({"app": "d9"}), "Never")}))),
            ("pods with a deadline", d("d10", json!({"template": {"metadata": {"labels": {"app": "d10"}},
                "spec": {"activeDeadlineSeconds": 10, "containers": [{"name": "c", "image": "nginx"}]}}}))),
            ("no template labels", d("d11", json!({"template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}))),
        ]).await;
        patch_each(t, r, "deployments", "d6", vec![
            ("resumed and limited", json!({"spec": {"paused": false, "revisionHistoryLimit": 2}})),
            ("a deadline lowered below the ready time", json!({"spec": {"progressDeadlineSeconds": 5}})),
            ("the selector changed", json!({"spec": {"selector": {"matchLabels": {"app": "d6", "x": "y"}},
                "template": {"metadata": {"labels": {"x": "y"}}}}})),
            ("the template's labels no longer selected", json!({"spec": {"template": {"metadata": {"labels": {"app": "other"}}}}})),
            ("scaled down below zero", json!({"spec": {"replicas": -3}})),
        ]).await;
    })
    .await;
}

#[tokio::test]
async fn daemon_set_update_strategies_are_defaulted_and_checked_alike() {
    differential("w-ds", async |t: &Target, r: &mut Record| {
        let d = |name: &str, extra: Value| workload("DaemonSet", name, extra);
        let rolling = |update: Value| json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": update}});
        create_each(t, r, "daemonsets", vec![
            ("a surge", d("d0", rolling(json!({"maxSurge": 1, "maxUnavailable": 0})))),
            ("both surge and unavailable", d("d1", rolling(json!({"maxSurge": 1, "maxUnavailable": 1})))),
            ("neither", d("d2", rolling(json!({"maxSurge": 0, "maxUnavailable": 0})))),
            ("unavailable above 100%", d("d3", rolling(json!({"maxUnavailable": "101%"})))),
            ("a negative unavailable count", d("d4", rolling(json!({"maxUnavailable": -1})))),
            ("on delete", d("d5", json!({"updateStrategy": {"type": "OnDelete"}}))),
            ("an unknown strategy", d("d6", json!({"updateStrategy": {"type": "Recreate"}}))),
            ("a negative history limit", d("d7", json!({"revisionHistoryLimit": -2}))),
            ("a negative ready time", d("d8", json!({"minReadySeconds": -1}))),
            ("pods that never restart", d("d9", json!({"template": pod_template(json!({"app": "d9"}), "Never")}))),
            ("a surge as a percentage", d("d10", rolling(json!({"maxSurge": "20%", "maxUnavailable": 0})))),
        ]).await;
        patch_each(t, r, "daemonsets", "d0", vec![
            ("the strategy changed to on delete", json!({"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": null}}})),
            ("the template changed", json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})),
            ("the template generation lowered", json!({"spec": {"templateGeneration": 1}})),
            ("the ready time changed", json!({"spec": {"minReadySeconds": 9}})),
        ]).await;
    })
    .await;
}
