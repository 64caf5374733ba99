//! Checks of core (`v1`) kinds as kube-apiserver 1.37's `pkg/apis/core/validation` makes
//! them, with its fields, reasons and messages, in its order.
//!
//! # Contract
//!
//! - **ConfigMaps and Secrets**: keys of `data` (and a ConfigMap's `binaryData`) are
//!   config keys (`[-._a-zA-Z0-9]+`, at most 253 characters, not `.` or `..` nor starting
//!   with `..`), a ConfigMap's key is not in both maps, and the values (decoded) hold at
//!   most 1 MiB. A Secret of a type of `kubernetes.io/` has the keys that type needs
//!   (`tls.crt` and `tls.key`; `.dockerconfigjson` or `.dockercfg` holding a JSON object;
//!   `username` or `password`; a non-empty `ssh-privatekey`; a service account token's
//!   annotation `kubernetes.io/service-account.name`).
//! - **Events**: through `v1`, the legacy checks (the involved object's namespace, and, of
//!   an event with an `eventTime`, its reporter, instance, action and reason and their
//!   lengths); through `events.k8s.io`, those and the strict ones (an `eventTime`, a
//!   `Normal` or `Warning` type, no deprecated fields, a series of at least 2 with its
//!   time; on update, immutable fields), with the core field names, as the real server
//!   reports them.
//! - **Endpoints**: each subset has addresses; addresses are IPs outside the unspecified,
//!   loopback and link-local ranges, with DNS-label hostnames and node names; ports are
//!   named when there are several, in 1..65535, of a known protocol (`TCP` by default);
//!   no empty subsets are kept. An update that leaves the subsets alone is not checked.
//! - **ReplicationControllers**: replicas and `minReadySeconds` not negative, a selector
//!   (by default its template's labels, see `workloads`) that the template's labels
//!   match, a template whose Pods restart `Always`, without `activeDeadlineSeconds`.
//! - **PersistentVolumes**: access modes (known, `ReadWriteOncePod` alone), a `storage`
//!   capacity, one volume source (a host path or local path without `..`, a local volume
//!   with node affinity, an NFS server and absolute path, a CSI volume handle), a known
//!   reclaim policy (`Retain` by default) and volume mode (`Filesystem`); the source never
//!   changes (the real server adds a Go diff to the message); a new volume is `Pending`
//!   since the time of its create, with the `kubernetes.io/pv-protection` finalizer.
//! - **PersistentVolumeClaims**: access modes, a storage request above zero, a class
//!   that is a DNS subdomain, a known volume mode (`Filesystem`), data sources with a
//!   kind and name (`dataSourceRef` copied from `dataSource`, a source of an unknown
//!   kind without an API group dropped); the spec of an unbound claim never changes; a
//!   new claim is `Pending`, with the `kubernetes.io/pvc-protection` finalizer.
//! - **Nodes**: pod CIDRs (valid, one per family; `podCIDR` is the first, and wins over a
//!   different one), taints (qualified keys, label values, known effects, one per key and
//!   effect), under `metadata.taints` as the real server names them; pod CIDRs never
//!   change once set; a new Node has the `node.kubernetes.io/not-ready` taint and the
//!   unset status the real server shows.
//!
//! Values of the wrong JSON type are left to the decoding the fake does not do. Not done:
//! the volume sources' own checks beyond those named, node affinity's terms, a Node's
//! status and resources.

use base64::Engine;
use serde_json::{Value, json};

use crate::kinds::{Fault, invalid, invalid_as, not_supported, required};

/// The largest data of a ConfigMap or Secret, in bytes.
const MAX_DATA: usize = 1024 * 1024;

/// What the admission plugins of a create add to `obj`, a core object of `kind`, after
/// its fields are recorded: the protection finalizer of a PersistentVolume or claim
/// (`StorageObjectInUseProtection`), the `node.kubernetes.io/not-ready` taint of a Node
/// (`TaintNodesByCondition`).
pub(crate) fn admit(kind: &str, obj: &mut Value) {
    if kind == "PersistentVolumeClaim"
        && let Some(spec) = obj.get_mut("spec")
    {
        claim_sources(spec);
    }
    let finalizer = match kind {
        "PersistentVolume" => "kubernetes.io/pv-protection",
        "PersistentVolumeClaim" => "kubernetes.io/pvc-protection",
        "Node" => {
            if !obj["spec"].is_object() {
                obj["spec"] = json!({});
            }
            let taint = json!({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"});
            let same = |t: &Value| t["key"] == taint["key"] && t["effect"] == taint["effect"];
            push_unless(&mut obj["spec"]["taints"], taint.clone(), same);
            return;
        }
        _ => return,
    };
    let finalizers = &mut obj["metadata"]["finalizers"];
    push_unless(finalizers, json!(finalizer), |f| f == finalizer);
}

/// Appends `item` to the array `list` (made one when it is not) unless one of its items
/// is `same`.
fn push_unless(list: &mut Value, item: Value, same: impl Fn(&Value) -> bool) {
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(items) = list.as_array_mut()
        && !items.iter().any(same)
    {
        items.push(item);
    }
}

/// Fills the defaults of `obj`, a core object of `kind`: an Endpoints port's protocol
/// (`TCP`, and no empty subsets); a PersistentVolume's reclaim policy (`Retain`), volume
/// mode (`Filesystem`), host path type (`""`) and, when created, its phase (`Pending`)
/// and the time of that phase; a claim's volume mode and phase; a new Node's status as
/// the real server shows it unset (its kubelet's port 0, its node info's empty strings).
pub(crate) fn defaults(kind: &str, obj: &mut Value) {
    if kind == "Node"
        && let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object())
    {
        // `podCIDR` wins over a different first `podCIDRs`, and is that first one.
        {
            let first = |spec: &Value| {
                spec["podCIDRs"]
                    .get(0)
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            if let Some(cidr) = spec["podCIDR"]
                .as_str()
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                && first(spec).as_deref() != Some(cidr.as_str())
            {
                spec["podCIDRs"] = json!([cidr]);
            }
            if let Some(first) = first(spec) {
                spec["podCIDR"] = json!(first);
            }
        }
    }
    match kind {
        "Node" if obj["status"].is_null() => {
            let info = [
                "architecture",
                "bootID",
                "containerRuntimeVersion",
                "kernelVersion",
                "kubeProxyVersion",
                "kubeletVersion",
                "machineID",
                "operatingSystem",
                "osImage",
                "systemUUID",
            ]
            .map(|f| (f.to_string(), json!("")));
            obj["status"] = json!({"daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
                "nodeInfo": serde_json::Map::from_iter(info)});
        }
        "Endpoints" => {
            if obj["subsets"].as_array().is_some_and(Vec::is_empty)
                && let Some(m) = obj.as_object_mut()
            {
                m.remove("subsets");
            }
            let subsets = obj.get_mut("subsets").and_then(Value::as_array_mut);
            for subset in subsets.into_iter().flatten() {
                let ports = subset.get_mut("ports").and_then(Value::as_array_mut);
                for port in ports.into_iter().flatten().filter(|p| p.is_object()) {
                    if port["protocol"].is_null() {
                        port["protocol"] = json!("TCP");
                    }
                }
            }
        }
        "PersistentVolume" | "PersistentVolumeClaim" => {
            if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
                if kind == "PersistentVolume" && spec["persistentVolumeReclaimPolicy"].is_null() {
                    spec["persistentVolumeReclaimPolicy"] = json!("Retain");
                }
                if spec["volumeMode"].is_null() {
                    spec["volumeMode"] = json!("Filesystem");
                }
                if let Some(host_path) = spec.get_mut("hostPath").filter(|h| h.is_object())
                    && host_path["type"].is_null()
                {
                    host_path["type"] = json!("");
                }
            }
            if obj["status"].is_null() {
                obj["status"] = match kind {
                    "PersistentVolume" => json!({"lastPhaseTransitionTime": crate::store::now()}),
                    _ => json!({}),
                };
            }
            if obj["status"].is_object() && obj["status"]["phase"].is_null() {
                obj["status"]["phase"] = json!("Pending");
            }
        }
        _ => {}
    }
}

/// The faults of a core object of `kind`, being created (`old` is `None`) or replacing
/// `old`, in `namespace`.
pub(crate) fn faults(kind: &str, obj: &Value, old: Option<&Value>) -> Vec<Fault> {
    match kind {
        "ConfigMap" => config_map(obj),
        "Secret" => secret(obj),
        "Event" => legacy_event(obj, "reportingComponent"),
        "Endpoints" => {
            let faults = endpoint_subsets(&obj["subsets"]);
            // An update that leaves the subsets as they were is not checked again.
            match old.is_some_and(|o| o["subsets"] == obj["subsets"]) {
                true => Vec::new(),
                false => faults,
            }
        }
        "ReplicationController" => replication_controller(&obj["spec"]),
        "PersistentVolume" => {
            let mut faults = persistent_volume(&obj["spec"]);
            if old.is_some_and(|o| pv_source(o) != pv_source(obj)) {
                // The real server adds a Go diff of the two sources.
                let why = "spec.persistentvolumesource is immutable after creation";
                faults.push(crate::kinds::forbidden("spec.persistentvolumesource", why));
            }
            faults
        }
        "PersistentVolumeClaim" => {
            let mut faults = claim(&obj["spec"]);
            if old.is_some_and(|o| o["spec"] != obj["spec"]) {
                // The real server adds a Go diff of the two specs; an unbound claim's spec
                // never changes.
                let why = "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims";
                faults.push(crate::kinds::forbidden("spec", why));
            }
            faults
        }
        "Node" => node(obj, old),
        _ => Vec::new(),
    }
}

/// `field`'s `value` is not negative (`ValidateNonnegativeField`).
pub(crate) fn not_negative(field: &str, value: &Value) -> Vec<Fault> {
    match value.as_i64().is_some_and(|v| v < 0) {
        true => vec![invalid(field, value, "must be greater than or equal to 0")],
        false => Vec::new(),
    }
}

fn replication_controller(spec: &Value) -> Vec<Fault> {
    let mut faults = not_negative("spec.minReadySeconds", &spec["minReadySeconds"]);
    let selector = spec["selector"].as_object().filter(|s| !s.is_empty());
    if selector.is_none() {
        faults.push(required("spec.selector", ""));
    }
    match &spec["replicas"] {
        Value::Null => faults.push(required("spec.replicas", "")),
        replicas => faults.extend(not_negative("spec.replicas", replicas)),
    }
    let template = &spec["template"];
    if !template.is_object() {
        faults.push(required("spec.template", ""));
        return faults;
    }
    let labels = &template["metadata"]["labels"];
    let selected = selector
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    if !selected {
        let why = "`selector` does not match template `labels`";
        let shown = crate::defaults::go_json(labels);
        faults.push(invalid_as("spec.template.metadata.labels", &shown, why));
    }
    let restart = &template["spec"]["restartPolicy"];
    if restart.as_str() != Some("Always") {
        faults.push(not_supported(
            "spec.template.spec.restartPolicy",
            restart,
            &["Always"],
        ));
    }
    if !template["spec"]["activeDeadlineSeconds"].is_null() {
        let why = "activeDeadlineSeconds in ReplicationController is not Supported";
        faults.push(crate::kinds::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            why,
        ));
    }
    faults
}

/// The access modes of volumes and claims.
const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];

/// The faults of the access modes of a volume or claim (at `spec`); `none` is the
/// detail of their absence.
fn access_mode_faults(spec: &Value, at: &str, none: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    let modes = spec["accessModes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let field = format!("{at}.accessModes");
    if modes.is_empty() {
        faults.push(required(&field, none));
    }
    let (mut once_pod, mut others) = (false, false);
    for mode in modes {
        match mode.as_str().unwrap_or_default() {
            "ReadWriteOncePod" => once_pod = true,
            m if ACCESS_MODES.contains(&m) => others = true,
            _ => faults.push(not_supported(&field, mode, ACCESS_MODES)),
        }
    }
    if once_pod && others {
        let why = "may not use ReadWriteOncePod with other access modes";
        faults.push(crate::kinds::forbidden(&field, why));
    }
    faults
}

/// The volume sources of a PersistentVolume, by their JSON names, in the order the real
/// server checks them, with the name of each in its errors.
const PV_SOURCES: &[(&str, &str)] = &[
    ("hostPath", "hostPath"),
    ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs"),
    ("flocker", "flocker"),
    ("nfs", "nfs"),
    ("rbd", "rbd"),
    ("quobyte", "quobyte"),
    ("cephfs", "cephFS"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
    ("fc", "fc"),
    ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO"),
    ("local", "local"),
    ("storageos", "storageos"),
    ("csi", "csi"),
];

/// A path's fault when it climbs (`validatePathNoBacksteps`).
pub(crate) fn backsteps(field: &str, path: &Value) -> Option<Fault> {
    let text = path.as_str().unwrap_or_default();
    text.split('/')
        .any(|part| part == "..")
        .then(|| invalid(field, path, "must not contain '..'"))
}

fn persistent_volume(spec: &Value) -> Vec<Fault> {
    let mut faults = access_mode_faults(spec, "spec", "");
    let capacity = spec["capacity"].as_object();
    if capacity.is_none_or(|c| c.is_empty()) {
        faults.push(required("spec.capacity", ""));
    }
    if capacity.is_none_or(|c| !c.contains_key("storage") || c.len() > 1) {
        let shown = crate::defaults::go_json(&spec["capacity"]);
        let detail = format!("Unsupported value: {shown}: supported values: \"storage\"");
        faults.push(("spec.capacity".into(), "FieldValueNotSupported", detail));
    }
    let policy = &spec["persistentVolumeReclaimPolicy"];
    if policy
        .as_str()
        .is_some_and(|p| !p.is_empty() && !matches!(p, "Delete" | "Recycle" | "Retain"))
    {
        let supported = ["Delete", "Recycle", "Retain"];
        faults.push(not_supported(
            "spec.persistentVolumeReclaimPolicy",
            policy,
            &supported,
        ));
    }
    let affinity = spec["nodeAffinity"]["required"].is_object();
    let mut sources = 0;
    for (key, named) in PV_SOURCES {
        let source = &spec[*key];
        if source.is_null() {
            continue;
        }
        if sources > 0 {
            let field = format!("spec.{named}");
            faults.push(crate::kinds::forbidden(
                &field,
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        sources += 1;
        let at = format!("spec.{named}");
        match *key {
            "hostPath" | "local" => match source["path"].as_str().unwrap_or_default() {
                "" => faults.push(required(&format!("{at}.path"), "")),
                _ => faults.extend(backsteps(&format!("{at}.path"), &source["path"])),
            },
            "nfs" => {
                for field in ["server", "path"] {
                    if source[field].as_str().is_none_or(str::is_empty) {
                        faults.push(required(&format!("{at}.{field}"), ""));
                    }
                }
                if !source["path"].as_str().unwrap_or_default().starts_with('/') {
                    faults.push(invalid(
                        format!("{at}.path"),
                        &source["path"],
                        "must be an absolute path",
                    ));
                }
            }
            "csi" if source["volumeHandle"].as_str().is_none_or(str::is_empty) => {
                faults.push(required(&format!("{at}.volumeHandle"), ""));
            }
            _ => {}
        }
        if *key == "local" && !affinity {
            faults.push(required(
                "spec.nodeAffinity",
                "Local volume requires node affinity",
            ));
        }
    }
    if sources == 0 {
        faults.push(required("spec", "must specify a volume type"));
    }
    faults.extend(volume_mode_fault(spec));
    faults
}

/// The volume source of a PersistentVolume's spec: its fields of `PV_SOURCES`.
fn pv_source(obj: &Value) -> Value {
    let mut spec = obj["spec"].clone();
    if let Some(s) = spec.as_object_mut() {
        s.retain(|k, _| PV_SOURCES.iter().any(|(key, _)| key == k));
    }
    spec
}

fn claim(spec: &Value) -> Vec<Fault> {
    let mut faults = access_mode_faults(spec, "spec", "at least 1 access mode is required");
    let storage = &spec["resources"]["requests"]["storage"];
    match storage.as_str() {
        None => faults.push(required("spec.resources[storage]", "")),
        Some(q)
            if q.starts_with('-')
                || q.trim_start_matches('+')
                    .trim_start_matches(['0', '.'])
                    .is_empty() =>
        {
            faults.push(invalid(
                "spec.resources[storage]",
                storage,
                "must be greater than zero",
            ));
        }
        Some(_) => {}
    }
    let class = &spec["storageClassName"];
    if let Some(name) = class.as_str().filter(|c| !c.is_empty()) {
        for why in kubekit::validation::dns1123_subdomain(name) {
            faults.push(invalid("spec.storageClassName", class, &why));
        }
    }
    faults.extend(volume_mode_fault(spec));
    for source in ["dataSource", "dataSourceRef"] {
        let reference = &spec[source];
        if reference.is_object() {
            for field in ["name", "kind"] {
                if reference[field].as_str().is_none_or(str::is_empty) {
                    faults.push(required(&format!("spec.{source}.{field}"), ""));
                }
            }
        }
    }
    faults
}

/// Fills a claim's data sources as the real server does: a source of a kind it does not
/// know without an API group is dropped, `dataSourceRef` is `dataSource` when unset, and
/// both show their API group (`null` when unset).
fn claim_sources(spec: &mut Value) {
    let Some(m) = spec.as_object_mut() else {
        return;
    };
    if let Some(source) = m.get("dataSource").filter(|s| s.is_object()) {
        let known = matches!(source["kind"].as_str(), Some("PersistentVolumeClaim"));
        if source["apiGroup"].as_str().is_none_or(str::is_empty) && !known {
            m.remove("dataSource");
        }
    }
    if let Some(source) = m.get("dataSource").cloned()
        && !m.get("dataSourceRef").is_some_and(Value::is_object)
    {
        m.insert("dataSourceRef".into(), source);
    }
    for field in ["dataSource", "dataSourceRef"] {
        if let Some(reference) = m.get_mut(field).and_then(Value::as_object_mut) {
            reference.entry("apiGroup").or_insert(Value::Null);
        }
    }
}

/// The effects of a taint.
const TAINT_EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

fn node(obj: &Value, old: Option<&Value>) -> Vec<Fault> {
    let spec = &obj["spec"];
    let mut faults = Vec::new();
    let cidrs = spec["podCIDRs"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut families = Vec::new();
    for (i, cidr) in cidrs.iter().enumerate() {
        match crate::networking_kinds::parse_cidr(cidr.as_str().unwrap_or_default()) {
            None => faults.push(invalid(
                format!("spec.podCIDRs[{i}]"),
                cidr,
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            )),
            Some((ip, _)) => families.push(ip.is_ipv4()),
        }
    }
    if cidrs.len() > 1
        && faults.is_empty()
        && (cidrs.len() > 2 || families.first() == families.get(1))
    {
        let shown = crate::defaults::go_json(&spec["podCIDRs"]);
        let why = "may specify no more than one CIDR for each IP family";
        faults.push(crate::kinds::invalid_as("spec.podCIDRs", &shown, why));
    }
    let taints = spec["taints"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, taint) in taints.iter().enumerate() {
        // The real server names the taints' path so.
        let at = format!("metadata.taints[{i}]");
        let key = taint["key"].as_str().unwrap_or_default();
        for why in crate::kinds::qualified_name_errors(key) {
            faults.push(invalid(format!("{at}.key"), &Value::from(key), &why));
        }
        if let Some(value) = taint["value"].as_str() {
            for why in crate::cel_library::label_value_errors(value) {
                faults.push(invalid(format!("{at}.value"), &taint["value"], &why));
            }
        }
        let effect = &taint["effect"];
        match effect.as_str().unwrap_or_default() {
            "" => faults.push(required(&format!("{at}.effect"), "")),
            e if !TAINT_EFFECTS.contains(&e) => {
                faults.push(not_supported(
                    &format!("{at}.effect"),
                    effect,
                    TAINT_EFFECTS,
                ));
            }
            _ => {}
        }
        let same = |t: &Value| t["key"] == taint["key"] && t["effect"] == taint["effect"];
        if taints[..i].iter().any(same) {
            let shown = format!(
                "{{\"Key\":{},\"Value\":{},\"Effect\":{},\"TimeAdded\":null}}",
                Value::from(key),
                Value::from(taint["value"].as_str().unwrap_or_default()),
                Value::from(effect.as_str().unwrap_or_default()),
            );
            let detail =
                format!("Duplicate value: {shown}: taints must be unique by key and effect pair");
            faults.push((at, "FieldValueDuplicate", detail));
        }
    }
    if let Some(old) = old {
        let before = old["spec"]["podCIDRs"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        if !before.is_empty() && before != cidrs {
            let why = "node updates may not change podCIDR except from \"\" to valid";
            faults.push(crate::kinds::forbidden("spec.podCIDRs", why));
        }
    }
    faults
}

/// apimachinery's `IsConfigMapKey`.
pub(crate) fn config_key_errors(key: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if key.len() > 253 {
        errors.push("must be no more than 253 characters".to_string());
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    if key.is_empty() || !key.chars().all(allowed) {
        errors.push("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')".into());
    }
    match key {
        "." => errors.push("must not be '.'".into()),
        ".." => errors.push("must not be '..'".into()),
        _ if key.starts_with("..") => errors.push("must not start with '..'".into()),
        _ => {}
    }
    errors
}

/// The faults of the keys of `map` (at `path`).
fn key_faults(path: &str, map: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    for key in map.as_object().into_iter().flat_map(|m| m.keys()) {
        for why in config_key_errors(key) {
            faults.push(invalid(
                format!("{path}[{key}]"),
                &Value::from(key.as_str()),
                &why,
            ));
        }
    }
    faults
}

/// The decoded length of a base64 value of `data` (its text length if it is not base64).
fn decoded_len(value: &Value) -> usize {
    let text = value.as_str().unwrap_or_default();
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_or(text.len(), |b| b.len())
}

fn config_map(obj: &Value) -> Vec<Fault> {
    let (data, binary) = (&obj["data"], &obj["binaryData"]);
    let mut faults = Vec::new();
    let mut total = 0;
    for (key, value) in data.as_object().into_iter().flatten() {
        for why in config_key_errors(key) {
            faults.push(invalid(
                format!("data[{key}]"),
                &Value::from(key.as_str()),
                &why,
            ));
        }
        if binary.get(key).is_some() {
            let why = "duplicate of key present in binaryData";
            faults.push(invalid(
                format!("data[{key}]"),
                &Value::from(key.as_str()),
                why,
            ));
        }
        total += value.as_str().map_or(0, str::len);
    }
    faults.extend(key_faults("binaryData", binary));
    total += binary
        .as_object()
        .into_iter()
        .flatten()
        .map(|(_, v)| decoded_len(v))
        .sum::<usize>();
    if total > MAX_DATA {
        // The real server's path of the whole object.
        faults.push(too_long("[]", MAX_DATA));
    }
    faults
}

/// `field` is longer than `max` bytes.
pub(crate) fn too_long(field: &str, max: usize) -> Fault {
    (
        field.into(),
        "FieldValueTooLong",
        format!("Too long: may not be more than {max} bytes"),
    )
}

/// Go's error for `bytes` that do not decode as JSON into a map.
fn json_object_error(bytes: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(_)) => None,
        Ok(other) => {
            let kind = match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                Value::Bool(_) => "bool",
                _ => return None,
            };
            Some(format!(
                "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
            ))
        }
        Err(e) if e.is_eof() => Some("unexpected end of JSON input".into()),
        Err(e) => Some(e.to_string()),
    }
}

fn secret(obj: &Value) -> Vec<Fault> {
    let data = &obj["data"];
    let mut faults = key_faults("data", data);
    let total: usize = data
        .as_object()
        .into_iter()
        .flatten()
        .map(|(_, v)| decoded_len(v))
        .sum();
    if total > MAX_DATA {
        faults.push(too_long("data", MAX_DATA));
    }
    let has = |key: &str| data.get(key).is_some();
    let decoded = |key: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(data[key].as_str().unwrap_or_default())
            .unwrap_or_default()
    };
    let key_required = |key: &str| required(&format!("data[{key}]"), "");
    match obj["type"].as_str().unwrap_or_default() {
        "kubernetes.io/service-account-token" => {
            let name = &obj["metadata"]["annotations"]["kubernetes.io/service-account.name"];
            if name.as_str().is_none_or(str::is_empty) {
                let field = "metadata.annotations[kubernetes.io/service-account.name]";
                faults.push(required(field, ""));
            }
        }
        kind @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let key = match kind {
                "kubernetes.io/dockercfg" => ".dockercfg",
                _ => ".dockerconfigjson",
            };
            if !has(key) {
                faults.push(key_required(key));
            } else if let Some(why) = json_object_error(&decoded(key)) {
                let redacted = Value::from("<secret contents redacted>");
                faults.push(invalid(format!("data[{key}]"), &redacted, &why));
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            faults.push(key_required("username"));
            faults.push(key_required("password"));
        }
        "kubernetes.io/ssh-auth" if decoded("ssh-privatekey").is_empty() => {
            faults.push(key_required("ssh-privatekey"));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    faults.push(key_required(key));
                }
            }
        }
        _ => {}
    }
    faults
}

/// The faults of an `events.k8s.io` Event (`obj` in its core form) being created or
/// replacing `old` (also in its core form).
pub(crate) fn events_v1_faults(obj: &Value, old: Option<&Value>) -> Vec<Fault> {
    let mut faults = legacy_event(obj, "reportingController");
    let series = |faults: &mut Vec<Fault>| {
        let series = &obj["series"];
        if series.is_object() {
            if series["count"].as_i64().unwrap_or(0) < 2 {
                faults.push(invalid(
                    "series.count",
                    &Value::from(""),
                    "should be at least 2",
                ));
            }
            if series["lastObservedTime"]
                .as_str()
                .is_none_or(str::is_empty)
            {
                faults.push(required("series.lastObservedTime", ""));
            }
        }
    };
    let Some(old) = old else {
        series(&mut faults);
        let unset = |v: &Value| v.is_null() || v.as_str() == Some("");
        if unset(&obj["eventTime"]) {
            faults.push(required("eventTime", ""));
        }
        let kind = obj["type"].as_str().unwrap_or_default();
        if !matches!(kind, "Normal" | "Warning") {
            let why = format!("has invalid value: {kind}");
            faults.push(invalid("type", &Value::from(""), &why));
        }
        for field in ["firstTimestamp", "lastTimestamp"] {
            if !unset(&obj[field]) {
                faults.push(invalid(field, &Value::from(""), "needs to be unset"));
            }
        }
        if obj["count"].as_i64().unwrap_or(0) != 0 {
            faults.push(invalid("count", &Value::from(""), "needs to be unset"));
        }
        let source = &obj["source"];
        let set = |f: &str| source[f].as_str().is_some_and(|s| !s.is_empty());
        if set("component") || set("host") {
            faults.push(invalid("source", &Value::from(""), "needs to be unset"));
        }
        return faults;
    };
    if obj["series"] != old["series"] {
        series(&mut faults);
    }
    for field in [
        "involvedObject",
        "reason",
        "message",
        "source",
        "firstTimestamp",
        "lastTimestamp",
        "count",
        "type",
        "eventTime",
        "action",
        "related",
        "reportingComponent",
        "reportingInstance",
    ] {
        if obj[field] != old[field] {
            faults.extend(crate::kinds::immutable(field, &obj[field]));
        }
    }
    faults
}

/// apiserver's `legacyValidateEvent`; `reporter` is the name of the reporting
/// controller's field in the request's version.
fn legacy_event(obj: &Value, reporter: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    let text = |field: &str| obj[field].as_str().unwrap_or_default();
    let namespace = obj["metadata"]["namespace"].as_str().unwrap_or_default();
    let involved = &obj["involvedObject"]["namespace"];
    let involved_ns = involved.as_str().unwrap_or_default();
    let mismatch = || {
        let value = Value::from(involved_ns);
        invalid(
            "involvedObject.namespace",
            &value,
            "does not match event.namespace",
        )
    };
    if text("eventTime").is_empty() {
        let matches = match involved_ns {
            "" => namespace.is_empty() || namespace == "default",
            ns => ns == namespace,
        };
        if !matches {
            faults.push(mismatch());
        }
        return faults;
    }
    if involved_ns.is_empty() && !matches!(namespace, "default" | "kube-system") {
        faults.push(mismatch());
    }
    let controller = text("reportingComponent");
    if controller.is_empty() {
        faults.push(required(reporter, ""));
    }
    for why in crate::kinds::qualified_name_errors(controller) {
        faults.push(invalid(reporter, &Value::from(controller), &why));
    }
    let limits = [
        ("reportingInstance", 128, true),
        ("action", 128, true),
        ("reason", 128, true),
        ("message", 1024, false),
    ];
    for (field, limit, needed) in limits {
        let value = text(field);
        if needed && value.is_empty() {
            faults.push(required(field, ""));
        }
        if value.len() > limit {
            let why = format!("can have at most {limit} characters");
            faults.push(invalid(field, &Value::from(""), &why));
        }
    }
    faults
}

/// apimachinery's `IsValidPortNum`.
pub(crate) fn port_errors(port: &Value) -> Vec<String> {
    match port.as_i64() {
        Some(1..=65535) => Vec::new(),
        _ => vec!["must be between 1 and 65535, inclusive".into()],
    }
}

/// The protocols of ports.
pub(crate) const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

fn endpoint_subsets(subsets: &Value) -> Vec<Fault> {
    let mut faults = Vec::new();
    for (i, subset) in subsets.as_array().into_iter().flatten().enumerate() {
        let at = format!("subsets[{i}]");
        let none = |f: &str| subset[f].as_array().is_none_or(Vec::is_empty);
        if none("addresses") && none("notReadyAddresses") {
            let why = "must specify `addresses` or `notReadyAddresses`";
            faults.push(required(&at, why));
        }
        for list in ["addresses", "notReadyAddresses"] {
            for (j, address) in subset[list].as_array().into_iter().flatten().enumerate() {
                faults.extend(endpoint_address(address, &format!("{at}.{list}[{j}]")));
            }
        }
        let ports = subset["ports"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for (j, port) in ports.iter().enumerate() {
            let at = format!("{at}.ports[{j}]");
            let name = port["name"].as_str().unwrap_or_default();
            if ports.len() > 1 && name.is_empty() {
                faults.push(required(&format!("{at}.name"), ""));
            } else if !name.is_empty() {
                for why in kubekit::validation::dns1123_label(name) {
                    faults.push(invalid(format!("{at}.name"), &port["name"], &why));
                }
            }
            for why in port_errors(&port["port"]) {
                faults.push(invalid(format!("{at}.port"), &port["port"], &why));
            }
            match port["protocol"].as_str().unwrap_or_default() {
                "" => faults.push(required(&format!("{at}.protocol"), "")),
                p if !PROTOCOLS.contains(&p) => {
                    faults.push(not_supported(
                        &format!("{at}.protocol"),
                        &port["protocol"],
                        PROTOCOLS,
                    ));
                }
                _ => {}
            }
            if let Some(app) = port["appProtocol"].as_str() {
                for why in crate::kinds::qualified_name_errors(app) {
                    faults.push(invalid(
                        format!("{at}.appProtocol"),
                        &port["appProtocol"],
                        &why,
                    ));
                }
            }
        }
    }
    faults
}

fn endpoint_address(address: &Value, at: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    let ip_text = address["ip"].as_str().unwrap_or_default();
    let ip = ip_text.parse::<std::net::IpAddr>().ok();
    if ip.is_none() {
        let why = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
        faults.push(invalid(format!("{at}.ip"), &address["ip"], why));
    }
    if let Some(hostname) = address["hostname"].as_str().filter(|h| !h.is_empty()) {
        for why in kubekit::validation::dns1123_label(hostname) {
            faults.push(invalid(
                format!("{at}.hostname"),
                &address["hostname"],
                &why,
            ));
        }
    }
    if let Some(node) = address["nodeName"].as_str() {
        for why in kubekit::validation::dns1123_subdomain(node) {
            faults.push(invalid(
                format!("{at}.nodeName"),
                &address["nodeName"],
                &why,
            ));
        }
    }
    match ip {
        None => faults.push(invalid(
            format!("{at}.ip"),
            &address["ip"],
            "must be a valid IP address",
        )),
        Some(ip) => {
            for why in endpoint_ip_errors(ip, ip_text) {
                faults.push(invalid(format!("{at}.ip"), &address["ip"], &why));
            }
        }
    }
    faults
}

/// `ValidateEndpointIP`'s faults of `ip` (written `text`): the ranges an endpoint may not
/// be in.
pub(crate) fn endpoint_ip_errors(ip: std::net::IpAddr, text: &str) -> Vec<String> {
    use std::net::IpAddr;
    let mut errors = Vec::new();
    let (unspecified, loopback, link_local, link_local_multicast) = match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (
                v4.is_unspecified(),
                v4.is_loopback(),
                v4.is_link_local(),
                o[0] == 224 && o[1] == 0 && o[2] == 0,
            )
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            (
                v6.is_unspecified(),
                v6.is_loopback(),
                s[0] & 0xffc0 == 0xfe80,
                s[0] & 0xff0f == 0xff02,
            )
        }
    };
    if unspecified {
        errors.push(format!("may not be unspecified ({text})"));
    }
    if loopback {
        errors.push("may not be in the loopback range (127.0.0.0/8, ::1/128)".into());
    }
    if link_local {
        errors.push("may not be in the link-local range (169.254.0.0/16, fe80::/10)".into());
    }
    if link_local_multicast {
        errors
            .push("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)".into());
    }
    errors
}

/// A PersistentVolume's or claim's `volumeMode` that is neither `Block` nor `Filesystem`.
fn volume_mode_fault(spec: &Value) -> Option<Fault> {
    let mode = &spec["volumeMode"];
    let known = ["Block", "Filesystem"];
    mode.as_str()
        .is_some_and(|m| !known.contains(&m))
        .then(|| not_supported("spec.volumeMode", mode, &known))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_keys_are_checked_as_apimachinery_checks_them() {
        assert!(config_key_errors("a.b-c_D").is_empty());
        assert_eq!(config_key_errors("."), ["must not be '.'"]);
        assert_eq!(config_key_errors(".."), ["must not be '..'"]);
        assert_eq!(config_key_errors("..a"), ["must not start with '..'"]);
        assert!(config_key_errors("a b")[0].starts_with("a valid config key"));
        assert_eq!(config_key_errors(&"k".repeat(254)).len(), 1);
    }

    #[test]
    fn docker_configs_must_be_json_objects_with_go_s_errors() {
        assert_eq!(json_object_error(b"{\"auths\":{}}"), None);
        assert_eq!(
            json_object_error(b"{").as_deref(),
            Some("unexpected end of JSON input")
        );
        assert_eq!(
            json_object_error(b"[]").as_deref(),
            Some("json: cannot unmarshal array into Go value of type map[string]interface {}")
        );
    }

    #[test]
    fn endpoint_ips_may_not_be_loopback_or_link_local() {
        let errors = |ip: &str| endpoint_ip_errors(ip.parse().expect("an IP"), ip).len();
        assert_eq!(errors("10.1.0.1"), 0);
        for bad in [
            "0.0.0.0",
            "127.0.0.2",
            "169.254.1.1",
            "224.0.0.1",
            "::1",
            "fe80::1",
            "ff02::1",
        ] {
            assert_eq!(errors(bad), 1, "{bad}");
        }
        assert_eq!(errors("224.0.1.1"), 0);
    }

    #[test]
    fn a_node_s_pod_cidr_wins_over_a_different_first_of_its_list() {
        let mut node =
            json!({"spec": {"podCIDR": "10.0.1.0/24", "podCIDRs": ["10.0.2.0/24", "fd00::/64"]}});
        defaults("Node", &mut node);
        assert_eq!(node["spec"]["podCIDRs"], json!(["10.0.1.0/24"]));
        let mut listed = json!({"spec": {"podCIDRs": ["10.0.2.0/24"]}});
        defaults("Node", &mut listed);
        assert_eq!(listed["spec"]["podCIDR"], "10.0.2.0/24");
        let mut odd = json!({"spec": "x"});
        defaults("Node", &mut odd);
        admit("Node", &mut odd);
        assert_eq!(
            odd["spec"]["taints"][0]["key"],
            "node.kubernetes.io/not-ready"
        );
    }
}
