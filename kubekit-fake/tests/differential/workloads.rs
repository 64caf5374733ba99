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

/// A suspended Job named `name` (so that no Pods start) with `extra` set over its spec.
fn job(name: &str, extra: Value) -> Value {
    let mut spec = json!({"suspend": true, "template": {"spec": {"restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox"}]}}});
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
async fn stateful_set_strategies_claims_and_ordinals_are_checked_alike() {
    differential("w-sts", async |t: &Target, r: &mut Record| {
        let s = |name: &str, extra: Value| workload("StatefulSet", name, extra);
        let claim = |name: &str, size: &str| json!({"metadata": {"name": name}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}});
        create_each(t, r, "statefulsets", vec![
            ("claim templates", s("s0", json!({"serviceName": "s0", "volumeClaimTemplates": [claim("data", "1Gi")]}))),
            ("an unknown pod management policy", s("s1", json!({"podManagementPolicy": "Random"}))),
            ("an unknown update strategy", s("s2", json!({"updateStrategy": {"type": "Recreate"}}))),
            ("on delete with a rolling update", s("s3", json!({"updateStrategy": {"type": "OnDelete",
                "rollingUpdate": {"partition": 1}}}))),
            ("a negative partition", s("s4", json!({"updateStrategy": {"type": "RollingUpdate",
                "rollingUpdate": {"partition": -1}}}))),
            ("no unavailable pods", s("s5", json!({"updateStrategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 0}}}))),
            ("a partition and unavailable pods", s("s6", json!({"updateStrategy": {"type": "RollingUpdate",
                "rollingUpdate": {"partition": 2, "maxUnavailable": "50%"}}}))),
            ("an unknown claim retention", s("s7", json!({"persistentVolumeClaimRetentionPolicy":
                {"whenDeleted": "Keep"}}))),
            ("claims deleted with the set", s("s8", json!({"persistentVolumeClaimRetentionPolicy":
                {"whenDeleted": "Delete"}}))),
            ("a negative start ordinal", s("s9", json!({"ordinals": {"start": -1}}))),
            ("a start ordinal", s("s10", json!({"ordinals": {"start": 5}}))),
            ("a service name that is no label", s("s11", json!({"serviceName": "Bad_Name"}))),
            ("pods that never restart", s("s12", json!({"template": pod_template(json!({"app": "s12"}), "Never")}))),
        ]).await;
        patch_each(t, r, "statefulsets", "s0", vec![
            ("the template changed", json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})),
            ("the update strategy changed", json!({"spec": {"updateStrategy": {"type": "OnDelete", "rollingUpdate": null}}})),
            ("the claim retention changed", json!({"spec": {"persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete"}}})),
            ("the ordinals changed", json!({"spec": {"ordinals": {"start": 3}}})),
            ("the history limit changed", json!({"spec": {"revisionHistoryLimit": 1}})),
            ("the claim templates changed", json!({"spec": {"volumeClaimTemplates": [claim("data", "2Gi")]}})),
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

#[tokio::test]
async fn indexed_jobs_and_their_backoff_per_index_are_checked_alike() {
    differential("w-indexed", async |t: &Target, r: &mut Record| {
        let indexed = |extra: Value| {
            let mut spec = json!({"completionMode": "Indexed", "completions": 4, "parallelism": 2});
            for (k, v) in extra.as_object().into_iter().flatten() {
                spec[k] = v.clone();
            }
            spec
        };
        create_each(
            t,
            r,
            "jobs",
            vec![
                ("an indexed job", job("j0", indexed(json!({})))),
                (
                    "indexed without completions",
                    job("j1", json!({"completionMode": "Indexed"})),
                ),
                (
                    "an unknown completion mode",
                    job("j2", json!({"completionMode": "Ordered"})),
                ),
                (
                    "negative parallelism",
                    job("j3", json!({"parallelism": -1})),
                ),
                (
                    "negative completions",
                    job("j4", json!({"completions": -2})),
                ),
                (
                    "a negative backoff limit",
                    job("j5", json!({"backoffLimit": -1})),
                ),
                (
                    "a backoff per index",
                    job(
                        "j6",
                        indexed(json!({"backoffLimitPerIndex": 1, "maxFailedIndexes": 2})),
                    ),
                ),
                (
                    "a backoff per index of a non-indexed job",
                    job("j7", json!({"backoffLimitPerIndex": 1})),
                ),
                (
                    "more failed indexes than completions",
                    job(
                        "j8",
                        indexed(json!({"backoffLimitPerIndex": 1, "maxFailedIndexes": 5})),
                    ),
                ),
                (
                    "failed indexes without a backoff per index",
                    job("j9", indexed(json!({"maxFailedIndexes": 1}))),
                ),
                (
                    "a negative backoff per index",
                    job("j10", indexed(json!({"backoffLimitPerIndex": -1}))),
                ),
                (
                    "a zero deadline",
                    job("j11", json!({"activeDeadlineSeconds": 0})),
                ),
                (
                    "a negative time to live",
                    job("j12", json!({"ttlSecondsAfterFinished": -1})),
                ),
                (
                    "a time to live",
                    job(
                        "j13",
                        json!({"ttlSecondsAfterFinished": 100, "activeDeadlineSeconds": 60}),
                    ),
                ),
                (
                    "an unknown pod replacement policy",
                    job("j14", json!({"podReplacementPolicy": "Sometimes"})),
                ),
                (
                    "replacement of failed pods only",
                    job("j15", json!({"podReplacementPolicy": "Failed"})),
                ),
            ],
        )
        .await;
    })
    .await;
}

#[tokio::test]
async fn job_pod_failure_and_success_policies_are_checked_alike() {
    differential("w-policies", async |t: &Target, r: &mut Record| {
        let failure = |rules: Value| json!({"podFailurePolicy": {"rules": rules}});
        let exit_codes = |action: &str, operator: &str, values: Value| {
            json!([{"action": action, "onExitCodes": {"operator": operator, "values": values}}])
        };
        let success = |rules: Value| json!({"completionMode": "Indexed", "completions": 3,
            "successPolicy": {"rules": rules}});
        create_each(t, r, "jobs", vec![
            ("a failure policy", job("j0", failure(json!([
                {"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "In", "values": [1, 2]}},
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [0]}}])))),
            ("an exit code of 0 in In", job("j1", failure(exit_codes("FailJob", "In", json!([0, 1]))))),
            ("unordered exit codes", job("j2", failure(exit_codes("FailJob", "In", json!([3, 1]))))),
            ("repeated exit codes", job("j3", failure(exit_codes("FailJob", "In", json!([1, 1]))))),
            ("no exit codes", job("j4", failure(exit_codes("FailJob", "In", json!([]))))),
            ("an unknown operator", job("j5", failure(exit_codes("FailJob", "Between", json!([1]))))),
            ("an unknown action", job("j6", failure(exit_codes("Retry", "In", json!([1]))))),
            ("fail index without a backoff per index", job("j7", failure(exit_codes("FailIndex", "In", json!([1]))))),
            ("a rule of neither", job("j8", failure(json!([{"action": "FailJob"}])))),
            ("a rule of an unknown container", job("j9", failure(json!([{"action": "FailJob",
                "onExitCodes": {"containerName": "nope", "operator": "In", "values": [1]}}])))),
            ("a failure policy of pods restarting on failure", job("j10", json!({"podFailurePolicy": {"rules": []},
                "template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}))),
            ("a success policy", job("j11", success(json!([{"succeededIndexes": "0-1", "succeededCount": 1}])))),
            ("a success policy of a non-indexed job", job("j12", json!({"successPolicy": {"rules": [{"succeededCount": 1}]}}))),
            ("a success policy of no rules", job("j13", success(json!([])))),
            ("a success rule of nothing", job("j14", success(json!([{}])))),
            ("success indexes out of range", job("j15", success(json!([{"succeededIndexes": "1-5"}])))),
            ("success indexes badly written", job("j16", success(json!([{"succeededIndexes": "2-1"}])))),
            ("a success count above the completions", job("j17", success(json!([{"succeededCount": 4}])))),
        ]).await;
    })
    .await;
}

#[tokio::test]
async fn job_updates_keep_the_template_and_change_what_they_may_alike() {
    differential("w-job-update", async |t: &Target, r: &mut Record| {
        create_each(t, r, "jobs", vec![
            ("a suspended job", job("j0", json!({"completions": 3, "parallelism": 1}))),
            ("an indexed job", job("j1", json!({"completionMode": "Indexed", "completions": 3,
                "backoffLimitPerIndex": 1, "maxFailedIndexes": 1}))),
            ("a selector chosen by hand", job("j2", json!({"manualSelector": true,
                "selector": {"matchLabels": {"mine": "yes"}},
                "template": {"metadata": {"labels": {"mine": "yes"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}))),
            ("hand chosen without a selector", job("j3", json!({"manualSelector": true}))),
        ]).await;
        patch_each(t, r, "jobs", "j0", vec![
            ("parallelism changed", json!({"spec": {"parallelism": 3}})),
            ("completions changed", json!({"spec": {"completions": 5}})),
            ("the image changed while suspended", json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}}})),
            ("a node selector added while suspended", json!({"spec": {"template": {"spec": {"nodeSelector": {"disk": "ssd"}}}}})),
            ("the completion mode changed", json!({"spec": {"completionMode": "Indexed"}})),
            ("the backoff limit changed", json!({"spec": {"backoffLimit": 2}})),
            ("a time to live added", json!({"spec": {"ttlSecondsAfterFinished": 30}})),
            ("the pod replacement policy changed", json!({"spec": {"podReplacementPolicy": "Failed"}})),
            ("manual selection turned on", json!({"spec": {"manualSelector": true}})),
        ]).await;
        patch_each(t, r, "jobs", "j1", vec![
            ("completions changed with parallelism", json!({"spec": {"completions": 5, "parallelism": 5}})),
            ("the failed indexes raised", json!({"spec": {"maxFailedIndexes": 3}})),
            ("the backoff per index changed", json!({"spec": {"backoffLimitPerIndex": 2}})),
        ]).await;
    })
    .await;
}

#[tokio::test]
async fn cron_job_time_zones_policies_and_limits_are_checked_alike() {
    differential("w-cron", async |t: &Target, r: &mut Record| {
        let cron = |name: &str, extra: Value| {
            let mut spec = json!({"schedule": "0 3 29 2 *", "suspend": true, "jobTemplate": {"spec": {
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}});
            for (k, v) in extra.as_object().into_iter().flatten() {
                spec[k] = v.clone();
            }
            json!({"metadata": {"name": name}, "spec": spec})
        };
        create_each(t, r, "cronjobs", vec![
            ("a time zone", cron("c0", json!({"timeZone": "Europe/Berlin"}))),
            ("UTC", cron("c1", json!({"timeZone": "UTC"}))),
            ("an unknown time zone", cron("c2", json!({"timeZone": "Mars/Olympus"}))),
            ("a time zone with a space", cron("c3", json!({"timeZone": " UTC"}))),
            ("the local time zone", cron("c4", json!({"timeZone": "Local"}))),
            ("an empty time zone", cron("c5", json!({"timeZone": ""}))),
            ("an unknown concurrency policy", cron("c6", json!({"concurrencyPolicy": "Sometimes"}))),
            ("jobs replaced", cron("c7", json!({"concurrencyPolicy": "Replace", "startingDeadlineSeconds": 30}))),
            ("a negative starting deadline", cron("c8", json!({"startingDeadlineSeconds": -1}))),
            ("a negative success history", cron("c9", json!({"successfulJobsHistoryLimit": -1}))),
            ("a negative failure history", cron("c10", json!({"failedJobsHistoryLimit": -1}))),
            ("no history", cron("c11", json!({"successfulJobsHistoryLimit": 0, "failedJobsHistoryLimit": 0}))),
            ("a job template with labels", cron("c12", json!({"jobTemplate": {"metadata": {"labels": {"team": "a"}},
                "spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}))),
            ("a job template with a selector", cron("c13", json!({"jobTemplate": {"spec": {"selector": {"matchLabels": {"a": "b"}},
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}))),
            ("a name too long for its jobs", cron("c-name-that-is-fifty-three-characters-long-really-xyz", json!({}))),
        ]).await;
        patch_each(t, r, "cronjobs", "c0", vec![
            ("resumed at a new schedule", json!({"spec": {"schedule": "0 4 29 2 *", "timeZone": "Asia/Tokyo"}})),
            ("a time zone removed", json!({"spec": {"timeZone": null}})),
            ("a bad time zone set", json!({"spec": {"timeZone": "Nowhere"}})),
            ("a job template's image changed", json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {
                "containers": [{"name": "c", "image": "busybox:2"}]}}}}}})),
        ]).await;
    })
    .await;
}

#[tokio::test]
async fn autoscaler_metrics_and_behaviors_are_checked_alike() {
    differential("w-hpa", async |t: &Target, r: &mut Record| {
        let hpa = |name: &str, extra: Value| {
            let mut spec = json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 5});
            for (k, v) in extra.as_object().into_iter().flatten() {
                spec[k] = v.clone();
            }
            json!({"metadata": {"name": name}, "spec": spec})
        };
        let resource = |target: Value| json!({"metrics": [{"type": "Resource",
            "resource": {"name": "cpu", "target": target}}]});
        create_each(t, r, "horizontalpodautoscalers", vec![
            ("a memory value target", hpa("h0", json!({"metrics": [{"type": "Resource",
                "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}}]}))),
            ("a utilization of zero", hpa("h1", resource(json!({"type": "Utilization", "averageUtilization": 0})))),
            ("a utilization without its value", hpa("h2", resource(json!({"type": "Utilization"}))))
            ,
            ("an unknown target type", hpa("h3", resource(json!({"type": "Percent", "averageUtilization": 50})))),
            ("an unknown metric type", hpa("h4", json!({"metrics": [{"type": "Custom"}]}))),
            ("a pods metric", hpa("h5", json!({"metrics": [{"type": "Pods", "pods": {
                "metric": {"name": "requests"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]}))),
            ("a resource metric without its source", hpa("h6", json!({"metrics": [{"type": "Resource"}]}))),
            ("zero minimum replicas", hpa("h7", json!({"minReplicas": 0}))),
            ("a target without a name", hpa("h8", json!({"scaleTargetRef": {"kind": "Deployment"}}))),
            ("a scale-down behavior", hpa("h9", json!({"behavior": {"scaleDown": {"stabilizationWindowSeconds": 60,
                "selectPolicy": "Min", "policies": [{"type": "Pods", "value": 1, "periodSeconds": 30}]}}}))),
            ("a window too long", hpa("h10", json!({"behavior": {"scaleUp": {"stabilizationWindowSeconds": 3601}}}))),
            ("an unknown select policy", hpa("h11", json!({"behavior": {"scaleUp": {"selectPolicy": "Avg"}}}))),
            ("a policy of zero value", hpa("h12", json!({"behavior": {"scaleUp": {"policies": [
                {"type": "Percent", "value": 0, "periodSeconds": 15}]}}}))),
            ("a policy period too long", hpa("h13", json!({"behavior": {"scaleUp": {"policies": [
                {"type": "Pods", "value": 1, "periodSeconds": 1801}]}}}))),
            ("a tolerance", hpa("h14", json!({"behavior": {"scaleUp": {"tolerance": "0.05"}}}))),
        ]).await;
    })
    .await;
}

#[tokio::test]
async fn disruption_budgets_selectors_and_eviction_policies_are_checked_alike() {
    differential("w-pdb", async |t: &Target, r: &mut Record| {
        let pdb = |name: &str, spec: Value| json!({"metadata": {"name": name}, "spec": spec});
        let app = json!({"matchLabels": {"app": "x"}});
        create_each(
            t,
            r,
            "poddisruptionbudgets",
            vec![
                (
                    "a count",
                    pdb("p0", json!({"minAvailable": 2, "selector": app})),
                ),
                (
                    "unhealthy pods always allowed",
                    pdb(
                        "p1",
                        json!({"maxUnavailable": 1, "selector": app,
                "unhealthyPodEvictionPolicy": "AlwaysAllow"}),
                    ),
                ),
                (
                    "an unknown eviction policy",
                    pdb(
                        "p2",
                        json!({"maxUnavailable": 1, "selector": app,
                "unhealthyPodEvictionPolicy": "Never"}),
                    ),
                ),
                ("no selector", pdb("p3", json!({"minAvailable": 1}))),
                (
                    "an empty selector",
                    pdb("p4", json!({"minAvailable": 1, "selector": {}})),
                ),
                (
                    "a selector of a bad operator",
                    pdb(
                        "p5",
                        json!({"minAvailable": 1, "selector": {"matchExpressions": [
                {"key": "app", "operator": "Like", "values": ["x"]}]}}),
                    ),
                ),
                (
                    "a selector of a bad label",
                    pdb(
                        "p6",
                        json!({"minAvailable": 1, "selector": {"matchLabels": {"a b": "x"}}}),
                    ),
                ),
                ("neither bound", pdb("p7", json!({"selector": app}))),
                (
                    "a negative count",
                    pdb("p8", json!({"minAvailable": -1, "selector": app})),
                ),
                (
                    "above 100%",
                    pdb("p9", json!({"maxUnavailable": "101%", "selector": app})),
                ),
                (
                    "a percentage of a bad shape",
                    pdb("p10", json!({"minAvailable": "ten%", "selector": app})),
                ),
            ],
        )
        .await;
        patch_each(
            t,
            r,
            "poddisruptionbudgets",
            "p0",
            vec![
                ("the count raised", json!({"spec": {"minAvailable": 3}})),
                (
                    "switched to unavailable",
                    json!({"spec": {"minAvailable": null, "maxUnavailable": "30%"}}),
                ),
                (
                    "the selector changed",
                    json!({"spec": {"selector": {"matchLabels": {"app": "y"}}}}),
                ),
                (
                    "the eviction policy set",
                    json!({"spec": {"unhealthyPodEvictionPolicy": "IfHealthyBudget"}}),
                ),
            ],
        )
        .await;
    })
    .await;
}

/// Runs each kubectl command line of `lines` (arguments split at spaces outside single
/// quotes) on `t` and records what it said (see [`kubectl_text`]).
async fn kubectl_each(t: &Target, r: &mut Record, lines: &[&str]) {
    for line in lines {
        let args = split_args(line);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let says = kubectl_says(&kubectl(t, &args, String::new()).await);
        let text = |stream: &str| kubectl_text(says[stream].as_str().unwrap_or_default(), &t.ns);
        r.push(
            line,
            json!({"stdout": text("stdout"), "stderr": text("stderr"), "success": says["success"]}),
        );
    }
}

#[tokio::test]
async fn kubectl_changes_deployments_alike() {
    differential("w-kubectl-deploy", async |t: &Target, r: &mut Record| {
        let spec = "get deployment web -o 'jsonpath={.spec.replicas} {.spec.paused} {.spec.template.spec.containers[*].image} {.metadata.labels} {.spec.template.metadata.annotations}'";
        kubectl_each(t, r, &[
            "create deployment web --image=nginx:1 --replicas=0 --port=80",
            spec,
            "scale deployment web --replicas=0 --current-replicas=2",
            "scale deployment web --replicas=-1",
            "set image deployment/web web=nginx:2",
            "set image deployment/web missing=nginx:2",
            "label deployment web tier=front",
            "label deployment web tier=back",
            "label deployment web tier=back --overwrite",
            "annotate deployment web owner=team-a",
            "annotate deployment web owner=team-b --overwrite",
            r#"patch deployment web --type=json -p '[{"op":"replace","path":"/spec/revisionHistoryLimit","value":3}]'"#,
            r#"patch deployment web --type=json -p '[{"op":"test","path":"/spec/revisionHistoryLimit","value":4}]'"#,
            r#"patch deployment web --type=merge -p '{"spec":{"minReadySeconds":5}}'"#,
            r#"patch deployment web -p '{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"A","value":"1"}]}]}}}}'"#,
            r#"patch deployment web --type=merge -p '{"spec":{"strategy":{"rollingUpdate":{"maxSurge":0,"maxUnavailable":0}}}}'"#,
            "rollout pause deployment/web",
            "rollout pause deployment/web",
            "rollout resume deployment/web",
            "rollout resume deployment/web",
            spec,
            "get deployment web -o 'jsonpath={.spec.revisionHistoryLimit} {.spec.minReadySeconds} {.spec.template.spec.containers[0].env}'",
            "create deployment web --image=nginx",
            "create deployment Bad --image=nginx",
        ]).await;
        // The restart's time is the client's: where it is set is compared.
        let out = kubectl(t, &["rollout", "restart", "deployment/web"], String::new()).await;
        r.push("rollout restart", kubectl_says(&out));
        let restarted = t.on("deployments").get("web").await.map(|d| {
            let annotations = &d["spec"]["template"]["metadata"]["annotations"];
            json!(annotations.as_object().into_iter().flatten().map(|(k, v)| (k.clone(), v.is_string())).collect::<BTreeMap<_, _>>())
        });
        r.answer("the restart's annotation", restarted);
    })
    .await;
}

#[tokio::test]
async fn kubectl_creates_and_shows_jobs_services_and_secrets_alike() {
    differential("w-kubectl-create", async |t: &Target, r: &mut Record| {
        kubectl_each(t, r, &[
            "create job once --image=busybox -- echo hi",
            "get job once -o 'jsonpath={.spec.completions} {.spec.parallelism} {.spec.backoffLimit} {.spec.template.spec.restartPolicy} {.spec.template.spec.containers[0].command}'",
            "create cronjob tick --image=busybox --schedule=0 3 29 2 * --restart=Never",
            "create cronjob tock --image=busybox --schedule=0_3_29_2_* --restart=Always",
            "get cronjob tick -o 'jsonpath={.spec.concurrencyPolicy} {.spec.successfulJobsHistoryLimit} {.spec.jobTemplate.spec.template.spec.restartPolicy}'",
            "patch cronjob tick -p '{\"spec\":{\"suspend\":true}}'",
            "create service clusterip db --clusterip=None --tcp=5432",
            "get service db -o 'jsonpath={.spec.clusterIP} {.spec.ports}'",
            "create service externalname ext --external-name=db.example.com",
            "get service ext -o 'jsonpath={.spec.type} {.spec.externalName}'",
            "create secret generic creds --from-literal=user=u --from-literal=pass=p --type=kubernetes.io/basic-auth",
            "create secret generic plain --from-literal=k=v",
            "create secret docker-registry pull --docker-server=r.example --docker-username=u --docker-password=p",
            "get secret pull -o 'jsonpath={.type}'",
            "create deployment web --image=nginx:1 --replicas=0",
            "get deployments -o wide",
            "get jobs -o wide",
            "get cronjobs -o wide",
            "get deployment web -o 'jsonpath={.spec.strategy} {.spec.selector}'",
            "label job once team=a",
            "annotate cronjob tick note=x",
            "set image job/once once=busybox:2",
            "delete cronjob tick",
            "delete job once",
        ]).await;
    })
    .await;
}

#[tokio::test]
async fn server_side_apply_of_workloads_owns_and_conflicts_alike() {
    differential("w-apply", async |t: &Target, r: &mut Record| {
        let deployments = t.on("deployments");
        let mut body = workload("Deployment", "web", json!({}));
        body["apiVersion"] = json!("apps/v1");
        body["kind"] = json!("Deployment");
        r.answer("applied", spec_only(deployments.apply("web", ("ci", false, None), body.clone()).await));
        let mut scaled = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"}, "spec": {"replicas": 0, "minReadySeconds": 3}});
        r.answer("another manager sets the ready time", spec_only(deployments.apply("web", ("hpa", false, None), scaled.clone()).await));
        body["spec"]["minReadySeconds"] = json!(1);
        r.answer("a conflicting ready time", spec_only(deployments.apply("web", ("ci", false, None), body.clone()).await));
        r.answer("forced", spec_only(deployments.apply("web", ("ci", true, None), body.clone()).await));
        scaled["spec"]["strategy"] = json!({"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}});
        r.answer("an invalid strategy applied", spec_only(deployments.apply("web", ("hpa", false, None), scaled).await));
        let mut image = body.clone();
        image["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
        r.answer("the image applied", spec_only(deployments.apply("web", ("ci", false, None), image).await));
        let owners = deployments.get("web").await.map(|d| {
            json!(d["metadata"]["managedFields"].as_array().into_iter().flatten()
                .map(|m| json!([m["manager"], m["operation"], m["fieldsV1"]["f:spec"].as_object().map(|s| s.keys().cloned().collect::<Vec<_>>())]).to_string())
                .collect::<BTreeSet<_>>())
        });
        r.answer("who owns the spec", owners);
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
            "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
        r.answer("a job applied", spec_only(t.on("jobs").apply("once", ("ci", false, None), job.clone()).await));
        r.mask_uids_of_last();
        let mut changed = job;
        changed["spec"]["completions"] = json!(3);
        r.answer("its completions applied", spec_only(t.on("jobs").apply("once", ("ci", false, None), changed).await));
        r.mask_uids_of_last();
    })
    .await;
}
