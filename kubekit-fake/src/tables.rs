//! Server-side tables (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`): what
//! `kubectl get` prints, as kube-apiserver's printers make it.
//!
//! # Contract
//!
//! - A get or list asked as a `meta.k8s.io/v1` `Table` answers one: the resource's
//!   columns (names, types, formats and priorities as the real server's printers give
//!   them; descriptions left empty), one row per object with its cells, and the row's
//!   object per `includeObject` (`Metadata`, the default: a `PartialObjectMetadata`;
//!   `Object`; `None`), the list's resourceVersion and continue token.
//! - Columns: ConfigMaps, Secrets, Pods (ready containers, status from phase, reason,
//!   container states and deletion, restarts; IP, node, nominated node, readiness gates),
//!   Services, Deployments, ReplicaSets, StatefulSets, DaemonSets, ControllerRevisions
//!   (the controller of their owner references), Jobs (status from conditions and
//!   deletion, completions, duration), CronJobs, Namespaces, Leases, ServiceAccounts, Events (core
//!   and `events.k8s.io`), CRDs, and custom resources by their CRD's
//!   `additionalPrinterColumns` (`Age` when it has none; JSONPath of fields, indices and
//!   `[?(@.field=="value")]` filters; a value not of the column's type is empty, a date is
//!   shown as an age). Other kinds get `Name` and `Age`.
//! - Ages are the real server's human durations (`45s`, `3m20s`, `5h`, `3d`, …).

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use crate::resources::ResourceInfo;
use crate::{events, scale};

/// Whether an `Accept` header asks for a `meta.k8s.io/v1` Table first.
pub(crate) fn wanted(accept: &str) -> bool {
    accept.split(',').next().is_some_and(|first| {
        let params: Vec<&str> = first.split(';').map(str::trim).collect();
        params.contains(&"as=Table")
            && params.contains(&"g=meta.k8s.io")
            && params.contains(&"v=v1")
    })
}

/// A column: name, type, format, priority.
type Column = (String, &'static str, &'static str, u8);

fn col(name: &str, ty: &'static str, priority: u8) -> Column {
    let format = if name == "Name" { "name" } else { "" };
    (name.to_string(), ty, format, priority)
}

/// The columns of `info`'s table.
fn columns(info: &ResourceInfo, crd: Option<&Value>) -> Vec<Column> {
    let s = |n: &str| col(n, "string", 0);
    let wide = |n: &str| col(n, "string", 1);
    let int = |n: &str| col(n, "integer", 0);
    if !info.builtin {
        let mut cols = vec![s("Name")];
        for c in printer_columns(crd) {
            let ty: &'static str = match c["type"].as_str() {
                Some("integer") => "integer",
                Some("number") => "number",
                Some("boolean") => "boolean",
                Some("date") => "date",
                _ => "string",
            };
            let format: &'static str = match c["format"].as_str() {
                Some("name") => "name",
                _ => "",
            };
            let name = c["name"].as_str().unwrap_or_default().to_string();
            let priority = u8::try_from(c["priority"].as_u64().unwrap_or(0)).unwrap_or(u8::MAX);
            cols.push((name, ty, format, priority));
        }
        return cols;
    }
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "ConfigMap") => vec![s("Name"), s("Data"), s("Age")],
        ("", "Secret") => vec![s("Name"), s("Type"), s("Data"), s("Age")],
        ("", "Pod") => vec![
            s("Name"),
            s("Ready"),
            s("Status"),
            s("Restarts"),
            s("Age"),
            wide("IP"),
            wide("Node"),
            wide("Nominated Node"),
            wide("Readiness Gates"),
        ],
        ("", "Service") => vec![
            s("Name"),
            s("Type"),
            s("Cluster-IP"),
            s("External-IP"),
            s("Port(s)"),
            s("Age"),
            wide("Selector"),
        ],
        ("apps", "Deployment") => vec![
            s("Name"),
            s("Ready"),
            s("Up-to-date"),
            s("Available"),
            s("Age"),
            wide("Containers"),
            wide("Images"),
            wide("Selector"),
        ],
        ("apps", "ReplicaSet") => vec![
            s("Name"),
            int("Desired"),
            int("Current"),
            int("Ready"),
            s("Age"),
            wide("Containers"),
            wide("Images"),
            wide("Selector"),
        ],
        ("apps", "StatefulSet") => vec![
            s("Name"),
            s("Ready"),
            s("Age"),
            wide("Containers"),
            wide("Images"),
        ],
        ("apps", "DaemonSet") => vec![
            s("Name"),
            int("Desired"),
            int("Current"),
            int("Ready"),
            int("Up-to-date"),
            int("Available"),
            s("Node Selector"),
            s("Age"),
            wide("Containers"),
            wide("Images"),
            wide("Selector"),
        ],
        ("apps", "ControllerRevision") => {
            vec![s("Name"), s("Controller"), s("Revision"), s("Age")]
        }
        ("batch", "Job") => vec![
            s("Name"),
            s("Status"),
            s("Completions"),
            s("Duration"),
            s("Age"),
            wide("Containers"),
            wide("Images"),
            wide("Selector"),
        ],
        ("batch", "CronJob") => vec![
            s("Name"),
            s("Schedule"),
            s("Timezone"),
            col("Suspend", "boolean", 0),
            int("Active"),
            s("Last Schedule"),
            s("Age"),
            wide("Containers"),
            wide("Images"),
            wide("Selector"),
        ],
        ("", "Namespace") => vec![s("Name"), s("Status"), s("Age")],
        ("coordination.k8s.io", "Lease") => vec![s("Name"), s("Holder"), s("Age")],
        ("", "Event") | ("events.k8s.io", "Event") => vec![
            s("Last Seen"),
            s("Type"),
            s("Reason"),
            s("Object"),
            wide("Subobject"),
            wide("Source"),
            s("Message"),
            wide("First Seen"),
            wide("Count"),
            (String::from("Name"), "string", "name", 1),
        ],
        ("apiextensions.k8s.io", _) => vec![
            s("Name"),
            s("Scope"),
            s("Versions"),
            col("Created At", "date", 0),
            wide("Group"),
            wide("Kind"),
            wide("ShortNames"),
            col("Established", "boolean", 1),
        ],
        _ => vec![s("Name"), s("Age")],
    }
}

/// A CRD's printer columns of its storage version (`Age` when it declares none, as the
/// real server defaults them).
fn printer_columns(crd: Option<&Value>) -> Vec<Value> {
    let versions = crd.and_then(|c| c.pointer("/spec/versions")?.as_array().cloned());
    let storage = versions
        .iter()
        .flatten()
        .find(|v| v["storage"] == true)
        .and_then(|v| v["additionalPrinterColumns"].as_array().cloned());
    storage.unwrap_or_else(|| {
        vec![json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})]
    })
}

/// The table of `objects` (`list_meta`: the list's metadata).
pub(crate) fn table(
    info: &ResourceInfo,
    crd: Option<&Value>,
    objects: &[Value],
    list_meta: Value,
    include: Option<&str>,
) -> Value {
    let now = Timestamp::now();
    let mut list_meta = list_meta;
    if let Some(m) = list_meta.as_object_mut() {
        m.retain(|k, v| k != "continue" || v.as_str().is_some_and(|c| !c.is_empty()));
    }
    let cols = columns(info, crd);
    let definitions: Vec<Value> = cols
        .iter()
        .map(|(name, ty, format, priority)| {
            json!({"name": name, "type": ty, "format": format, "description": "",
                "priority": priority})
        })
        .collect();
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let mut row = json!({"cells": cells(info, crd, obj, now)});
            match include {
                Some("None") => row["object"] = Value::Null,
                Some("Object") => row["object"] = obj.clone(),
                _ => {
                    row["object"] = json!({"kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]})
                }
            }
            row
        })
        .collect();
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
        "columnDefinitions": definitions, "rows": rows})
}

/// The time since `t` (RFC 3339) as the real server's printers write it; `<unknown>`
/// without a time.
fn age(t: &Value, now: Timestamp) -> String {
    let Some(then) = t.as_str().and_then(|s| s.parse::<Timestamp>().ok()) else {
        return "<unknown>".into();
    };
    human_duration(now.as_second() - then.as_second())
}

/// apimachinery's `duration.HumanDuration` of `seconds`.
fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let (minutes, hours, days) = (seconds / 60, seconds / 3600, seconds / 86400);
    let with = |big: i64, unit: &str, small: i64, small_unit: &str| match small {
        0 => format!("{big}{unit}"),
        s => format!("{big}{unit}{s}{small_unit}"),
    };
    match () {
        _ if minutes < 10 => with(minutes, "m", seconds % 60, "s"),
        _ if minutes < 180 => format!("{minutes}m"),
        _ if hours < 8 => with(hours, "h", minutes % 60, "m"),
        _ if hours < 48 => format!("{hours}h"),
        _ if hours < 24 * 8 => with(days, "d", hours % 24, "h"),
        _ if hours < 24 * 365 * 2 => format!("{days}d"),
        _ if hours < 24 * 365 * 8 => with(days / 365, "y", days % 365, "d"),
        _ => format!("{}y", days / 365),
    }
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn len(v: &Value) -> i64 {
    v.as_object().map_or(0, Map::len) as i64
}

/// `a=b,c=d`, keys sorted; `<none>` when empty.
fn labels(v: &Value) -> String {
    match v.as_object() {
        Some(m) if !m.is_empty() => {
            let pairs: Vec<String> = m.iter().map(|(k, v)| format!("{k}={}", text(v))).collect();
            pairs.join(",")
        }
        _ => "<none>".into(),
    }
}

/// The names and the images of containers, each joined by commas.
fn containers(pod_spec: &Value) -> (String, String) {
    let list = pod_spec["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let names: Vec<String> = list.iter().map(|c| text(&c["name"])).collect();
    let images: Vec<String> = list.iter().map(|c| text(&c["image"])).collect();
    (names.join(","), images.join(","))
}

/// The cells of one object's row.
fn cells(info: &ResourceInfo, crd: Option<&Value>, o: &Value, now: Timestamp) -> Vec<Value> {
    let name = json!(o["metadata"]["name"]);
    let created = json!(age(&o["metadata"]["creationTimestamp"], now));
    if !info.builtin {
        return custom_resource_cells(crd, o, name, now);
    }
    let (spec, status) = (&o["spec"], &o["status"]);
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "ConfigMap") => vec![
            name,
            json!(len(&o["data"]) + len(&o["binaryData"])),
            created,
        ],
        ("", "Secret") => vec![name, o["type"].clone(), json!(len(&o["data"])), created],
        ("", "Pod") => pod_cells(o, name, created),
        ("", "Service") => service_cells(spec, name, created),
        ("apps", kind) if kind == "Deployment" || kind == "ReplicaSet" => {
            replicated_cells(kind, o, name, created)
        }
        ("apps", "StatefulSet") => stateful_set_cells(o, name, created),
        ("apps", "DaemonSet") => daemon_set_cells(o, name, created),
        ("apps", "ControllerRevision") => controller_revision_cells(o, name, created),
        ("batch", "Job") => job_cells(o, name, created, now),
        ("batch", "CronJob") => cron_job_cells(o, name, created, now),
        ("", "Namespace") => vec![name, status["phase"].clone(), created],
        ("coordination.k8s.io", "Lease") => {
            vec![name, json!(text(&spec["holderIdentity"])), created]
        }
        ("", "Event") => event_cells(o, now),
        ("events.k8s.io", "Event") => event_cells(&events::stored(info, o.clone()), now),
        ("apiextensions.k8s.io", _) => crd_cells(o, name),
        _ => vec![name, created],
    }
}

/// A custom resource's cells: its name, then one per additional printer column of its
/// CRD (a value not of the column's type is empty, a date is shown as an age).
fn custom_resource_cells(
    crd: Option<&Value>,
    o: &Value,
    name: Value,
    now: Timestamp,
) -> Vec<Value> {
    let mut out = vec![name];
    for c in printer_columns(crd) {
        let found = jsonpath(o, c["jsonPath"].as_str().unwrap_or_default());
        out.push(match (c["type"].as_str(), found) {
            (_, None) => Value::Null,
            (Some("string"), Some(Value::String(s))) => json!(s),
            (Some("string"), Some(other)) => json!(other.to_string()),
            (Some("integer"), Some(v)) => v.as_f64().map_or(Value::Null, |f| json!(f as i64)),
            (Some("number"), Some(v)) => v.as_f64().map_or(Value::Null, |f| json!(f)),
            (Some("boolean"), Some(v)) if v.is_boolean() => v,
            // A date is shown as the time since, `<invalid>` when it is none.
            (Some("date"), Some(Value::String(t))) => match t.parse::<Timestamp>() {
                Ok(_) => json!(age(&json!(t), now)),
                Err(_) => json!("<invalid>"),
            },
            _ => Value::Null,
        });
    }
    out
}

/// A Service's cells: its type, cluster IP, external IPs, ports and selector.
fn service_cells(spec: &Value, name: Value, created: Value) -> Vec<Value> {
    let ips = spec["clusterIPs"].as_array();
    let ip = ips.and_then(|i| i.first()).map_or("<none>".into(), text);
    let external = match spec["externalIPs"].as_array() {
        Some(e) if !e.is_empty() => e.iter().map(text).collect::<Vec<_>>().join(","),
        _ if spec["type"] == "LoadBalancer" => "<pending>".into(),
        _ if spec["type"] == "ExternalName" => text(&spec["externalName"]),
        _ => "<none>".into(),
    };
    let ports: Vec<String> = spec["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| match p["nodePort"].as_i64() {
            Some(n) if n > 0 => format!("{}:{n}/{}", p["port"], text(&p["protocol"])),
            _ => format!("{}/{}", p["port"], text(&p["protocol"])),
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".into()
    } else {
        ports.join(",")
    };
    let kind = spec["type"].clone();
    vec![
        name,
        kind,
        json!(ip),
        json!(external),
        json!(ports),
        created,
        json!(labels(&spec["selector"])),
    ]
}

/// A Deployment's or a ReplicaSet's cells (`kind` says which): its replicas, its
/// template's containers and images, its selector.
fn replicated_cells(kind: &str, o: &Value, name: Value, created: Value) -> Vec<Value> {
    let (spec, status) = (&o["spec"], &o["status"]);
    let n = |v: &Value| json!(v.as_i64().unwrap_or(0));
    let (names, images) = containers(&spec["template"]["spec"]);
    // As the printers write it: the Deployment's `LabelSelectorAsSelector`, the
    // ReplicaSet's `FormatLabelSelector`.
    let sel = match (scale::selector_string(&spec["selector"]), kind) {
        (None, "Deployment") => json!("<invalid>"),
        (Some(s), "Deployment") => json!(s),
        _ => formatted_selector(&spec["selector"]),
    };
    let replicas = spec["replicas"].as_i64().unwrap_or(0);
    if kind == "Deployment" {
        let ready = format!(
            "{}/{replicas}",
            status["readyReplicas"].as_i64().unwrap_or(0)
        );
        let (updated, available) = (
            n(&status["updatedReplicas"]),
            n(&status["availableReplicas"]),
        );
        vec![
            name,
            json!(ready),
            updated,
            available,
            created,
            json!(names),
            json!(images),
            sel,
        ]
    } else {
        let (current, ready) = (n(&status["replicas"]), n(&status["readyReplicas"]));
        vec![
            name,
            json!(replicas),
            current,
            ready,
            created,
            json!(names),
            json!(images),
            sel,
        ]
    }
}

/// A StatefulSet's cells: ready of its replicas, its template's containers and images.
fn stateful_set_cells(o: &Value, name: Value, created: Value) -> Vec<Value> {
    let (spec, status) = (&o["spec"], &o["status"]);
    let (names, images) = containers(&spec["template"]["spec"]);
    let ready = format!(
        "{}/{}",
        status["readyReplicas"].as_i64().unwrap_or(0),
        spec["replicas"].as_i64().unwrap_or(0)
    );
    vec![name, json!(ready), created, json!(names), json!(images)]
}

/// A DaemonSet's cells: its counts of nodes, node selector, template's containers and
/// images, and selector.
fn daemon_set_cells(o: &Value, name: Value, created: Value) -> Vec<Value> {
    let (spec, status) = (&o["spec"], &o["status"]);
    let (names, images) = containers(&spec["template"]["spec"]);
    let mut row = vec![name];
    for counted in [
        "desiredNumberScheduled",
        "currentNumberScheduled",
        "numberReady",
        "updatedNumberScheduled",
        "numberAvailable",
    ] {
        row.push(json!(status[counted].as_i64().unwrap_or(0)));
    }
    let node_selector = labels(&spec["template"]["spec"]["nodeSelector"]);
    row.extend([json!(node_selector), created, json!(names), json!(images)]);
    row.push(formatted_selector(&spec["selector"]));
    row
}

/// A ControllerRevision's cells: the controller of its owner references, its revision.
fn controller_revision_cells(o: &Value, name: Value, created: Value) -> Vec<Value> {
    let owners = o["metadata"]["ownerReferences"].as_array();
    let controller = owners
        .into_iter()
        .flatten()
        .find(|r| r["controller"] == true)
        .map_or_else(|| "<none>".to_string(), controller_name);
    vec![
        name,
        json!(controller),
        json!(o["revision"].as_i64().unwrap_or(0)),
        created,
    ]
}

/// A CronJob's cells: its schedule, time zone, suspension, active Jobs, last schedule,
/// its Jobs' containers, images and selector.
fn cron_job_cells(o: &Value, name: Value, created: Value, now: Timestamp) -> Vec<Value> {
    let (spec, status) = (&o["spec"], &o["status"]);
    let job_spec = &spec["jobTemplate"]["spec"];
    let (names, images) = containers(&job_spec["template"]["spec"]);
    let last = match &status["lastScheduleTime"] {
        Value::Null => json!("<none>"),
        t => json!(age(t, now)),
    };
    let zone = spec["timeZone"].as_str().unwrap_or("<none>");
    let suspend = match spec["suspend"].as_bool() {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    vec![
        name,
        spec["schedule"].clone(),
        json!(zone),
        json!(suspend),
        json!(status["active"].as_array().map_or(0, Vec::len)),
        last,
        created,
        json!(names),
        json!(images),
        formatted_selector(&job_spec["selector"]),
    ]
}

/// A CRD's cells: its scope, served versions (sorted, the storage version marked),
/// creation time, group, kind, short names, and whether it is established.
fn crd_cells(o: &Value, name: Value) -> Vec<Value> {
    let (spec, status) = (&o["spec"], &o["status"]);
    let mut versions: Vec<String> = spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["served"] == true)
        .map(|v| match v["storage"] == true {
            true => format!("{}(storage)", text(&v["name"])),
            false => text(&v["name"]),
        })
        .collect();
    versions.sort();
    let short: Vec<String> = spec["names"]["shortNames"]
        .as_array()
        .into_iter()
        .flatten()
        .map(text)
        .collect();
    let established = status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Established" && c["status"] == "True");
    vec![
        name,
        spec["scope"].clone(),
        json!(versions.join(",")),
        o["metadata"]["creationTimestamp"].clone(),
        spec["group"].clone(),
        spec["names"]["kind"].clone(),
        json!(short.join(",")),
        json!(established),
    ]
}

/// A label selector as `metav1.FormatLabelSelector` writes it: `<none>` when it selects
/// nothing or everything, `<error>` when it is malformed.
fn formatted_selector(selector: &Value) -> Value {
    match scale::selector_string(selector) {
        None => json!("<error>"),
        Some(s) if s.is_empty() => json!("<none>"),
        Some(s) => json!(s),
    }
}

/// A controller's owner reference as `kind.group/name` (`kind/name` in the core group),
/// the kind in lower case.
fn controller_name(owner: &Value) -> String {
    let kind = text(&owner["kind"]).to_lowercase();
    let group = text(&owner["apiVersion"])
        .rsplit_once('/')
        .map(|(g, _)| g.to_string())
        .unwrap_or_default();
    let name = text(&owner["name"]);
    match group.as_str() {
        "" => format!("{kind}/{name}"),
        g => format!("{kind}.{g}/{name}"),
    }
}

/// A Job's cells, as the real server's job printer writes them: its status from its
/// conditions and deletion, its completions, and how long it ran.
fn job_cells(o: &Value, name: Value, created: Value, now: Timestamp) -> Vec<Value> {
    let (spec, status) = (&o["spec"], &o["status"]);
    let succeeded = status["succeeded"].as_i64().unwrap_or(0);
    let completions = match (spec["completions"].as_i64(), spec["parallelism"].as_i64()) {
        (Some(c), _) => format!("{succeeded}/{c}"),
        (None, Some(p)) if p > 1 => format!("{succeeded}/1 of {p}"),
        (None, _) => format!("{succeeded}/1"),
    };
    let time = |field: &str| {
        status[field]
            .as_str()
            .and_then(|t| t.parse::<Timestamp>().ok())
    };
    let duration = match (time("startTime"), time("completionTime")) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now.as_second() - start.as_second()),
        (Some(start), Some(end)) => human_duration(end.as_second() - start.as_second()),
    };
    let has = |kind: &str| {
        status["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == kind)
            .is_some_and(|c| c["status"] == "True")
    };
    let state = if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if o["metadata"]["deletionTimestamp"].is_string() {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else if has("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let (names, images) = containers(&spec["template"]["spec"]);
    vec![
        name,
        json!(state),
        json!(completions),
        json!(duration),
        created,
        json!(names),
        json!(images),
        formatted_selector(&spec["selector"]),
    ]
}

/// A Pod's cells, as the real server's pod printer writes them.
fn pod_cells(o: &Value, name: Value, created: Value) -> Vec<Value> {
    let (spec, status) = (&o["spec"], &o["status"]);
    let total = spec["containers"].as_array().map_or(0, Vec::len);
    let mut reason = match status["reason"].as_str() {
        Some(r) if !r.is_empty() => r.to_string(),
        _ => text(&status["phase"]),
    };
    let (mut ready, mut restarts, mut running) = (0, 0, false);
    let statuses = status["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for c in statuses.iter().rev() {
        restarts += c["restartCount"].as_i64().unwrap_or(0);
        let state = &c["state"];
        if let Some(r) = state["waiting"]["reason"]
            .as_str()
            .filter(|r| !r.is_empty())
        {
            reason = r.to_string();
        } else if state["terminated"].is_object() {
            let t = &state["terminated"];
            reason = match (t["reason"].as_str(), t["signal"].as_i64()) {
                (Some(r), _) if !r.is_empty() => r.to_string(),
                (_, Some(s)) if s != 0 => format!("Signal:{s}"),
                _ => format!("ExitCode:{}", t["exitCode"].as_i64().unwrap_or(0)),
            };
        } else if c["ready"] == true && state["running"].is_object() {
            running = true;
            ready += 1;
        }
    }
    if reason == "Completed" && running {
        reason = "Running".into();
    }
    if o["metadata"]["deletionTimestamp"].is_string() {
        reason = if status["reason"] == "NodeLost" {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    let ip = status["podIPs"][0]["ip"].as_str().unwrap_or("<none>");
    let node = spec["nodeName"]
        .as_str()
        .filter(|n| !n.is_empty())
        .unwrap_or("<none>");
    let nominated = status["nominatedNodeName"]
        .as_str()
        .filter(|n| !n.is_empty())
        .unwrap_or("<none>");
    let gates = match spec["readinessGates"].as_array() {
        Some(g) if !g.is_empty() => {
            let conds = status["conditions"].as_array().cloned().unwrap_or_default();
            let met = g.iter().filter(|gate| {
                conds
                    .iter()
                    .any(|c| c["type"] == gate["conditionType"] && c["status"] == "True")
            });
            format!("{}/{}", met.count(), g.len())
        }
        _ => "<none>".into(),
    };
    vec![
        name,
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts.to_string()),
        created,
        json!(ip),
        json!(node),
        json!(nominated),
        json!(gates),
    ]
}

/// A core Event's cells.
fn event_cells(e: &Value, now: Timestamp) -> Vec<Value> {
    let first = match e["firstTimestamp"].as_str() {
        Some(_) => age(&e["firstTimestamp"], now),
        None => age(&e["eventTime"], now),
    };
    let mut last = match e["lastTimestamp"].as_str() {
        Some(_) => age(&e["lastTimestamp"], now),
        None => first.clone(),
    };
    let mut count = e["count"].as_i64().unwrap_or(0);
    if e["series"].is_object() {
        last = age(&e["series"]["lastObservedTime"], now);
        count = e["series"]["count"].as_i64().unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    let involved = &e["involvedObject"];
    let kind = text(&involved["kind"]).to_lowercase();
    let target = match involved["name"].as_str() {
        Some(n) if !n.is_empty() => format!("{kind}/{n}"),
        _ => kind,
    };
    let source = {
        let component = match e["source"]["component"].as_str() {
            Some(c) if !c.is_empty() => c.to_string(),
            _ => text(&e["reportingComponent"]),
        };
        let host = match e["source"]["host"].as_str() {
            Some(h) if !h.is_empty() => h.to_string(),
            _ => text(&e["reportingInstance"]),
        };
        if host.is_empty() {
            component
        } else {
            format!("{component}, {host}")
        }
    };
    vec![
        json!(last),
        e["type"].clone(),
        e["reason"].clone(),
        json!(target),
        json!(text(&involved["fieldPath"])),
        json!(source),
        json!(text(&e["message"]).trim()),
        json!(first),
        json!(count),
        e["metadata"]["name"].clone(),
    ]
}

/// The value at a printer column's JSONPath in `o`: fields (`.spec.size`), indices
/// (`[0]`) and filters (`[?(@.type=="Ready")]`, the first match); `None` when missing.
fn jsonpath(o: &Value, path: &str) -> Option<Value> {
    let mut cur = o;
    let mut rest = path.trim().trim_start_matches('{').trim_end_matches('}');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            cur = cur.get(&r[..end])?;
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = &r[..end];
            rest = &r[end + 1..];
            if let Some(filter) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (field, want) = filter.split_once("==")?;
                let want = want.trim().trim_matches(['"', '\'']);
                cur = cur.as_array()?.iter().find(|item| {
                    item.get(field.trim())
                        .is_some_and(|v| v.as_str() == Some(want) || *v.to_string() == *want)
                })?;
            } else {
                cur = cur.get(inner.parse::<usize>().ok()?)?;
            }
        } else {
            return None;
        }
    }
    Some(cur.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::builtin_of;

    #[test]
    fn ages_read_as_the_real_servers_human_durations() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (45, "45s"),
            (119, "119s"),
            (200, "3m20s"),
            (240, "4m"),
            (3 * 3600 + 5 * 60, "3h5m"),
            (20 * 3600, "20h"),
            (3 * 86400 + 3600, "3d1h"),
            (30 * 86400, "30d"),
            (3 * 365 * 86400 + 86400, "3y1d"),
            (10 * 365 * 86400, "10y"),
        ];
        for (seconds, want) in cases {
            assert_eq!(human_duration(seconds), want, "{seconds}s");
        }
    }

    #[test]
    fn printer_column_paths_find_fields_indices_and_filters() {
        let o = json!({"spec": {"size": 3, "list": ["a", "b"]},
            "status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        assert_eq!(jsonpath(&o, ".spec.size"), Some(json!(3)));
        assert_eq!(jsonpath(&o, ".spec.list[1]"), Some(json!("b")));
        assert_eq!(
            jsonpath(&o, r#".status.conditions[?(@.type=="Ready")].status"#),
            Some(json!("True"))
        );
        assert_eq!(jsonpath(&o, ".spec.missing"), None);
        assert_eq!(jsonpath(&o, ".spec.list[x]"), None);
        assert_eq!(jsonpath(&o, "nonsense"), None);
    }

    #[test]
    fn tables_are_asked_for_first_in_accept() {
        assert!(wanted(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        ));
        assert!(!wanted(
            "application/json,application/json;as=Table;v=v1;g=meta.k8s.io"
        ));
        assert!(!wanted("application/json;as=Table;v=v1beta1;g=meta.k8s.io"));
    }

    /// Rows the real server printed for a Deployment, its ReplicaSet and an Event of a
    /// cluster with nodes (the differential suite's control plane runs no Pods).
    #[test]
    fn workloads_and_events_print_as_the_real_server_printed_them() {
        let now: Timestamp = "2026-01-01T00:00:05Z".parse().unwrap();
        let meta = |name: &str| json!({"name": name, "creationTimestamp": "2026-01-01T00:00:00Z"});
        let template = json!({"spec": {"containers": [{"name": "nginx", "image": "nginx"}]}});
        let deployment = json!({"metadata": meta("d"), "spec": {"replicas": 1,
            "selector": {"matchLabels": {"app": "d"}}, "template": template},
            "status": {"readyReplicas": 1, "updatedReplicas": 1, "availableReplicas": 1}});
        assert_eq!(
            cells(&builtin_of("apps", "Deployment"), None, &deployment, now),
            [
                json!("d"),
                json!("1/1"),
                json!(1),
                json!(1),
                json!("5s"),
                json!("nginx"),
                json!("nginx"),
                json!("app=d")
            ]
        );
        let rs = json!({"metadata": meta("d-5"), "spec": {"replicas": 1,
            "selector": {"matchLabels": {"app": "d", "pod-template-hash": "5"}}, "template": template},
            "status": {"replicas": 1, "readyReplicas": 1}});
        assert_eq!(
            cells(&builtin_of("apps", "ReplicaSet"), None, &rs, now),
            [
                json!("d-5"),
                json!(1),
                json!(1),
                json!(1),
                json!("5s"),
                json!("nginx"),
                json!("nginx"),
                json!("app=d,pod-template-hash=5")
            ]
        );
        let event = json!({"metadata": meta("d-5.18e"), "type": "Normal",
            "reason": "SuccessfulCreate", "message": "Created pod: d-5-x",
            "involvedObject": {"kind": "ReplicaSet", "name": "d-5"},
            "source": {"component": "replicaset-controller"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
            "count": 1});
        assert_eq!(
            cells(&builtin_of("", "Event"), None, &event, now),
            [
                json!("5s"),
                json!("Normal"),
                json!("SuccessfulCreate"),
                json!("replicaset/d-5"),
                json!(""),
                json!("replicaset-controller"),
                json!("Created pod: d-5-x"),
                json!("5s"),
                json!(1),
                json!("d-5.18e")
            ]
        );
        let running = json!({"metadata": meta("p"), "spec": {"containers": [{"name": "a"}],
            "nodeName": "kwok-node-0"}, "status": {"phase": "Running",
            "podIPs": [{"ip": "10.244.0.2"}], "containerStatuses": [{"name": "a", "ready": true,
            "restartCount": 0, "state": {"running": {}}}]}});
        assert_eq!(
            cells(&builtin_of("", "Pod"), None, &running, now),
            [
                json!("p"),
                json!("1/1"),
                json!("Running"),
                json!("0"),
                json!("5s"),
                json!("10.244.0.2"),
                json!("kwok-node-0"),
                json!("<none>"),
                json!("<none>")
            ]
        );
    }
}
