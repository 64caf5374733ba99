//! The one table of kubekit's built-in API groups: every group version `k8s-openapi` has
//! types for, and its resources.
//!
//! # Contract
//!
//! - [`built_in_groups!`] holds the table and hands it to a generator macro; the clientset
//!   expands it into its group clients (`clientset.networking_v1().ingresses(ns)`) and
//!   [`built_in_resources`](super::built_in_resources), the informer factory into its
//!   typed accessors (`factory.networking_v1().ingresses()`). Adding a resource is one line
//!   here, and it appears in both.
//! - A resource is listed under `namespaced` or `cluster`; the clientset's accessors check
//!   that against the type's scope when compiling, and the api version against the type's.
//! - `[client only]` marks a resource the server cannot watch (`Binding` is create-only,
//!   `ComponentStatus` list-only): it has a client but no informer.
//! - `if k8s_if_…` after a group version or a resource keeps it out of the builds whose
//!   `k8s-openapi` version feature lacks its type (kubekit builds with every version
//!   `k8s-openapi` 0.29 supports, v1_33 to v1_37). The table covers every type of v1_35 and
//!   v1_37 with a list.
//! - The third item after a group version's accessor names the Cargo feature that compiles
//!   its informer accessors into kubekit (`prebuilt-apps`); without it they are `#[inline]`
//!   and compiled in the program that calls them (see the informer factory's docs).
//! - `[prebuilt "feature"]` after a resource names one more feature that compiles its
//!   informer accessor into kubekit: `prebuilt-common` (on by default) for the core kinds
//!   most controllers read.

/// Hands the table of built-in API groups to the generator macro `$generate`, which must
/// accept its syntax (kubekit-runtime's informer factory expands it into its typed
/// accessors; see the [`clientset::table`](crate::clientset) module's contract):
///
/// ```text
/// /// docs of the group client
/// accessor => ClientType, InformersType ("group/version", path::to::module, "prebuilt-group")
///     [if gate] {
///     namespaced { fn_name: Type [[client only]] [[prebuilt "feature"]] [if gate], … }
///     cluster { fn_name: Type [[client only]] [[prebuilt "feature"]] [if gate], … }
/// }
/// ```
#[macro_export]
macro_rules! built_in_groups {
    ($generate:ident) => {
        $generate! {
            /// Resources of the core group, `v1`: pods, services, config maps, nodes, …
            core_v1 => CoreV1Client, CoreV1Informers ("v1", k8s_openapi::api::core::v1, "prebuilt-core") {
                namespaced {
                    bindings: Binding [client only],
                    config_maps: ConfigMap [prebuilt "prebuilt-common"],
                    endpoints: Endpoints,
                    events: Event,
                    limit_ranges: LimitRange,
                    persistent_volume_claims: PersistentVolumeClaim,
                    pods: Pod [prebuilt "prebuilt-common"],
                    pod_templates: PodTemplate,
                    replication_controllers: ReplicationController,
                    resource_quotas: ResourceQuota,
                    secrets: Secret [prebuilt "prebuilt-common"],
                    services: Service [prebuilt "prebuilt-common"],
                    service_accounts: ServiceAccount [prebuilt "prebuilt-common"],
                }
                cluster {
                    component_statuses: ComponentStatus [client only],
                    namespaces: Namespace [prebuilt "prebuilt-common"],
                    nodes: Node [prebuilt "prebuilt-common"],
                    persistent_volumes: PersistentVolume,
                }
            }

            /// Resources of `admissionregistration.k8s.io/v1`: webhook configurations,
            /// validating admission policies, and mutating admission policies (Kubernetes
            /// 1.36 and later).
            admissionregistration_v1 =>
                AdmissionregistrationV1Client, AdmissionregistrationV1Informers (
                "admissionregistration.k8s.io/v1",
                k8s_openapi::api::admissionregistration::v1, "prebuilt-admissionregistration"
            ) {
                namespaced {}
                cluster {
                    mutating_admission_policies: MutatingAdmissionPolicy if k8s_if_ge_1_36,
                    mutating_admission_policy_bindings: MutatingAdmissionPolicyBinding if k8s_if_ge_1_36,
                    mutating_webhook_configurations: MutatingWebhookConfiguration,
                    validating_admission_policies: ValidatingAdmissionPolicy,
                    validating_admission_policy_bindings: ValidatingAdmissionPolicyBinding,
                    validating_webhook_configurations: ValidatingWebhookConfiguration,
                }
            }

            /// Resources of `admissionregistration.k8s.io/v1alpha1`: mutating admission
            /// policies.
            admissionregistration_v1alpha1 =>
                AdmissionregistrationV1alpha1Client, AdmissionregistrationV1alpha1Informers (
                "admissionregistration.k8s.io/v1alpha1",
                k8s_openapi::api::admissionregistration::v1alpha1, "prebuilt-admissionregistration"
            ) {
                namespaced {}
                cluster {
                    mutating_admission_policies: MutatingAdmissionPolicy,
                    mutating_admission_policy_bindings: MutatingAdmissionPolicyBinding,
                }
            }

            /// Resources of `admissionregistration.k8s.io/v1beta1`: mutating admission
            /// policies (Kubernetes 1.34 and later).
            admissionregistration_v1beta1 =>
                AdmissionregistrationV1beta1Client, AdmissionregistrationV1beta1Informers (
                "admissionregistration.k8s.io/v1beta1",
                k8s_openapi::api::admissionregistration::v1beta1, "prebuilt-admissionregistration"
            ) if k8s_if_ge_1_34 {
                namespaced {}
                cluster {
                    mutating_admission_policies: MutatingAdmissionPolicy,
                    mutating_admission_policy_bindings: MutatingAdmissionPolicyBinding,
                }
            }

            /// Resources of `apiextensions.k8s.io/v1`: custom resource definitions.
            apiextensions_v1 => ApiextensionsV1Client, ApiextensionsV1Informers (
                "apiextensions.k8s.io/v1",
                k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1, "prebuilt-apiextensions"
            ) {
                namespaced {}
                cluster {
                    custom_resource_definitions: CustomResourceDefinition,
                }
            }

            /// Resources of `apiregistration.k8s.io/v1`: the API services of the aggregation
            /// layer.
            apiregistration_v1 => ApiregistrationV1Client, ApiregistrationV1Informers (
                "apiregistration.k8s.io/v1",
                k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1, "prebuilt-apiregistration"
            ) {
                namespaced {}
                cluster {
                    api_services: APIService,
                }
            }

            /// Resources of `apps/v1`: deployments, replica sets, stateful sets, daemon sets
            /// and controller revisions.
            apps_v1 => AppsV1Client, AppsV1Informers ("apps/v1", k8s_openapi::api::apps::v1, "prebuilt-apps") {
                namespaced {
                    controller_revisions: ControllerRevision,
                    daemon_sets: DaemonSet,
                    deployments: Deployment,
                    replica_sets: ReplicaSet,
                    stateful_sets: StatefulSet,
                }
                cluster {}
            }

            /// Resources of `autoscaling/v1`: horizontal pod autoscalers.
            autoscaling_v1 => AutoscalingV1Client, AutoscalingV1Informers (
                "autoscaling/v1",
                k8s_openapi::api::autoscaling::v1, "prebuilt-autoscaling"
            ) {
                namespaced {
                    horizontal_pod_autoscalers: HorizontalPodAutoscaler,
                }
                cluster {}
            }

            /// Resources of `autoscaling/v2`: horizontal pod autoscalers.
            autoscaling_v2 => AutoscalingV2Client, AutoscalingV2Informers (
                "autoscaling/v2",
                k8s_openapi::api::autoscaling::v2, "prebuilt-autoscaling"
            ) {
                namespaced {
                    horizontal_pod_autoscalers: HorizontalPodAutoscaler,
                }
                cluster {}
            }

            /// Resources of `batch/v1`: jobs and cron jobs.
            batch_v1 => BatchV1Client, BatchV1Informers ("batch/v1", k8s_openapi::api::batch::v1, "prebuilt-batch") {
                namespaced {
                    cron_jobs: CronJob,
                    jobs: Job,
                }
                cluster {}
            }

            /// Resources of `certificates.k8s.io/v1`: certificate signing requests, and
            /// cluster trust bundles and pod certificate requests (Kubernetes 1.37 and later).
            certificates_v1 => CertificatesV1Client, CertificatesV1Informers (
                "certificates.k8s.io/v1",
                k8s_openapi::api::certificates::v1, "prebuilt-certificates"
            ) {
                namespaced {
                    pod_certificate_requests: PodCertificateRequest if k8s_if_ge_1_37,
                }
                cluster {
                    certificate_signing_requests: CertificateSigningRequest,
                    cluster_trust_bundles: ClusterTrustBundle if k8s_if_ge_1_37,
                }
            }

            /// Resources of `certificates.k8s.io/v1alpha1`: cluster trust bundles
            /// (Kubernetes 1.36 and earlier).
            certificates_v1alpha1 => CertificatesV1alpha1Client, CertificatesV1alpha1Informers (
                "certificates.k8s.io/v1alpha1",
                k8s_openapi::api::certificates::v1alpha1, "prebuilt-certificates"
            ) if k8s_if_le_1_36 {
                namespaced {}
                cluster {
                    cluster_trust_bundles: ClusterTrustBundle,
                }
            }

            /// Resources of `certificates.k8s.io/v1beta1`: cluster trust bundles and pod
            /// certificate requests (Kubernetes 1.35 and later).
            certificates_v1beta1 => CertificatesV1beta1Client, CertificatesV1beta1Informers (
                "certificates.k8s.io/v1beta1",
                k8s_openapi::api::certificates::v1beta1, "prebuilt-certificates"
            ) {
                namespaced {
                    pod_certificate_requests: PodCertificateRequest if k8s_if_ge_1_35,
                }
                cluster {
                    cluster_trust_bundles: ClusterTrustBundle,
                }
            }

            /// Resources of `coordination.k8s.io/v1`: leases (leader election, node
            /// heartbeats).
            coordination_v1 => CoordinationV1Client, CoordinationV1Informers (
                "coordination.k8s.io/v1",
                k8s_openapi::api::coordination::v1, "prebuilt-coordination"
            ) {
                namespaced {
                    leases: Lease,
                }
                cluster {}
            }

            /// Resources of `coordination.k8s.io/v1alpha2`: lease candidates.
            coordination_v1alpha2 => CoordinationV1alpha2Client, CoordinationV1alpha2Informers (
                "coordination.k8s.io/v1alpha2",
                k8s_openapi::api::coordination::v1alpha2, "prebuilt-coordination"
            ) {
                namespaced {
                    lease_candidates: LeaseCandidate,
                }
                cluster {}
            }

            /// Resources of `coordination.k8s.io/v1beta1`: lease candidates.
            coordination_v1beta1 => CoordinationV1beta1Client, CoordinationV1beta1Informers (
                "coordination.k8s.io/v1beta1",
                k8s_openapi::api::coordination::v1beta1, "prebuilt-coordination"
            ) {
                namespaced {
                    lease_candidates: LeaseCandidate,
                }
                cluster {}
            }

            /// Resources of `discovery.k8s.io/v1`: endpoint slices.
            discovery_v1 => DiscoveryV1Client, DiscoveryV1Informers (
                "discovery.k8s.io/v1",
                k8s_openapi::api::discovery::v1, "prebuilt-discovery"
            ) {
                namespaced {
                    endpoint_slices: EndpointSlice,
                }
                cluster {}
            }

            /// Resources of `events.k8s.io/v1`: events.
            events_v1 => EventsV1Client, EventsV1Informers (
                "events.k8s.io/v1",
                k8s_openapi::api::events::v1, "prebuilt-events"
            ) {
                namespaced {
                    events: Event,
                }
                cluster {}
            }

            /// Resources of `flowcontrol.apiserver.k8s.io/v1`: API priority and fairness.
            flowcontrol_v1 => FlowcontrolV1Client, FlowcontrolV1Informers (
                "flowcontrol.apiserver.k8s.io/v1",
                k8s_openapi::api::flowcontrol::v1, "prebuilt-flowcontrol"
            ) {
                namespaced {}
                cluster {
                    flow_schemas: FlowSchema,
                    priority_level_configurations: PriorityLevelConfiguration,
                }
            }

            /// Resources of `internal.apiserver.k8s.io/v1alpha1`: storage versions.
            internal_v1alpha1 => InternalV1alpha1Client, InternalV1alpha1Informers (
                "internal.apiserver.k8s.io/v1alpha1",
                k8s_openapi::api::apiserverinternal::v1alpha1, "prebuilt-internal"
            ) {
                namespaced {}
                cluster {
                    storage_versions: StorageVersion,
                }
            }

            /// Resources of `networking.k8s.io/v1`: ingresses, ingress classes, network
            /// policies, IP addresses and service CIDRs.
            networking_v1 => NetworkingV1Client, NetworkingV1Informers (
                "networking.k8s.io/v1",
                k8s_openapi::api::networking::v1, "prebuilt-networking"
            ) {
                namespaced {
                    ingresses: Ingress,
                    network_policies: NetworkPolicy,
                }
                cluster {
                    ingress_classes: IngressClass,
                    ip_addresses: IPAddress,
                    service_cidrs: ServiceCIDR,
                }
            }

            /// Resources of `networking.k8s.io/v1beta1`: IP addresses and service CIDRs
            /// (Kubernetes 1.36 and earlier).
            networking_v1beta1 => NetworkingV1beta1Client, NetworkingV1beta1Informers (
                "networking.k8s.io/v1beta1",
                k8s_openapi::api::networking::v1beta1, "prebuilt-networking"
            ) if k8s_if_le_1_36 {
                namespaced {}
                cluster {
                    ip_addresses: IPAddress,
                    service_cidrs: ServiceCIDR,
                }
            }

            /// Resources of `node.k8s.io/v1`: runtime classes.
            node_v1 => NodeV1Client, NodeV1Informers (
                "node.k8s.io/v1",
                k8s_openapi::api::node::v1, "prebuilt-node"
            ) {
                namespaced {}
                cluster {
                    runtime_classes: RuntimeClass,
                }
            }

            /// Resources of `policy/v1`: pod disruption budgets.
            policy_v1 => PolicyV1Client, PolicyV1Informers (
                "policy/v1",
                k8s_openapi::api::policy::v1, "prebuilt-policy"
            ) {
                namespaced {
                    pod_disruption_budgets: PodDisruptionBudget,
                }
                cluster {}
            }

            /// Resources of `rbac.authorization.k8s.io/v1`: roles, cluster roles and their
            /// bindings.
            rbac_v1 => RbacV1Client, RbacV1Informers (
                "rbac.authorization.k8s.io/v1",
                k8s_openapi::api::rbac::v1, "prebuilt-rbac"
            ) {
                namespaced {
                    roles: Role,
                    role_bindings: RoleBinding,
                }
                cluster {
                    cluster_roles: ClusterRole,
                    cluster_role_bindings: ClusterRoleBinding,
                }
            }

            /// Resources of `resource.k8s.io/v1`: dynamic resource allocation (Kubernetes
            /// 1.34 and later).
            resource_v1 => ResourceV1Client, ResourceV1Informers (
                "resource.k8s.io/v1",
                k8s_openapi::api::resource::v1, "prebuilt-resource"
            ) if k8s_if_ge_1_34 {
                namespaced {
                    resource_claims: ResourceClaim,
                    resource_claim_templates: ResourceClaimTemplate,
                }
                cluster {
                    device_classes: DeviceClass,
                    device_taint_rules: DeviceTaintRule if k8s_if_ge_1_37,
                    resource_slices: ResourceSlice,
                }
            }

            /// Resources of `resource.k8s.io/v1alpha3`: device taint rules.
            resource_v1alpha3 => ResourceV1alpha3Client, ResourceV1alpha3Informers (
                "resource.k8s.io/v1alpha3",
                k8s_openapi::api::resource::v1alpha3, "prebuilt-resource"
            ) {
                namespaced {}
                cluster {
                    device_taint_rules: DeviceTaintRule,
                }
            }

            /// Resources of `resource.k8s.io/v1beta1`: dynamic resource allocation.
            resource_v1beta1 => ResourceV1beta1Client, ResourceV1beta1Informers (
                "resource.k8s.io/v1beta1",
                k8s_openapi::api::resource::v1beta1, "prebuilt-resource"
            ) {
                namespaced {
                    resource_claims: ResourceClaim,
                    resource_claim_templates: ResourceClaimTemplate,
                }
                cluster {
                    device_classes: DeviceClass,
                    resource_slices: ResourceSlice,
                }
            }

            /// Resources of `resource.k8s.io/v1beta2`: dynamic resource allocation.
            resource_v1beta2 => ResourceV1beta2Client, ResourceV1beta2Informers (
                "resource.k8s.io/v1beta2",
                k8s_openapi::api::resource::v1beta2, "prebuilt-resource"
            ) {
                namespaced {
                    resource_claims: ResourceClaim,
                    resource_claim_templates: ResourceClaimTemplate,
                }
                cluster {
                    device_classes: DeviceClass,
                    resource_slices: ResourceSlice,
                }
            }

            /// Resources of `scheduling.k8s.io/v1`: priority classes.
            scheduling_v1 => SchedulingV1Client, SchedulingV1Informers (
                "scheduling.k8s.io/v1",
                k8s_openapi::api::scheduling::v1, "prebuilt-scheduling"
            ) {
                namespaced {}
                cluster {
                    priority_classes: PriorityClass,
                }
            }

            /// Resources of `scheduling.k8s.io/v1alpha1`: workloads (Kubernetes 1.35 only).
            scheduling_v1alpha1 => SchedulingV1alpha1Client, SchedulingV1alpha1Informers (
                "scheduling.k8s.io/v1alpha1",
                k8s_openapi::api::scheduling::v1alpha1, "prebuilt-scheduling"
            ) if k8s_if_1_35 {
                namespaced {
                    workloads: Workload,
                }
                cluster {}
            }

            /// Resources of `storage.k8s.io/v1`: storage classes, CSI drivers and nodes,
            /// volume attachments, …
            storage_v1 => StorageV1Client, StorageV1Informers (
                "storage.k8s.io/v1",
                k8s_openapi::api::storage::v1, "prebuilt-storage"
            ) {
                namespaced {
                    csi_storage_capacities: CSIStorageCapacity,
                }
                cluster {
                    csi_drivers: CSIDriver,
                    csi_nodes: CSINode,
                    storage_classes: StorageClass,
                    volume_attachments: VolumeAttachment,
                    volume_attributes_classes: VolumeAttributesClass if k8s_if_ge_1_34,
                }
            }

            /// Resources of `storage.k8s.io/v1beta1`: volume attributes classes (Kubernetes
            /// 1.36 and earlier).
            storage_v1beta1 => StorageV1beta1Client, StorageV1beta1Informers (
                "storage.k8s.io/v1beta1",
                k8s_openapi::api::storage::v1beta1, "prebuilt-storage"
            ) if k8s_if_le_1_36 {
                namespaced {}
                cluster {
                    volume_attributes_classes: VolumeAttributesClass,
                }
            }

            /// Resources of `storagemigration.k8s.io/v1beta1`: storage version migrations
            /// (Kubernetes 1.35 and later).
            storagemigration_v1beta1 =>
                StoragemigrationV1beta1Client, StoragemigrationV1beta1Informers (
                "storagemigration.k8s.io/v1beta1",
                k8s_openapi::api::storagemigration::v1beta1, "prebuilt-storagemigration"
            ) if k8s_if_ge_1_35 {
                namespaced {}
                cluster {
                    storage_version_migrations: StorageVersionMigration,
                }
            }

            /// Resources of `storagemigration.k8s.io/v1`: storage version migrations
            /// (Kubernetes 1.37 and later).
            storagemigration_v1 =>
                StoragemigrationV1Client, StoragemigrationV1Informers (
                "storagemigration.k8s.io/v1",
                k8s_openapi::api::storagemigration::v1, "prebuilt-storagemigration"
            ) if k8s_if_ge_1_37 {
                namespaced {}
                cluster {
                    storage_version_migrations: StorageVersionMigration,
                }
            }
        }
    };
}
pub(crate) use crate::built_in_groups;

/// Expands the items after `;` always (nothing before it) or through `k8s-openapi`'s
/// version macro named before it (`k8s_if_ge_1_34; …`): how a generator of
/// [`built_in_groups!`] keeps out what the program's Kubernetes version lacks.
#[macro_export]
macro_rules! gated {
    (; $($item:tt)*) => { $($item)* };
    ($gate:ident; $($item:tt)*) => { k8s_openapi::$gate! { $($item)* } };
}
pub(crate) use crate::gated;

/// Expands the tokens after `;` unless the resource is marked `[client only]` in
/// [`built_in_groups!`]'s table (a generator of informers leaves those out).
#[macro_export]
macro_rules! unless_client_only {
    (only; $($item:tt)*) => {};
    (; $($item:tt)*) => { $($item)* };
}

/// Whether two strings are equal, when compiling (the table's api versions are checked
/// against the types').
pub(crate) const fn same_str(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}
