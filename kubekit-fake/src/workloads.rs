//! What the real server defaults in Pods and in the workloads the fake serves that hold a
//! Pod template (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs,
//! ReplicationControllers), as
//! the differential suite compares it (`pods_and_workloads_are_defaulted_alike`,
//! `stateful_sets_daemon_sets_jobs_and_revisions_are_defaulted_and_checked_alike`):
//!
//! - every Pod spec: `dnsPolicy`, `restartPolicy`, `schedulerName`, `securityContext`,
//!   `terminationGracePeriodSeconds`; each container's and init container's
//!   `imagePullPolicy` (from the image's tag), termination message path and policy,
//!   `resources`, ports' protocol, probes' periods, thresholds and HTTP path and scheme,
//!   `fieldRef.apiVersion`; volumes' `defaultMode` and a host path's `type`, and an
//!   `emptyDir` for a volume of no source;
//! - a Pod itself also: `enableServiceLinks`, requests copied from limits, pod-level
//!   requests (from the containers' or the pod-level limits), and on create
//!   a status of `phase: Pending` with its QoS class; and on create, after its fields are
//!   recorded in managedFields as admission comes after them on the real server
//!   ([`admit`]): the priority of its priority class (the system ones, or the default 0;
//!   another is refused) and the preemption policy, and the two `NoExecute` tolerations
//!   the `DefaultTolerationSeconds` admission plugin adds;
//! - the workloads' own fields (replicas, strategies, history limits, progress deadline; a
//!   StatefulSet's pod management and claim retention policies and service name; a Job's
//!   completions, parallelism, backoff limit, completion mode, suspension, pod replacement
//!   policy and `manualSelector`, and its labels, when it has none, from its template; a
//!   CronJob's concurrency policy, suspension and history limits; a ReplicationController's
//!   replicas, and its selector and labels from its template's labels when it has none)
//!   and, on create, the
//!   empty status the real server starts them with (its zero counters, as Go encodes
//!   them);
//! - after the fields of a create are recorded ([`admit`]): a Job's generated selector and
//!   labels, a DaemonSet's first template generation; on update, the template generation
//!   is bumped when the template changes.
//!
//! Values that are not of the expected shape are left as they are (the server would
//! refuse to decode them); nothing here panics on a body.

use serde_json::{Map, Value, json};

/// Fills in what the real server defaults in `obj`, a built-in object of `group`/`kind`
/// being created (`old` is `None`: the status is reset the way the real server does on
/// create) or replacing `old`.
pub fn apply(group: &str, kind: &str, obj: &mut Value, old: Option<&Value>) {
    let creating = old.is_none();
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    match (group, kind) {
        ("", "Pod") => {
            if let Some(spec) = object(root, "spec") {
                pod_spec(spec);
                pod_only(spec);
                if creating {
                    let qos = qos_class(spec);
                    root.insert(
                        "status".into(),
                        json!({"phase": "Pending", "qosClass": qos}),
                    );
                }
            }
        }
        ("apps", "Deployment") => workload(root, creating, json!({}), |spec| {
            // `paused` is omitted when false.
            if spec.get("paused") == Some(&json!(false)) {
                spec.remove("paused");
            }
            default(spec, "replicas", json!(1));
            default(spec, "revisionHistoryLimit", json!(10));
            default(spec, "progressDeadlineSeconds", json!(600));
            if let Some(strategy) = object_or_new(spec, "strategy") {
                default(strategy, "type", json!("RollingUpdate"));
                if strategy.get("type") == Some(&json!("RollingUpdate"))
                    && let Some(rolling) = object_or_new(strategy, "rollingUpdate")
                {
                    default(rolling, "maxUnavailable", json!("25%"));
                    default(rolling, "maxSurge", json!("25%"));
                }
            }
        }),
        ("apps", "ReplicaSet") => workload(root, creating, json!({"replicas": 0}), |spec| {
            default(spec, "replicas", json!(1));
        }),
        ("", "ReplicationController") => {
            // Its selector, and its own labels, are its template's labels when it has none.
            let labels = root
                .get("spec")
                .map(|spec| spec["template"]["metadata"]["labels"].clone())
                .filter(Value::is_object);
            if let Some(labels) = labels {
                let empty =
                    |v: Option<&Value>| v.and_then(Value::as_object).is_none_or(Map::is_empty);
                if let Some(spec) = object(root, "spec")
                    && empty(spec.get("selector"))
                {
                    spec.insert("selector".into(), labels.clone());
                }
                if let Some(metadata) = object_or_new(root, "metadata")
                    && empty(metadata.get("labels"))
                {
                    metadata.insert("labels".into(), labels);
                }
            }
            workload(root, creating, json!({"replicas": 0}), |spec| {
                default(spec, "replicas", json!(1));
            });
        }
        ("apps", "StatefulSet") => {
            let status = json!({"availableReplicas": 0, "replicas": 0});
            workload(root, creating, status, |spec| {
                default(spec, "podManagementPolicy", json!("OrderedReady"));
                default(spec, "replicas", json!(1));
                default(spec, "revisionHistoryLimit", json!(10));
                default(spec, "serviceName", json!(""));
                // Claim templates are defaulted as PersistentVolumeClaims are.
                for claim in objects(spec, "volumeClaimTemplates") {
                    default(claim, "apiVersion", json!("v1"));
                    default(claim, "kind", json!("PersistentVolumeClaim"));
                    if let Some(claim_spec) = object_or_new(claim, "spec") {
                        default(claim_spec, "volumeMode", json!("Filesystem"));
                    }
                    default(claim, "status", json!({"phase": "Pending"}));
                }
                if let Some(policy) = object_or_new(spec, "persistentVolumeClaimRetentionPolicy") {
                    default(policy, "whenDeleted", json!("Retain"));
                    default(policy, "whenScaled", json!("Retain"));
                }
                if let Some(strategy) = object_or_new(spec, "updateStrategy") {
                    if strategy.get("type").is_none_or(Value::is_null) {
                        strategy.insert("type".into(), json!("RollingUpdate"));
                        default(strategy, "rollingUpdate", json!({}));
                    }
                    if strategy.get("type") == Some(&json!("RollingUpdate"))
                        && let Some(rolling) = object(strategy, "rollingUpdate")
                    {
                        default(rolling, "partition", json!(0));
                        default(rolling, "maxUnavailable", json!(1));
                    }
                }
            });
        }
        ("apps", "DaemonSet") => {
            let status = json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0,
                                "numberMisscheduled": 0, "numberReady": 0});
            workload(root, creating, status, |spec| {
                default(spec, "revisionHistoryLimit", json!(10));
                if let Some(strategy) = object_or_new(spec, "updateStrategy") {
                    default(strategy, "type", json!("RollingUpdate"));
                    if strategy.get("type") == Some(&json!("RollingUpdate"))
                        && let Some(rolling) = object_or_new(strategy, "rollingUpdate")
                    {
                        default(rolling, "maxUnavailable", json!(1));
                        default(rolling, "maxSurge", json!(0));
                    }
                }
            });
            if let Some(old) = old {
                template_generation(root, old);
            }
        }
        ("batch", "Job") => {
            workload(root, creating, json!({}), job_spec);
            job_labels(root);
        }
        ("batch", "CronJob") => workload(root, creating, json!({}), |spec| {
            default(spec, "concurrencyPolicy", json!("Allow"));
            default(spec, "suspend", json!(false));
            default(spec, "successfulJobsHistoryLimit", json!(3));
            default(spec, "failedJobsHistoryLimit", json!(1));
            if let Some(job) = object(spec, "jobTemplate") {
                default(job, "metadata", json!({}));
                if let Some(job_spec) = object(job, "spec") {
                    template(job_spec);
                }
            }
        }),
        _ => {}
    }
}

/// A Job's labels, when it has none: its template's (generated ones added on create, see
/// [`admit`]).
fn job_labels(root: &mut Map<String, Value>) {
    let template_labels = root
        .get("spec")
        .and_then(|s| s.pointer("/template/metadata/labels"))
        .filter(|l| l.is_object())
        .cloned();
    if let (Some(labels), Some(meta)) = (template_labels, object(root, "metadata"))
        && meta
            .get("labels")
            .is_none_or(|l| l.as_object().is_none_or(Map::is_empty))
    {
        meta.insert("labels".into(), labels);
    }
}

/// `SetDefaults_Job` of a Job's spec.
fn job_spec(spec: &mut Map<String, Value>) {
    let unset = |spec: &Map<String, Value>, key: &str| spec.get(key).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    default(spec, "parallelism", json!(1));
    let backoff = match unset(spec, "backoffLimitPerIndex") {
        true => 6,
        false => i32::MAX,
    };
    default(spec, "backoffLimit", json!(backoff));
    default(spec, "completionMode", json!("NonIndexed"));
    default(spec, "suspend", json!(false));
    let replacement = match unset(spec, "podFailurePolicy") {
        true => "TerminatingOrFailed",
        false => "Failed",
    };
    default(spec, "podReplacementPolicy", json!(replacement));
    default(spec, "manualSelector", json!(false));
}

/// The annotation that holds a DaemonSet's template generation.
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// A DaemonSet's template generation on update: `old`'s, plus one when the template
/// changed (whatever the update says).
fn template_generation(root: &mut Map<String, Value>, old: &Value) {
    let was = old["metadata"]["annotations"][TEMPLATE_GENERATION]
        .as_str()
        .and_then(|g| g.parse::<i64>().ok())
        .unwrap_or(0);
    let changed = root.get("spec").map(|s| &s["template"]) != Some(&old["spec"]["template"]);
    let generation = was + i64::from(changed);
    if let Some(annotations) =
        object(root, "metadata").and_then(|m| object_or_new(m, "annotations"))
    {
        annotations.insert(TEMPLATE_GENERATION.into(), json!(generation.to_string()));
    }
}

/// A workload: its spec's own defaults (`defaults`), its Pod template's, and on create
/// `status`.
fn workload(
    root: &mut Map<String, Value>,
    creating: bool,
    status: Value,
    defaults: impl FnOnce(&mut Map<String, Value>),
) {
    if creating {
        root.insert("status".into(), status);
    }
    if let Some(spec) = object(root, "spec") {
        defaults(spec);
        template(spec);
    }
}

/// The Pod template of a workload's spec.
fn template(spec: &mut Map<String, Value>) {
    if let Some(template) = object(spec, "template") {
        default(template, "metadata", json!({}));
        if let Some(pod) = object(template, "spec") {
            pod_spec(pod);
        }
    }
}

/// `SetDefaults_PodSpec` and what it defaults in containers and volumes.
fn pod_spec(spec: &mut Map<String, Value>) {
    default(spec, "dnsPolicy", json!("ClusterFirst"));
    default(spec, "restartPolicy", json!("Always"));
    default(spec, "schedulerName", json!("default-scheduler"));
    default(spec, "securityContext", json!({}));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    for list in ["containers", "initContainers"] {
        for container in objects(spec, list) {
            self::container(container);
        }
    }
    for volume in objects(spec, "volumes") {
        // A volume of no source is an empty directory.
        if !crate::pod_spec::has_source(&Value::Object(volume.clone())) {
            volume.insert("emptyDir".into(), json!({}));
        }
        for source in ["configMap", "secret", "projected", "downwardAPI"] {
            if let Some(source) = object(volume, source) {
                default(source, "defaultMode", json!(420));
            }
        }
        if let Some(items) = object(volume, "downwardAPI") {
            for item in objects(items, "items") {
                field_ref(item);
            }
        }
        if let Some(host_path) = object(volume, "hostPath") {
            default(host_path, "type", json!(""));
        }
    }
}

/// What the real server defaults in a container.
fn container(c: &mut Map<String, Value>) {
    if let Some(image) = c.get("image").and_then(Value::as_str) {
        let policy = if image_tag(image) == Some("latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        default(c, "imagePullPolicy", json!(policy));
    }
    default(c, "terminationMessagePath", json!("/dev/termination-log"));
    default(c, "terminationMessagePolicy", json!("File"));
    default(c, "resources", json!({}));
    for port in objects(c, "ports") {
        default(port, "protocol", json!("TCP"));
    }
    for env in objects(c, "env") {
        if let Some(from) = object(env, "valueFrom") {
            field_ref(from);
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = object(c, probe) {
            default(probe, "timeoutSeconds", json!(1));
            default(probe, "periodSeconds", json!(10));
            default(probe, "successThreshold", json!(1));
            default(probe, "failureThreshold", json!(3));
            if let Some(http) = object(probe, "httpGet") {
                default(http, "path", json!("/"));
                default(http, "scheme", json!("HTTP"));
            }
        }
    }
}

/// A `fieldRef`'s `apiVersion` (`v1`) in `holder`.
fn field_ref(holder: &mut Map<String, Value>) {
    if let Some(field) = object(holder, "fieldRef") {
        default(field, "apiVersion", json!("v1"));
    }
}

/// The tag an image reference pulls: its own, none for a digest, `latest` when it names
/// neither (how the real server picks the pull policy).
fn image_tag(image: &str) -> Option<&str> {
    if image.contains('@') {
        return None;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    Some(last.split_once(':').map_or("latest", |(_, tag)| tag))
}

/// The priority classes every cluster is bootstrapped with: name, value and description.
pub const SYSTEM_PRIORITY_CLASSES: &[(&str, i64, &str)] = &[
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// What the real server adds to an object being created after the write's fields are
/// recorded (so no manager owns them): to a Pod, by admission, the priority and
/// preemption policy of its priority class among `classes` (the stored PriorityClasses;
/// without a name, the global default one with the lowest value, else priority 0), and
/// the `DefaultTolerationSeconds` tolerations (an unknown class, or a priority or policy
/// of the Pod's own that differs from its class's, is refused with the reason the real
/// server gives); to a Job, its generated
/// selector and labels (see [`generate_job_selector`]); to a DaemonSet, its first
/// template generation (the `deprecated.daemonset.template.generation` annotation).
pub fn admit(group: &str, kind: &str, obj: &mut Value, classes: &[Value]) -> Result<(), String> {
    match (group, kind) {
        ("", "Pod") => admit_pod(obj, classes),
        ("batch", "Job") => {
            generate_job_selector(obj);
            // As the object read back from storage is defaulted.
            if let Some(root) = obj.as_object_mut() {
                job_labels(root);
            }
            Ok(())
        }
        ("apps", "DaemonSet") => {
            // The first template generation, unless the object names a later one.
            let Some(meta) = obj
                .as_object_mut()
                .and_then(|root| object(root, "metadata"))
            else {
                return Ok(());
            };
            if let Some(annotations) = object_or_new(meta, "annotations") {
                let given = annotations
                    .get(TEMPLATE_GENERATION)
                    .and_then(Value::as_str)
                    .and_then(|g| g.parse::<i64>().ok());
                let generation = given.unwrap_or(0).max(1).to_string();
                annotations.insert(TEMPLATE_GENERATION.into(), json!(generation));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The label of the uid of the Job that made a Pod; its selector selects it.
pub const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
/// The label of the name of the Job that made a Pod.
pub const JOB_NAME: &str = "batch.kubernetes.io/job-name";

/// A Job's generated selector (unless `manualSelector`): its template gets the labels of
/// its name and uid (also without the `batch.kubernetes.io/` prefix), each unless it has
/// one, and so do the Job's own labels when they are the template's; its selector selects
/// the uid. A selector that selects something else is refused by validation.
fn generate_job_selector(obj: &mut Value) {
    let name = obj["metadata"]["name"].clone();
    let uid = obj["metadata"]["uid"].clone();
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let shared = {
        let own = root.get("metadata").map(|m| &m["labels"]);
        let template = root
            .get("spec")
            .map(|s| &s["template"]["metadata"]["labels"]);
        own.is_some_and(|l| l.is_object()) && own == template
    };
    let Some(spec) = object(root, "spec") else {
        return;
    };
    if spec.get("manualSelector") == Some(&json!(true)) {
        return;
    }
    let generated = [
        ("job-name", &name),
        (JOB_NAME, &name),
        ("controller-uid", &uid),
        (CONTROLLER_UID, &uid),
    ];
    let add = |labels: &mut Map<String, Value>| {
        for (key, value) in generated {
            default(labels, key, value.clone());
        }
    };
    let template_labels = object(spec, "template")
        .and_then(|t| object_or_new(t, "metadata"))
        .and_then(|m| object_or_new(m, "labels"));
    if let Some(labels) = template_labels {
        add(labels);
    }
    if let Some(selector) = object_or_new(spec, "selector")
        && let Some(match_labels) = object_or_new(selector, "matchLabels")
    {
        default(match_labels, CONTROLLER_UID, uid.clone());
    }
    if shared && let Some(labels) = object(root, "metadata").and_then(|m| object(m, "labels")) {
        add(labels);
    }
}

/// [`admit`] of a Pod.
fn admit_pod(obj: &mut Value, classes: &[Value]) -> Result<(), String> {
    let Some(spec) = obj.as_object_mut().and_then(|root| object(root, "spec")) else {
        return Ok(());
    };
    let named = spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty());
    let class = match named {
        Some(name) => Some(
            classes
                .iter()
                .find(|c| c["metadata"]["name"] == name)
                .ok_or_else(|| format!("no PriorityClass with name {name} was found"))?,
        ),
        None => classes
            .iter()
            .filter(|c| c["globalDefault"] == true)
            .min_by_key(|c| c["value"].as_i64().unwrap_or_default()),
    };
    let (name, priority, policy) = match class {
        Some(c) => (
            c["metadata"]["name"].clone(),
            c["value"].as_i64().unwrap_or_default(),
            c["preemptionPolicy"]
                .as_str()
                .unwrap_or("PreemptLowerPriority"),
        ),
        None => (Value::Null, 0, "PreemptLowerPriority"),
    };
    if let Some(given) = spec.get("priority").and_then(Value::as_i64)
        && given != priority
    {
        return Err(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
        ));
    }
    if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str)
        && given != policy
    {
        return Err(format!(
            "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
        ));
    }
    if named.is_none() && name.is_string() {
        spec.insert("priorityClassName".into(), name);
    }
    spec.insert("priority".into(), json!(priority));
    spec.insert("preemptionPolicy".into(), json!(policy));
    default_tolerations(spec);
    Ok(())
}

/// The `DefaultTolerationSeconds` admission plugin, on a Pod's creation and updates: a
/// Pod that tolerates neither a not-ready nor an unreachable node (a toleration of the
/// key, or of every key, with the `NoExecute` effect or every effect) tolerates each
/// for 300 seconds.
fn default_tolerations(spec: &mut Map<String, Value>) {
    let Some(tolerations) = array_or_new(spec, "tolerations") else {
        return;
    };
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        let tolerated = tolerations.iter().any(|t| {
            let any_key = t["key"].as_str().is_none_or(str::is_empty);
            let any_effect = t["effect"].as_str().is_none_or(str::is_empty);
            (t["key"] == json!(key) || any_key) && (t["effect"] == json!("NoExecute") || any_effect)
        });
        if !tolerated {
            tolerations.push(json!({"key": key, "operator": "Exists",
                                    "effect": "NoExecute", "tolerationSeconds": 300}));
        }
    }
}

/// What admission adds to an update of a built-in `kind` of `group` (not of a
/// subresource): a Pod's default tolerations.
pub fn admit_update(group: &str, kind: &str, obj: &mut Value) {
    if (group, kind) == ("", "Pod")
        && let Some(spec) = obj.as_object_mut().and_then(|root| object(root, "spec"))
    {
        default_tolerations(spec);
    }
}

/// What a Pod's spec gets beyond a template's defaults: service links, requests copied
/// from limits, and pod-level requests (see [`pod_level_requests`]).
fn pod_only(spec: &mut Map<String, Value>) {
    default(spec, "enableServiceLinks", json!(true));
    // `serviceAccount` is the deprecated name of `serviceAccountName`, read when the new
    // one is not given and always shown alike.
    let named = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
    };
    if let Some(account) =
        named(spec.get("serviceAccountName")).or(named(spec.get("serviceAccount")))
    {
        spec.insert("serviceAccountName".into(), json!(account));
        spec.insert("serviceAccount".into(), json!(account));
    }
    pod_level_requests(spec);
    for list in ["containers", "initContainers"] {
        for container in objects(spec, list) {
            let Some(resources) = object(container, "resources") else {
                continue;
            };
            let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else {
                continue;
            };
            if let Some(requests) = object_or_new(resources, "requests") {
                for (name, limit) in limits {
                    requests.entry(name).or_insert(limit);
                }
            }
        }
    }
}

/// With pod-level limits, each pod-level request of CPU or memory not given is the
/// containers' requests of it (their sum, or the largest of an init container's when
/// greater), else the pod-level limit, as the real server defaults it. The containers'
/// requests are added up only when each is written alike (`10m` and `20m` make `30m`);
/// otherwise the request stays unset.
fn pod_level_requests(spec: &mut Map<String, Value>) {
    let containers: Vec<Value> = ["containers", "initContainers"]
        .into_iter()
        .map(|list| spec.get(list).cloned().unwrap_or(Value::Null))
        .collect();
    let Some(resources) = object(spec, "resources") else {
        return;
    };
    let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    if limits.is_empty() {
        return;
    }
    let Some(requests) = object_or_new(resources, "requests") else {
        return;
    };
    for name in ["cpu", "memory"] {
        if requests.contains_key(name) {
            continue;
        }
        let total = containers_request(&containers[0], &containers[1], name);
        if let Some(total) = total.or_else(|| limits.get(name).cloned()) {
            requests.insert(name.into(), total);
        }
    }
}

/// The containers' request of `name`: the sum of the regular containers', or the largest
/// init container's when greater; `None` when none asks for it or the amounts are not
/// written alike.
fn containers_request(containers: &Value, init: &Value, name: &str) -> Option<Value> {
    let amounts = |list: &Value| -> Vec<String> {
        list.as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| {
                c["resources"]["requests"][name]
                    .as_str()
                    .map(str::to_string)
            })
            .collect()
    };
    let (regular, init) = (amounts(containers), amounts(init));
    let sum = add_alike(&regular);
    let largest_init = init.iter().max_by(|a, b| {
        let (a, b) = (quantity(a).unwrap_or(0.0), quantity(b).unwrap_or(0.0));
        a.total_cmp(&b)
    });
    match (sum, largest_init) {
        (None, None) => None,
        (Some(s), Some(i)) if quantity(i) > quantity(&s) => Some(json!(i)),
        (Some(s), _) => Some(json!(s)),
        (None, Some(i)) if regular.is_empty() => Some(json!(i)),
        (None, Some(_)) => None,
    }
}

/// Quantities written alike (`10m`, `20m`) added up (`30m`); `None` for none or unlike.
fn add_alike(amounts: &[String]) -> Option<String> {
    let split = |a: &str| {
        let at = a.find(|c: char| !c.is_ascii_digit()).unwrap_or(a.len());
        let (n, suffix) = a.split_at(at);
        let unit = suffix.chars().all(|c| c.is_ascii_alphabetic());
        unit.then(|| Some((n.parse::<u64>().ok()?, suffix.to_string())))?
    };
    let parts: Vec<(u64, String)> = amounts.iter().map(|a| split(a)).collect::<Option<_>>()?;
    let suffix = &parts.first()?.1;
    if parts.iter().any(|(_, s)| s != suffix) {
        return None;
    }
    Some(format!(
        "{}{suffix}",
        parts.iter().map(|(n, _)| n).sum::<u64>()
    ))
}

/// The QoS class of a Pod spec (apimachinery's `ComputePodQOS` over CPU and memory): by
/// the pod-level resources when they name CPU or memory, else by the containers'.
fn qos_class(spec: &Map<String, Value>) -> &'static str {
    let pod_level = spec.get("resources").filter(|r| {
        !compute_resources(&r["requests"]).is_empty() || !compute_resources(&r["limits"]).is_empty()
    });
    if let Some(resources) = pod_level {
        let (requests, limits) = (
            compute_resources(&resources["requests"]),
            compute_resources(&resources["limits"]),
        );
        let class = |name: &str| {
            let amount = |list: &[(&str, f64)]| {
                list.iter()
                    .find(|(n, _)| *n == name)
                    .map_or(0.0, |(_, a)| *a)
            };
            match (amount(&requests), amount(&limits)) {
                (r, l) if r != l => "Burstable",
                (0.0, _) => "BestEffort",
                _ => "Guaranteed",
            }
        };
        return match (class("cpu"), class("memory")) {
            (a, b) if a == b => a,
            _ => "Burstable",
        };
    }
    let mut requests: Vec<(&str, f64)> = Vec::new();
    let mut limits: Vec<(&str, f64)> = Vec::new();
    let mut guaranteed = true;
    let containers = ["containers", "initContainers"]
        .into_iter()
        .filter_map(|list| spec.get(list).and_then(Value::as_array))
        .flatten();
    for c in containers {
        let resources = &c["resources"];
        for (name, amount) in compute_resources(&resources["requests"]) {
            add(&mut requests, name, amount);
        }
        let found = compute_resources(&resources["limits"]);
        let has = |n: &str| found.iter().any(|(name, _)| *name == n);
        if !(has("cpu") && has("memory")) {
            guaranteed = false;
        }
        for (name, amount) in found {
            add(&mut limits, name, amount);
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    let equal = requests
        .iter()
        .all(|(name, r)| limits.iter().any(|(n, l)| n == name && l == r));
    if guaranteed && equal && requests.len() == limits.len() {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// The positive CPU and memory amounts of a resource list.
fn compute_resources(list: &Value) -> Vec<(&'static str, f64)> {
    ["cpu", "memory"]
        .into_iter()
        .filter_map(|name| {
            let amount = quantity(list[name].as_str()?)?;
            (amount > 0.0).then_some((name, amount))
        })
        .collect()
}

fn add(sums: &mut Vec<(&'static str, f64)>, name: &'static str, amount: f64) {
    match sums.iter_mut().find(|(n, _)| *n == name) {
        Some((_, sum)) => *sum += amount,
        None => sums.push((name, amount)),
    }
}

/// The value of a resource quantity (`100m`, `1Gi`, `1e3`, `0.5`), if it is one.
fn quantity(text: &str) -> Option<f64> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-')))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        exponent => 10f64.powi(exponent.strip_prefix(['e', 'E'])?.parse().ok()?),
    };
    Some(number * scale)
}

/// Sets `key` to `value` unless it holds something other than `null`.
fn default(map: &mut Map<String, Value>, key: &str, value: Value) {
    let slot = map.entry(key).or_insert(Value::Null);
    if slot.is_null() {
        *slot = value;
    }
}

/// `map[key]` when it is an object.
fn object<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    map.get_mut(key).and_then(Value::as_object_mut)
}

/// `map[key]`, made an empty object when it is absent or `null`; `None` when it is
/// something else.
fn object_or_new<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    default(map, key, json!({}));
    object(map, key)
}

/// `map[key]`, made an empty array when it is absent or `null`.
fn array_or_new<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Vec<Value>> {
    default(map, key, json!([]));
    map.get_mut(key).and_then(Value::as_array_mut)
}

/// The objects of the array `map[key]`.
fn objects<'a>(
    map: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    map.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_tags_pick_the_pull_policy_like_the_real_server() {
        assert_eq!(image_tag("nginx"), Some("latest"));
        assert_eq!(image_tag("nginx:1.27"), Some("1.27"));
        assert_eq!(image_tag("localhost:5000/app"), Some("latest"));
        assert_eq!(image_tag("localhost:5000/app:v2"), Some("v2"));
        assert_eq!(image_tag("app@sha256:00"), None);
    }

    #[test]
    fn quantities_are_read_with_their_suffixes() {
        assert_eq!(quantity("100m"), Some(0.1));
        assert_eq!(quantity("1Gi"), Some(1073741824.0));
        assert_eq!(quantity("1e3"), Some(1000.0));
        assert_eq!(quantity("0.5"), Some(0.5));
        assert_eq!(quantity("1x"), None);
        assert_eq!(quantity(""), None);
    }

    #[test]
    fn qos_classes_follow_requests_and_limits() {
        let pod = |resources: Value| {
            let spec = json!({"containers": [{"name": "c", "resources": resources}]});
            spec.as_object().cloned().unwrap()
        };
        assert_eq!(qos_class(&pod(json!({}))), "BestEffort");
        let both = json!({"cpu": "1", "memory": "1Gi"});
        let guaranteed =
            pod(json!({"limits": both, "requests": {"cpu": "1000m", "memory": "1Gi"}}));
        assert_eq!(qos_class(&guaranteed), "Guaranteed");
        assert_eq!(qos_class(&pod(json!({"requests": both}))), "Burstable");
        assert_eq!(
            qos_class(&pod(json!({"limits": {"cpu": "1"}}))),
            "Burstable"
        );
        assert_eq!(
            qos_class(&pod(json!({"requests": {"cpu": "0"}}))),
            "BestEffort"
        );
    }

    #[test]
    fn bodies_of_the_wrong_shape_are_left_as_they_are() {
        for body in [
            json!("x"),
            json!({"spec": 1}),
            json!({"spec": {"containers": [1, "c", null], "volumes": {"a": 1},
                            "tolerations": "all", "template": []}}),
        ] {
            for (group, kind) in [
                ("", "Pod"),
                ("apps", "Deployment"),
                ("apps", "ReplicaSet"),
                ("apps", "StatefulSet"),
                ("apps", "DaemonSet"),
                ("batch", "Job"),
                ("batch", "CronJob"),
            ] {
                let mut obj = body.clone();
                apply(group, kind, &mut obj, None);
                let _ = admit(group, kind, &mut obj, &[]);
                apply(group, kind, &mut obj, Some(&body));
            }
        }
        let mut pod = json!({"spec": {"containers": [1], "tolerations": "all"}});
        apply("", "Pod", &mut pod, None);
        admit("", "Pod", &mut pod, &[]).expect("no priority class");
        assert_eq!(pod["spec"]["containers"], json!([1]));
        assert_eq!(pod["spec"]["tolerations"], "all");
        assert_eq!(pod["status"]["qosClass"], "BestEffort");
    }

    #[test]
    fn pod_level_requests_come_from_the_containers_or_the_limits() {
        let mut pod = json!({"spec": {
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
            "containers": [{"resources": {"requests": {"cpu": "10m"}}},
                           {"resources": {"requests": {"cpu": "20m"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "50m"}}}]}});
        apply("", "Pod", &mut pod, None);
        assert_eq!(
            pod["spec"]["resources"]["requests"],
            json!({"cpu": "50m", "memory": "1Gi"})
        );
        assert_eq!(pod["status"]["qosClass"], "Burstable");
        assert_eq!(add_alike(&["1Gi".into(), "2Gi".into()]), Some("3Gi".into()));
        assert_eq!(add_alike(&["1Gi".into(), "512Mi".into()]), None);
        assert_eq!(add_alike(&["0.5".into()]), None);
        let mut guaranteed = json!({"spec": {"resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
            "containers": [{"name": "c"}]}});
        apply("", "Pod", &mut guaranteed, None);
        assert_eq!(guaranteed["status"]["qosClass"], "Guaranteed");
    }
}
