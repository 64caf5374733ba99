//! Checks of `storage.k8s.io` kinds as kube-apiserver 1.37's
//! `pkg/apis/storage/validation` makes them, with its fields, reasons and messages, in its
//! order (their defaults are in `kinds`).
//!
//! # Contract
//!
//! - **StorageClasses**: a provisioner (a qualified name, compared in lower case), at most
//!   512 parameters of non-empty names, a reclaim policy of `Delete` or `Retain`, a
//!   binding mode of `Immediate` or `WaitForFirstConsumer`, topology terms with values;
//!   on update, the parameters, provisioner, reclaim policy and binding mode never change.
//! - **VolumeAttachments**: an attacher (a CSI driver's name), one source, a node name;
//!   the spec never changes.
//! - **CSIStorageCapacities**: a storage class name (a DNS subdomain), a capacity not
//!   negative, a node topology of valid label keys; on update, the topology and class
//!   never change.
//! - **CSIDrivers**: fsGroup policies and lifecycle modes of the known values, token
//!   requests of distinct audiences and 10 minutes to 2^32 seconds, an update period of
//!   the node allocatable of at least 10 seconds; on update, `attachRequired` and the
//!   lifecycle modes never change.
//! - Immutable fields that declarative validation guards are reported without their
//!   value (`Invalid value: null`), as the real server reports them.

use serde_json::Value;

use crate::kinds::{
    Fault, forbidden, immutable, immutable_declared, invalid, not_supported, required,
};

/// The faults of a `storage.k8s.io` object of `kind`, being created (`old` is `None`) or
/// replacing `old`.
pub(crate) fn faults(kind: &str, obj: &Value, old: Option<&Value>) -> Vec<Fault> {
    let mut faults = match kind {
        "StorageClass" => storage_class(obj),
        "VolumeAttachment" => volume_attachment(&obj["spec"]),
        "CSIStorageCapacity" => capacity(obj),
        "CSIDriver" => csi_driver(&obj["spec"]),
        _ => Vec::new(),
    };
    let Some(old) = old else {
        return faults;
    };
    // Fields whose immutability declarative validation reports (without their value).
    let kept: &[&str] = match kind {
        "StorageClass" => &[
            "parameters",
            "provisioner",
            "reclaimPolicy",
            "volumeBindingMode",
        ],
        "VolumeAttachment" => &["spec"],
        _ => &[],
    };
    for field in kept {
        if old[*field] != obj[*field] {
            faults.push(immutable_declared(field));
        }
    }
    match kind {
        "CSIDriver" => {
            let (spec, old) = (&obj["spec"], &old["spec"]);
            if old["attachRequired"] != spec["attachRequired"] {
                // The real server names the field so.
                faults.extend(immutable("spec.attachedRequired", &spec["attachRequired"]));
            }
            if old["volumeLifecycleModes"] != spec["volumeLifecycleModes"] {
                let modes = &spec["volumeLifecycleModes"];
                faults.extend(immutable("spec.volumeLifecycleModes", modes));
            }
        }
        "CSIStorageCapacity" => {
            if old["nodeTopology"] != obj["nodeTopology"] {
                let shown = crate::defaults::go_json(&obj["nodeTopology"]);
                faults.push(crate::kinds::invalid_as(
                    "nodeTopology",
                    &shown,
                    "field is immutable",
                ));
            }
            if old["storageClassName"] != obj["storageClassName"] {
                faults.extend(immutable("storageClassName", &obj["storageClassName"]));
            }
        }
        _ => {}
    }
    faults
}

fn storage_class(obj: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    let provisioner = obj["provisioner"].as_str().unwrap_or_default();
    if provisioner.is_empty() {
        faults.push(required("provisioner", ""));
    } else {
        for why in crate::kinds::qualified_name_errors(&provisioner.to_lowercase()) {
            faults.push(invalid(
                "provisioner",
                &Value::from(provisioner.to_lowercase()),
                &why,
            ));
        }
    }
    let parameters = obj["parameters"].as_object();
    let count = parameters.map_or(0, |p| p.len());
    if count > 512 {
        faults.push(crate::core_kinds::too_long("parameters", 512));
    } else {
        for key in parameters.into_iter().flat_map(|p| p.keys()) {
            if key.is_empty() {
                faults.push(invalid(
                    "parameters",
                    &Value::from(""),
                    "field can not be empty.",
                ));
            }
        }
    }
    let reclaim = &obj["reclaimPolicy"];
    if reclaim
        .as_str()
        .is_some_and(|r| !r.is_empty() && !matches!(r, "Delete" | "Retain"))
    {
        faults.push(not_supported(
            "reclaimPolicy",
            reclaim,
            &["Delete", "Retain"],
        ));
    }
    let mode = &obj["volumeBindingMode"];
    match mode.as_str() {
        None => faults.push(required("volumeBindingMode", "")),
        Some("Immediate" | "WaitForFirstConsumer") => {}
        Some(_) => faults.push(not_supported(
            "volumeBindingMode",
            mode,
            &["Immediate", "WaitForFirstConsumer"],
        )),
    }
    let terms = obj["allowedTopologies"].as_array().into_iter().flatten();
    for (i, term) in terms.enumerate() {
        let expressions = term["matchLabelExpressions"]
            .as_array()
            .into_iter()
            .flatten();
        for (j, expression) in expressions.enumerate() {
            let at = format!("allowedTopologies[{i}].matchLabelExpressions[{j}]");
            if expression["values"].as_array().is_none_or(Vec::is_empty) {
                faults.push(required(&format!("{at}.values"), ""));
            }
            let key = expression["key"].as_str().unwrap_or_default();
            for why in crate::kinds::qualified_name_errors(key) {
                faults.push(invalid(format!("{at}.key"), &expression["key"], &why));
            }
        }
    }
    faults
}

fn volume_attachment(spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    let attacher = &spec["attacher"];
    match attacher.as_str().unwrap_or_default() {
        "" => faults.push(required("spec.attacher", "")),
        name => faults.extend(csi_driver_name("spec.attacher", name)),
    }
    let source = &spec["source"];
    let (inline, pv) = (&source["inlineVolumeSpec"], &source["persistentVolumeName"]);
    let exactly_one = "must specify exactly one of inlineVolumeSpec and persistentVolumeName";
    match (inline.is_null(), pv.is_null()) {
        (true, true) => faults.push(required("spec.source", exactly_one)),
        (false, false) => faults.push(forbidden("spec.source", exactly_one)),
        (true, false) if pv.as_str() == Some("") => faults.push(required(
            "spec.source.persistentVolumeName",
            "must specify non empty persistentVolumeName",
        )),
        _ => {}
    }
    let node = spec["nodeName"].as_str().unwrap_or_default();
    for why in kubekit::validation::dns1123_subdomain(node) {
        faults.push(invalid("spec.nodeName", &Value::from(node), &why));
    }
    if let Some(pv) = pv.as_str().filter(|p| !p.is_empty()) {
        for why in kubekit::validation::dns1123_subdomain(pv) {
            faults.push(invalid(
                "spec.source.persistentVolumeName",
                &source["persistentVolumeName"],
                &why,
            ));
        }
    }
    faults
}

/// `ValidateCSIDriverName`'s faults of `name` at `field`.
fn csi_driver_name(field: &str, name: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    if name.len() > 63 {
        faults.push(crate::core_kinds::too_long(field, 63));
    }
    if !kubekit::validation::dns1123_subdomain(&name.to_lowercase()).is_empty() {
        let why = "an RFC 1123 subdomain must consist of alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'Example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        faults.push(invalid(field, &Value::from(name), why));
    }
    faults
}

fn capacity(obj: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    faults.extend(crate::selectors::label_selector_faults(
        &obj["nodeTopology"],
        "nodeTopology",
    ));
    let class = obj["storageClassName"].as_str().unwrap_or_default();
    for why in kubekit::validation::dns1123_subdomain(class) {
        faults.push(invalid("storageClassName", &Value::from(class), &why));
    }
    let capacity = &obj["capacity"];
    if capacity.as_str().is_some_and(|q| q.starts_with('-')) {
        faults.push(invalid(
            "capacity",
            capacity,
            "must be greater than or equal to 0",
        ));
    }
    faults
}

fn csi_driver(spec: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    let policy = &spec["fsGroupPolicy"];
    if !matches!(
        policy.as_str(),
        None | Some("ReadWriteOnceWithFSType" | "File" | "None")
    ) {
        let supported = ["File", "None", "ReadWriteOnceWithFSType"];
        faults.push(not_supported("spec.fsGroupPolicy", policy, &supported));
    }
    let mut audiences = Vec::new();
    let requests = spec["tokenRequests"].as_array().into_iter().flatten();
    for (i, request) in requests.enumerate() {
        let at = format!("spec.tokenRequests[{i}]");
        let audience = request["audience"].as_str().unwrap_or_default();
        if audiences.contains(&audience) {
            faults.push(crate::kinds::duplicate(
                &format!("{at}.audience"),
                &Value::from(audience),
            ));
            continue;
        }
        audiences.push(audience);
        let seconds = &request["expirationSeconds"];
        match seconds.as_i64() {
            Some(s) if s < 600 => faults.push(invalid(
                format!("{at}.expirationSeconds"),
                seconds,
                "may not specify a duration less than 10 minutes",
            )),
            Some(s) if s > 1 << 32 => faults.push(invalid(
                format!("{at}.expirationSeconds"),
                seconds,
                "may not specify a duration larger than 2^32 seconds",
            )),
            _ => {}
        }
    }
    for mode in spec["volumeLifecycleModes"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if !matches!(mode.as_str(), Some("Persistent" | "Ephemeral")) {
            let field = "spec.volumeLifecycleModes";
            faults.push(not_supported(field, mode, &["Persistent", "Ephemeral"]));
        }
    }
    let period = &spec["nodeAllocatableUpdatePeriodSeconds"];
    if period.as_i64().is_some_and(|p| p < 10) {
        let why = "must be greater than or equal to 10 seconds";
        faults.push(invalid(
            "spec.nodeAllocatableUpdatePeriodSeconds",
            period,
            why,
        ));
    }
    faults
}
