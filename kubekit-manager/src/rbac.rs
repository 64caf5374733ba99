//! The RBAC a manager's program needs, derived from what it was built with
//! ([`Manager::rbac`](crate::Manager::rbac)): no `rbac.yaml` kept in step by hand.
//!
//! # Where the rules come from
//!
//! - **Informers**: `list` and `watch` on every resource the manager's informer factory
//!   has an informer for: the controllers' primary, owned and watched types, and every
//!   lister taken from [`Manager::factory`](crate::Manager::factory).
//! - **Owned types** ([`owns`](crate::ControllerBuilder::owns)): `update` on the primary
//!   type's `finalizers` subresource, which a child's controller reference with
//!   `blockOwnerDeletion` needs where the `OwnerReferencesPermissionEnforcement` admission
//!   plugin runs.
//! - **What reconciles write**, declared where the controller is built:
//!   [`writes`](crate::ControllerBuilder::writes) (a type's verbs: [`Verb::APPLY`] for a
//!   server-side apply, which creates too) and
//!   [`writes_status`](crate::ControllerBuilder::writes_status); anything else a program
//!   calls with [`Manager::permit`](crate::Manager::permit).
//! - **Events** ([`Manager::event_recorder`](crate::Manager::event_recorder)): `create`
//!   and `patch` of core `events` (the recorder patches a repeated Event's count), in the
//!   manager's namespace (an Event about a cluster-scoped object is written to `default`:
//!   a namespaced manager recording those permits them there).
//! - **Leader election**: `get` and `update` of its Lease, by name, and `create`, in the
//!   Lease's namespace. **Sharding**: `list`, `watch`, `create`, `update` and `delete` of
//!   Leases in the ring's namespace (a member lists and watches the ring and deletes the
//!   Leases of members gone).
//! - **Webhooks** ([`install_webhook_manifests`](crate::ManagerBuilder::install_webhook_manifests)):
//!   `create` and `patch` of the webhook configurations, by name (applied), `patch` of
//!   the CRDs whose conversion it installs; with [generated
//!   certificates](kubekit_webhook::Certificates::generated), `get` and `update` of each
//!   object its `caBundle` is written into.
//!
//! Rules are scoped as the requests are: with a [manager
//! namespace](crate::ManagerBuilder::namespace), a namespaced resource's rules are a Role
//! in it; otherwise, and for cluster-scoped resources, a ClusterRole.
//! [`Rbac::manifests`] renders the ClusterRole, the Roles and their bindings to given
//! subjects. `create`, `list`, `watch` and `deletecollection` never carry `resourceNames`
//! (kube-apiserver's authorizer sees no name for a create by POST or for a collection).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;

/// An RBAC verb.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verb {
    /// `get`.
    Get,
    /// `list`.
    List,
    /// `watch`.
    Watch,
    /// `create` (also a server-side apply that creates).
    Create,
    /// `update`.
    Update,
    /// `patch` (also a server-side apply).
    Patch,
    /// `delete`.
    Delete,
    /// `deletecollection`.
    DeleteCollection,
}

impl Verb {
    /// What a server-side apply needs: `patch`, and `create` for the first apply.
    pub const APPLY: [Verb; 2] = [Verb::Create, Verb::Patch];
    /// What an informer needs: `list` and `watch`.
    pub const READ: [Verb; 2] = [Verb::List, Verb::Watch];

    /// The verb as RBAC spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }

    /// Whether kube-apiserver's authorizer sees no object name for it, so that a rule
    /// with `resourceNames` never grants it.
    const fn is_nameless(self) -> bool {
        matches!(
            self,
            Verb::Create | Verb::List | Verb::Watch | Verb::DeleteCollection
        )
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a rule applies, and to what: its namespace (`None`: cluster-wide), API group,
/// resource (with `/subresource`) and resource names (empty: every object).
type Target = (Option<String>, String, String, BTreeSet<String>);

/// One permission: verbs on a resource, in a namespace or cluster-wide, optionally on
/// named objects only.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct Rule {
    namespace: Option<String>,
    group: String,
    resource: String,
    names: BTreeSet<String>,
    verbs: BTreeSet<Verb>,
}

impl Rule {
    /// A rule on `resource` (a plural, `deployments`, or `deployments/status`) of API
    /// `group` (`""` for the core group), cluster-wide, with no verbs yet.
    pub fn new(group: &str, resource: &str) -> Self {
        Self {
            namespace: None,
            group: group.to_string(),
            resource: resource.to_string(),
            names: BTreeSet::new(),
            verbs: BTreeSet::new(),
        }
    }

    /// A rule on `K`'s resource.
    pub fn of<K: Resource<DynamicType = ()>>() -> Self {
        Self::new(&K::group(&()), &K::plural(&()))
    }

    /// On the subresource `sub` (`status`, `finalizers`, `scale`) of the resource.
    pub fn subresource(mut self, sub: &str) -> Self {
        self.resource = format!("{}/{sub}", self.resource);
        self
    }

    /// In `namespace` only (`""`: cluster-wide, the default).
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = (!namespace.is_empty()).then(|| namespace.to_string());
        self
    }

    /// On these objects only (`resourceNames`).
    pub fn names<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.names.extend(names.into_iter().map(Into::into));
        self
    }

    /// With these verbs.
    pub fn verbs(mut self, verbs: impl IntoIterator<Item = Verb>) -> Self {
        self.verbs.extend(verbs);
        self
    }
}

/// The permissions of a program, merged: see the [module docs](self).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rbac {
    rules: BTreeMap<Target, BTreeSet<Verb>>,
}

impl Rbac {
    /// No permissions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `rule` (its nameless verbs without its `resourceNames`).
    pub fn add(&mut self, rule: Rule) {
        let Rule {
            namespace,
            group,
            resource,
            names,
            verbs,
        } = rule;
        for verb in verbs {
            let names = match verb.is_nameless() {
                true => BTreeSet::new(),
                false => names.clone(),
            };
            let target = (namespace.clone(), group.clone(), resource.clone(), names);
            self.rules.entry(target).or_default().insert(verb);
        }
    }

    /// Adds every rule of `other`.
    pub fn merge(&mut self, other: &Rbac) {
        for (target, verbs) in &other.rules {
            self.rules
                .entry(target.clone())
                .or_default()
                .extend(verbs.iter().copied());
        }
    }

    /// Whether a request of `verb` on `resource` (with `/subresource`) of `group`, in
    /// `namespace` (`None`: a cluster-scoped object or all namespaces), on the object
    /// `name` (`None`: no name, as a create or a list) is granted, as kube-apiserver's RBAC
    /// authorizer decides it: a cluster-wide rule grants in every namespace.
    pub fn allows(
        &self,
        verb: Verb,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: Option<&str>,
    ) -> bool {
        self.rules.iter().any(|((ns, g, r, names), verbs)| {
            verbs.contains(&verb)
                && g == group
                && r == resource
                && (ns.is_none() || ns.as_deref() == namespace)
                && (names.is_empty() || name.is_some_and(|n| names.contains(n)))
        })
    }

    /// Whether it grants nothing.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The namespaces that get a Role, in order.
    fn namespaces(&self) -> BTreeSet<&str> {
        self.rules
            .keys()
            .filter_map(|(ns, ..)| ns.as_deref())
            .collect()
    }

    /// The rules of `namespace` (`None`: the cluster-wide ones) as RBAC writes them: one
    /// per group, names and verbs, its resources sorted.
    fn policy_rules(&self, namespace: Option<&str>) -> Vec<PolicyRule> {
        // (group, names, verbs) -> resources.
        type Shared<'a> = (&'a str, &'a BTreeSet<String>, Vec<&'static str>);
        let mut merged: BTreeMap<Shared<'_>, BTreeSet<&str>> = BTreeMap::new();
        for ((ns, group, resource, names), verbs) in &self.rules {
            if ns.as_deref() != namespace {
                continue;
            }
            let verbs = verbs.iter().map(|v| v.as_str()).collect();
            merged
                .entry((group.as_str(), names, verbs))
                .or_default()
                .insert(resource.as_str());
        }
        let mut rules: Vec<PolicyRule> = merged
            .into_iter()
            .map(|((group, names, verbs), resources)| PolicyRule {
                api_groups: Some(vec![group.to_string()]),
                resources: Some(resources.into_iter().map(String::from).collect()),
                resource_names: (!names.is_empty()).then(|| names.iter().cloned().collect()),
                verbs: verbs.into_iter().map(String::from).collect(),
                non_resource_urls: None,
            })
            .collect();
        // By group, then resource: the order a reader looks things up in.
        rules.sort_by(|a, b| (&a.api_groups, &a.resources).cmp(&(&b.api_groups, &b.resources)));
        rules
    }

    /// The ClusterRole `name` of the cluster-wide rules, if there are any.
    pub fn cluster_role(&self, name: &str) -> Option<ClusterRole> {
        let rules = self.policy_rules(None);
        (!rules.is_empty()).then(|| ClusterRole {
            metadata: named(name, None),
            rules: Some(rules),
            aggregation_rule: None,
        })
    }

    /// The Roles `name` of the namespaced rules, one per namespace.
    pub fn roles(&self, name: &str) -> Vec<Role> {
        self.namespaces()
            .into_iter()
            .map(|ns| Role {
                metadata: named(name, Some(ns)),
                rules: Some(self.policy_rules(Some(ns))),
            })
            .collect()
    }

    /// The ClusterRole and Roles named `name`, each with a binding of the same name to
    /// `subjects`, as a YAML stream for `kubectl apply -f`.
    pub fn manifests(&self, name: &str, subjects: &[Subject]) -> String {
        let role_ref = |kind: &str| RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: kind.into(),
            name: name.into(),
        };
        let subjects = (!subjects.is_empty()).then(|| subjects.to_vec());
        let mut documents = Vec::new();
        if let Some(role) = self.cluster_role(name) {
            documents.push(yaml(&role));
            documents.push(yaml(&ClusterRoleBinding {
                metadata: named(name, None),
                role_ref: role_ref("ClusterRole"),
                subjects: subjects.clone(),
            }));
        }
        for role in self.roles(name) {
            let namespace = role.metadata.namespace.as_deref();
            let binding = RoleBinding {
                metadata: named(name, namespace),
                role_ref: role_ref("Role"),
                subjects: subjects.clone(),
            };
            documents.push(yaml(&role));
            documents.push(yaml(&binding));
        }
        documents.join("---\n")
    }
}

/// Metadata of `name`, in `namespace`.
fn named(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(String::from),
        ..ObjectMeta::default()
    }
}

/// `object` as one YAML document (k8s-openapi writes its `apiVersion` and `kind`).
fn yaml(object: &impl serde::Serialize) -> String {
    serde_saphyr::to_string(object).unwrap_or_default()
}

/// The subject a `--rbac-subject` style flag names: `serviceaccount:NAMESPACE:NAME`,
/// `user:NAME` or `group:NAME`.
pub fn parse_subject(value: &str) -> Result<Subject, String> {
    let rbac = || Some("rbac.authorization.k8s.io".to_string());
    let subject = |kind: &str, name: &str, namespace: Option<&str>, api_group| Subject {
        kind: kind.to_string(),
        name: name.to_string(),
        namespace: namespace.map(String::from),
        api_group,
    };
    match value.split(':').collect::<Vec<_>>()[..] {
        ["serviceaccount", ns, name] if !ns.is_empty() && !name.is_empty() => {
            Ok(subject("ServiceAccount", name, Some(ns), None))
        }
        ["user", name] if !name.is_empty() => Ok(subject("User", name, None, rbac())),
        ["group", name] if !name.is_empty() => Ok(subject("Group", name, None, rbac())),
        _ => Err(format!(
            "{value:?} is not a subject: serviceaccount:NAMESPACE:NAME, user:NAME or group:NAME"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::coordination::v1::Lease;

    #[test]
    fn rules_merge_by_target_and_nameless_verbs_drop_their_names() {
        let mut rbac = Rbac::new();
        rbac.add(Rule::of::<Deployment>().verbs(Verb::READ));
        rbac.add(Rule::of::<Deployment>().verbs(Verb::APPLY));
        let lease = Rule::of::<Lease>().namespace("ops").names(["leader"]);
        rbac.add(lease.verbs([Verb::Get, Verb::Update, Verb::Create]));
        assert!(rbac.allows(Verb::Patch, "apps", "deployments", Some("x"), Some("d")));
        assert!(rbac.allows(Verb::Watch, "apps", "deployments", None, None));
        assert!(!rbac.allows(Verb::Delete, "apps", "deployments", None, Some("d")));
        let leases = "leases";
        let group = "coordination.k8s.io";
        assert!(rbac.allows(Verb::Update, group, leases, Some("ops"), Some("leader")));
        assert!(!rbac.allows(Verb::Update, group, leases, Some("ops"), Some("other")));
        assert!(!rbac.allows(Verb::Update, group, leases, Some("dev"), Some("leader")));
        assert!(
            rbac.allows(Verb::Create, group, leases, Some("ops"), None),
            "a create is granted without a name"
        );
        let roles = rbac.roles("ctl");
        assert_eq!(roles.len(), 1);
        let rules = roles[0].rules.as_ref().unwrap();
        assert_eq!(rules.len(), 2, "{rules:?}");
        assert_eq!(rules[0].resource_names, None);
        assert_eq!(rules[0].verbs, ["create"]);
        assert_eq!(rules[1].resource_names, Some(vec!["leader".to_string()]));
        assert_eq!(rules[1].verbs, ["get", "update"]);
        let cluster = rbac.cluster_role("ctl").unwrap();
        let rules = cluster.rules.unwrap();
        assert_eq!(rules.len(), 1, "one rule per group, names and verbs");
        assert_eq!(rules[0].verbs, ["list", "watch", "create", "patch"]);
    }

    #[test]
    fn resources_with_the_same_verbs_share_a_rule_and_subresources_stay_apart() {
        let mut rbac = Rbac::new();
        for resource in ["services", "configmaps"] {
            rbac.add(Rule::new("", resource).verbs(Verb::READ));
        }
        rbac.add(
            Rule::new("", "services")
                .subresource("status")
                .verbs([Verb::Patch]),
        );
        let rules = rbac.cluster_role("c").unwrap().rules.unwrap();
        assert_eq!(rules.len(), 2, "{rules:?}");
        let resources: Vec<_> = rules.iter().map(|r| r.resources.clone().unwrap()).collect();
        assert!(resources.contains(&vec!["configmaps".to_string(), "services".to_string()]));
        assert!(resources.contains(&vec!["services/status".to_string()]));
        assert!(!rbac.allows(Verb::Patch, "", "services", None, Some("s")));
    }

    #[test]
    fn manifests_bind_the_cluster_role_and_each_role_to_the_subjects() {
        let mut rbac = Rbac::new();
        rbac.add(Rule::of::<Deployment>().verbs(Verb::READ));
        rbac.add(Rule::of::<Lease>().namespace("ops").verbs([Verb::Create]));
        let subjects = [
            parse_subject("serviceaccount:ops:ctl").unwrap(),
            parse_subject("user:alice").unwrap(),
        ];
        let yaml = rbac.manifests("ctl", &subjects);
        let docs: Vec<serde_json::Value> = yaml
            .split("---\n")
            .map(|d| serde_saphyr::from_str(d).unwrap())
            .collect();
        let kinds: Vec<_> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"]
        );
        assert_eq!(docs[1]["roleRef"]["kind"], "ClusterRole");
        assert_eq!(docs[3]["metadata"]["namespace"], "ops");
        assert_eq!(docs[3]["roleRef"]["kind"], "Role");
        assert_eq!(docs[3]["subjects"][0]["kind"], "ServiceAccount");
        assert_eq!(docs[3]["subjects"][0]["namespace"], "ops");
        assert_eq!(docs[3]["subjects"][1]["name"], "alice");
        assert_eq!(docs[0]["apiVersion"], "rbac.authorization.k8s.io/v1");
        assert_eq!(
            Rbac::new().manifests("ctl", &subjects),
            "",
            "nothing to grant"
        );
    }

    #[tokio::test]
    async fn a_managers_rbac_covers_its_informers_declared_writes_events_and_lease_in_their_scopes()
    {
        use crate::Manager;
        use k8s_openapi::api::apps::v1::ReplicaSet;
        use kubekit_runtime::controller::{ReconcileAction, ReconcileError};
        use kubekit_runtime::leaderelection::{LeaderElectionConfig, LeaseLock};
        use std::sync::Arc;

        let config = kubekit_client::rest::RestConfig::from_url("http://127.0.0.1:9").unwrap();
        let mut mgr = Manager::builder(config)
            .namespace("shop")
            .leader_election(|clientset| {
                LeaderElectionConfig::new(LeaseLock::from_clientset(clientset, "ops", "ctl"))
            })
            .build()
            .unwrap();
        async fn noop(_: Arc<Deployment>, _: Arc<()>) -> Result<ReconcileAction, ReconcileError> {
            Ok(ReconcileAction::Done)
        }
        let _nodes = mgr.factory().core_v1().nodes().lister();
        let controller = mgr.controller::<Deployment>("ctl").owns::<ReplicaSet>();
        let controller = controller.writes::<ReplicaSet>(Verb::APPLY);
        let controller = controller.writes_status([Verb::Patch]);
        controller.build(noop, Arc::new(())).unwrap();
        let events = Rbac::new().allows(Verb::Create, "", "events", Some("shop"), None);
        assert!(!events, "no events before a recorder is taken");
        let _recorder = mgr.event_recorder("ctl");
        let rbac = mgr.rbac();

        let shop = Some("shop");
        assert!(rbac.allows(Verb::Watch, "apps", "deployments", shop, None));
        assert!(rbac.allows(Verb::List, "apps", "replicasets", shop, None));
        assert!(
            !rbac.allows(Verb::List, "apps", "deployments", Some("other"), None),
            "a namespaced manager's rules are a Role in its namespace"
        );
        assert!(
            rbac.cluster_role("c")
                .is_some_and(|r| r.rules.unwrap().len() == 1)
        );
        assert!(
            rbac.allows(Verb::Watch, "", "nodes", None, None),
            "cluster-scoped"
        );
        let finalizers = "deployments/finalizers";
        assert!(rbac.allows(Verb::Update, "apps", finalizers, shop, Some("d")));
        assert!(rbac.allows(Verb::Create, "apps", "replicasets", shop, None));
        assert!(rbac.allows(Verb::Patch, "apps", "replicasets", shop, Some("r")));
        assert!(!rbac.allows(Verb::Delete, "apps", "replicasets", shop, Some("r")));
        assert!(!rbac.allows(Verb::Patch, "apps", "deployments", shop, Some("d")));
        assert!(rbac.allows(Verb::Patch, "apps", "deployments/status", shop, Some("d")));
        assert!(rbac.allows(Verb::Patch, "", "events", shop, Some("e")));
        let group = "coordination.k8s.io";
        assert!(rbac.allows(Verb::Update, group, "leases", Some("ops"), Some("ctl")));
        assert!(!rbac.allows(Verb::Update, group, "leases", Some("ops"), Some("x")));
        assert!(rbac.allows(Verb::Create, group, "leases", Some("ops"), None));
        assert!(!rbac.allows(Verb::Create, group, "leases", shop, None));
        let roles: Vec<_> = rbac
            .roles("c")
            .into_iter()
            .map(|r| r.metadata.namespace)
            .collect();
        assert_eq!(roles, [Some("ops".to_string()), Some("shop".to_string())]);
    }

    #[test]
    fn subjects_parse_from_their_three_forms_and_refuse_others() {
        let sa = parse_subject("serviceaccount:system:ctl").unwrap();
        assert_eq!(
            (sa.kind.as_str(), sa.name.as_str(), sa.namespace.as_deref()),
            ("ServiceAccount", "ctl", Some("system"))
        );
        assert_eq!(parse_subject("group:devs").unwrap().kind, "Group");
        for bad in [
            "alice",
            "user:",
            "serviceaccount:ctl",
            "robot:x",
            "user:a:b",
        ] {
            let e = parse_subject(bad).unwrap_err();
            assert!(e.contains("is not a subject"), "{bad}: {e}");
        }
    }
}
