//! Checks of a Pod's volumes, volume mounts, probes, security contexts and resources,
//! as kube-apiserver 1.37's `ValidatePodSpec` makes them, with its fields, reasons and
//! messages.
//!
//! # Contract
//!
//! - **Volumes**: DNS-label names, each once; one source each (a volume without one is
//!   an `emptyDir`, see `workloads`); a host path without `..` and of a known type; a
//!   Secret's name; config map, Secret and downward API items at relative paths without
//!   `..`, modes in 0..0777; an `emptyDir` size limit not negative.
//! - **Mounts**: of a volume of the Pod, each path once, a `subPath` that is relative and
//!   without `..`.
//! - **Probes**: one handler each, periods and thresholds not negative, a liveness or
//!   startup probe's success threshold 1, ports in 1..65535 or port names.
//! - **Security contexts**: users and groups in 0..2147483647, a seccomp profile of a
//!   known type (`Localhost` with its profile).
//! - **Resources**: standard or qualified names, quantities not negative, requests no
//!   greater than limits (equal to them, and with them, for resources that cannot be
//!   overcommitted: extended resources, hugepages), hugepages in whole pages.
//! - Not done: the other checks of a Pod spec (environment, ports, affinity, topology
//!   spread, privileged containers, hugepages without cpu or memory, ...).

use serde_json::Value;

use crate::core_kinds::backsteps;
use crate::kinds::{Fault, duplicate, forbidden, invalid, not_supported, required};

/// The volume sources, in the order the real server counts them.
const SOURCES: &[&str] = &[
    "emptyDir",
    "hostPath",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "flocker",
    "persistentVolumeClaim",
    "rbd",
    "cinder",
    "cephfs",
    "quobyte",
    "downwardAPI",
    "fc",
    "flexVolume",
    "configMap",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "storageos",
    "projected",
    "scaleIO",
    "csi",
    "ephemeral",
    "image",
];

/// Whether `volume` names any source.
pub(crate) fn has_source(volume: &Value) -> bool {
    SOURCES.iter().any(|s| !volume[*s].is_null())
}

/// The faults of a Pod's `spec`, at `spec`.
pub(crate) fn faults(spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    let volumes = spec["volumes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut names = Vec::new();
    for (i, volume) in volumes.iter().enumerate() {
        let at = format!("spec.volumes[{i}]");
        let name = volume["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            faults.push(required(&format!("{at}.name"), ""));
        } else {
            for why in kubekit::validation::dns1123_label(name) {
                faults.push(invalid(format!("{at}.name"), &volume["name"], &why));
            }
        }
        if names.contains(&name) {
            faults.push(duplicate(&format!("{at}.name"), &volume["name"]));
        }
        names.push(name);
        faults.extend(volume_source(volume, &at));
    }
    for list in ["initContainers", "containers"] {
        let containers = spec[list].as_array().into_iter().flatten();
        for (i, container) in containers.enumerate() {
            let at = format!("spec.{list}[{i}]");
            faults.extend(mounts(container, &names, &at));
            for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
                if container[probe].is_object() {
                    faults.extend(self::probe(
                        probe,
                        &container[probe],
                        &format!("{at}.{probe}"),
                    ));
                }
            }
            faults.extend(resources(
                &container["resources"],
                &format!("{at}.resources"),
            ));
            let context = &container["securityContext"];
            faults.extend(security_context(context, &format!("{at}.securityContext")));
        }
    }
    faults.extend(security_context(
        &spec["securityContext"],
        "spec.securityContext",
    ));
    faults
}

/// The faults of a relative path of an item (`validateLocalDescendingPath`).
fn descending(field: String, path: &Value) -> Vec<Fault> {
    let text = path.as_str().unwrap_or_default();
    if text.starts_with('/') {
        return vec![invalid(field, path, "must be a relative path")];
    }
    backsteps(&field, path).into_iter().collect()
}

/// The faults of a file mode at `field` (`validateMode`).
fn mode(field: String, mode: &Value) -> Option<Fault> {
    let why = "must be a number between 0 and 0777 (octal), both inclusive";
    mode.as_i64()
        .filter(|m| !(0..=0o777).contains(m))
        .map(|_| invalid(field, mode, why))
}

const HOST_PATH_TYPES: &[&str] = &[
    "",
    "BlockDevice",
    "CharDevice",
    "Directory",
    "DirectoryOrCreate",
    "File",
    "FileOrCreate",
    "Socket",
];

fn volume_source(volume: &Value, at: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    let mut count = 0;
    for source in SOURCES {
        let value = &volume[*source];
        if value.is_null() {
            continue;
        }
        let at = format!("{at}.{source}");
        if count > 0 {
            faults.push(forbidden(&at, "may not specify more than 1 volume type"));
            continue;
        }
        count += 1;
        match *source {
            "emptyDir" => {
                let limit = &value["sizeLimit"];
                if limit.as_str().is_some_and(|l| l.starts_with('-')) {
                    let why = "SizeLimit field must be a valid resource quantity";
                    faults.push(forbidden(&format!("{at}.sizeLimit"), why));
                }
            }
            "hostPath" => match value["path"].as_str().unwrap_or_default() {
                "" => faults.push(required(&format!("{at}.path"), "")),
                _ => {
                    faults.extend(backsteps(&format!("{at}.path"), &value["path"]));
                    let kind = &value["type"];
                    if kind.as_str().is_some_and(|k| !HOST_PATH_TYPES.contains(&k)) {
                        faults.push(not_supported(&format!("{at}.type"), kind, HOST_PATH_TYPES));
                    }
                }
            },
            "secret" | "configMap" => {
                if *source == "secret" && value["secretName"].as_str().is_none_or(str::is_empty) {
                    faults.push(required(&format!("{at}.secretName"), ""));
                }
                faults.extend(mode(format!("{at}.defaultMode"), &value["defaultMode"]));
                let items = value["items"].as_array().into_iter().flatten();
                for (i, item) in items.enumerate() {
                    let item_at = format!("{at}.items[{i}]");
                    faults.extend(descending(format!("{item_at}.path"), &item["path"]));
                    faults.extend(mode(format!("{item_at}.mode"), &item["mode"]));
                }
            }
            _ => {}
        }
    }
    faults
}

fn mounts(container: &Value, volumes: &[&str], at: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    let mut paths = Vec::new();
    let mounts = container["volumeMounts"].as_array().into_iter().flatten();
    for (i, mount) in mounts.enumerate() {
        let mount_at = format!("{at}.volumeMounts[{i}]");
        let name = mount["name"].as_str().unwrap_or_default();
        if name.is_empty() {
            faults.push(required(&format!("{mount_at}.name"), ""));
        } else if !volumes.contains(&name) {
            let detail = format!("Not found: {}", kubekit::validation::quote(name));
            faults.push((format!("{mount_at}.name"), "FieldValueNotFound", detail));
        }
        let path = &mount["mountPath"];
        match path.as_str().unwrap_or_default() {
            "" => faults.push(required(&format!("{mount_at}.mountPath"), "")),
            p if paths.contains(&p) => {
                faults.push(invalid(
                    format!("{mount_at}.mountPath"),
                    path,
                    "must be unique",
                ));
            }
            p => paths.push(p),
        }
        // The real server names the sub-path without the mount's index.
        let sub = &mount["subPath"];
        if sub.as_str().is_some_and(|s| !s.is_empty()) {
            faults.extend(descending(format!("{at}.volumeMounts.subPath"), sub));
        }
    }
    faults
}

/// The handlers of a probe.
const HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "grpc"];

fn probe(kind: &str, probe: &Value, at: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    let mut handlers = 0;
    for handler in HANDLERS {
        let value = &probe[*handler];
        if value.is_null() {
            continue;
        }
        let handler_at = format!("{at}.{handler}");
        if handlers > 0 {
            faults.push(forbidden(
                &handler_at,
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        handlers += 1;
        if matches!(*handler, "httpGet" | "tcpSocket") {
            let port = &value["port"];
            let errors = match port {
                Value::String(name) => crate::networking_kinds::port_name_errors(name),
                _ => crate::core_kinds::port_errors(port),
            };
            for why in errors {
                faults.push(invalid(format!("{handler_at}.port"), port, &why));
            }
        }
    }
    if handlers == 0 {
        faults.push(required(at, "must specify a handler type"));
    }
    for field in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        let value = &probe[field];
        if value.as_i64().is_some_and(|v| v < 0) {
            let why = "must be greater than or equal to 0";
            faults.push(invalid(format!("{at}.{field}"), value, why));
        }
    }
    let success = &probe["successThreshold"];
    if kind != "readinessProbe" && success.as_i64().is_some_and(|s| s != 1) {
        faults.push(invalid(
            format!("{at}.successThreshold"),
            success,
            "must be 1",
        ));
    }
    faults
}

fn security_context(context: &Value, at: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    for field in ["runAsUser", "runAsGroup"] {
        let value = &context[field];
        if value
            .as_i64()
            .is_some_and(|v| !(0..=2_147_483_647).contains(&v))
        {
            let why = "must be between 0 and 2147483647, inclusive";
            faults.push(invalid(format!("{at}.{field}"), value, why));
        }
    }
    let profile = &context["seccompProfile"];
    if profile.is_object() {
        let kind = &profile["type"];
        match kind.as_str().unwrap_or_default() {
            "Localhost"
                if profile["localhostProfile"]
                    .as_str()
                    .is_none_or(str::is_empty) =>
            {
                let why = "must be set when seccomp type is Localhost";
                faults.push(required(
                    &format!("{at}.seccompProfile.localhostProfile"),
                    why,
                ));
            }
            "Localhost" | "RuntimeDefault" | "Unconfined" => {}
            _ => faults.push(not_supported(
                &format!("{at}.seccompProfile.type"),
                kind,
                &["Localhost", "RuntimeDefault", "Unconfined"],
            )),
        }
    }
    faults
}

/// Whether a resource may be requested beyond its limit (a native resource that is not
/// hugepages).
fn overcommits(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    native && !name.starts_with("hugepages-")
}

/// The faults of a container's resource `name` at `field` (`ValidateContainerResourceName`).
fn resource_name(name: &str, field: &str) -> Vec<Fault> {
    let standard =
        matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-");
    if name.contains('/') || standard {
        return Vec::new();
    }
    let shown = Value::from(name);
    vec![
        invalid(
            field,
            &shown,
            "must be a standard resource type or fully qualified",
        ),
        invalid(field, &shown, "must be a standard resource for containers"),
    ]
}

/// The fault of a hugepages quantity that is not a positive multiple of its page size.
fn hugepages(name: &str, quantity: &Value, field: &str) -> Option<Fault> {
    let size = name.strip_prefix("hugepages-")?;
    let milli = |q: &str| crate::cel_library::quantity::milli(q);
    let (Some(size), Some(value)) = (milli(size), quantity.as_str().and_then(milli)) else {
        return None;
    };
    let zero = num_bigint::BigInt::from(0);
    let divisible = size > zero && value > zero && (&value % &size) == zero;
    let text = quantity.as_str().unwrap_or_default();
    (!divisible).then(|| {
        invalid(
            field,
            quantity,
            &format!("{text} is not positive integer multiple of {name}"),
        )
    })
}

fn resources(resources: &Value, at: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    let (limits, requests) = (&resources["limits"], &resources["requests"]);
    let negative = |field: String, quantity: &Value| {
        quantity
            .as_str()
            .is_some_and(|q| q.starts_with('-'))
            .then(|| invalid(field, quantity, "must be greater than or equal to 0"))
    };
    for (name, quantity) in limits.as_object().into_iter().flatten() {
        let field = format!("{at}.limits[{name}]");
        faults.extend(resource_name(name, &field));
        faults.extend(negative(field.clone(), quantity));
        faults.extend(hugepages(name, quantity, &field));
    }
    let milli = |q: &Value| q.as_str().and_then(crate::cel_library::quantity::milli);
    for (name, request) in requests.as_object().into_iter().flatten() {
        let field = format!("{at}.requests[{name}]");
        faults.extend(resource_name(name, &field));
        faults.extend(negative(field.clone(), request));
        let limit = &limits[name];
        let shown_limit = limit.as_str().unwrap_or_default();
        match (milli(request), milli(limit)) {
            (Some(r), Some(l)) if r != l && !overcommits(name) => {
                let why = format!("must be equal to {name} limit of {shown_limit}");
                faults.push(invalid(format!("{at}.requests"), request, &why));
            }
            (Some(r), Some(l)) if r > l => {
                let why = format!("must be less than or equal to {name} limit of {shown_limit}");
                faults.push(invalid(format!("{at}.requests"), request, &why));
            }
            _ if limit.is_null() && !overcommits(name) => {
                let why = "Limit must be set for non overcommitable resources";
                faults.push(required(&format!("{at}.limits"), why));
            }
            _ => {}
        }
        faults.extend(hugepages(name, request, &field));
    }
    faults
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_second_volume_source_and_mounts_of_no_volume_are_refused() {
        let spec = json!({"volumes": [{"name": "v", "hostPath": {"path": "/x"}, "emptyDir": {}}],
            "containers": [{"name": "c", "volumeMounts": [{"name": "w", "mountPath": "/d", "subPath": "../e"}]}]});
        let fields: Vec<String> = faults(&spec).into_iter().map(|f| f.0).collect();
        assert_eq!(
            fields,
            [
                "spec.volumes[0].hostPath",
                "spec.containers[0].volumeMounts[0].name",
                "spec.containers[0].volumeMounts.subPath"
            ]
        );
        assert!(has_source(&json!({"name": "v", "csi": {}})));
        assert!(!has_source(&json!({"name": "v"})));
    }

    #[test]
    fn probes_need_one_handler_and_requests_stay_within_limits() {
        let spec = json!({"containers": [{"name": "c",
            "livenessProbe": {"successThreshold": 2},
            "resources": {"requests": {"cpu": "1500m"}, "limits": {"cpu": "1"}}}]});
        let details: Vec<String> = faults(&spec).into_iter().map(|f| f.2).collect();
        assert_eq!(
            details,
            [
                "Required value: must specify a handler type",
                "Invalid value: 2: must be 1",
                "Invalid value: \"1500m\": must be less than or equal to cpu limit of 1"
            ]
        );
    }
}
