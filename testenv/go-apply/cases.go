package main

// The comparison's cases, built with client-go's applyconfigurations. The Rust side
// (kubekit/tests/it/apply_client_go.rs) builds the same ones, case by case and in the same
// order, with kubekit's; the names tie the two together. Managers: "alice" and "bob".

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
	appsv1 "k8s.io/client-go/applyconfigurations/apps/v1"
	autoscalingv2 "k8s.io/client-go/applyconfigurations/autoscaling/v2"
	batchv1 "k8s.io/client-go/applyconfigurations/batch/v1"
	coordinationv1 "k8s.io/client-go/applyconfigurations/coordination/v1"
	v1 "k8s.io/client-go/applyconfigurations/core/v1"
	discoveryv1 "k8s.io/client-go/applyconfigurations/discovery/v1"
	eventsv1 "k8s.io/client-go/applyconfigurations/events/v1"
	meta "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1 "k8s.io/client-go/applyconfigurations/networking/v1"
	nodev1 "k8s.io/client-go/applyconfigurations/node/v1"
	policyv1 "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1 "k8s.io/client-go/applyconfigurations/rbac/v1"
	schedulingv1 "k8s.io/client-go/applyconfigurations/scheduling/v1"
	storagev1 "k8s.io/client-go/applyconfigurations/storage/v1"
	"k8s.io/client-go/kubernetes"
)

type kase struct {
	name string
	run  func() (report, error)
}

// container is the container most cases run: a name and an image nobody pulls.
func container(name string) *v1.ContainerApplyConfiguration {
	return v1.Container().WithName(name).WithImage("kubekit.invalid/" + name)
}

// podSpec is a pod spec of one container that mounts no service account token.
func podSpec(name string) *v1.PodSpecApplyConfiguration {
	return v1.PodSpec().WithAutomountServiceAccountToken(false).WithContainers(container(name))
}

// template is a pod template labelled app=<name> running podSpec(name).
func template(name string) *v1.PodTemplateSpecApplyConfiguration {
	return v1.PodTemplateSpec().
		WithLabels(map[string]string{"app": name}).
		WithSpec(podSpec(name))
}

// selector selects app=<name>.
func selector(name string) *meta.LabelSelectorApplyConfiguration {
	return meta.LabelSelector().WithMatchLabels(map[string]string{"app": name})
}

func cases(cs *kubernetes.Clientset, ns string) []kase {
	core := cs.CoreV1()
	apps := cs.AppsV1()
	cluster := func(name string) string { return ns + "-" + name }
	return []kase{
		{"configmap-maps", func() (report, error) {
			return run(core.ConfigMaps(ns), v1.ExtractConfigMapFrom,
				spec("alice", v1.ConfigMap("settings", ns).
					WithLabels(map[string]string{"app": "web", "tier": "front"}).
					WithAnnotations(map[string]string{"kubekit.dev/note": "compared"}).
					WithData(map[string]string{"mode": "fast", "level": "3"}).
					WithBinaryData(map[string][]byte{"blob": {0, 1, 2, 255}}).
					WithImmutable(false)))
		}},
		{"configmap-two-managers", func() (report, error) {
			return run(core.ConfigMaps(ns), v1.ExtractConfigMapFrom,
				spec("alice", v1.ConfigMap("shared", ns).WithData(map[string]string{"a": "1", "b": "2"})),
				spec("bob", v1.ConfigMap("shared", ns).WithData(map[string]string{"b": "20", "c": "3"})))
		}},
		{"configmap-reapply-drops-fields", func() (report, error) {
			return run(core.ConfigMaps(ns), v1.ExtractConfigMapFrom,
				spec("alice", v1.ConfigMap("shrinking", ns).
					WithLabels(map[string]string{"gone": "soon"}).
					WithData(map[string]string{"a": "1", "b": "2"})),
				spec("alice", v1.ConfigMap("shrinking", ns).WithData(map[string]string{"a": "10"})))
		}},
		{"configmap-finalizers-set", func() (report, error) {
			return run(core.ConfigMaps(ns), v1.ExtractConfigMapFrom,
				spec("alice", v1.ConfigMap("finalized", ns).WithFinalizers("kubekit.dev/a", "kubekit.dev/b")),
				spec("bob", v1.ConfigMap("finalized", ns).WithFinalizers("kubekit.dev/b", "kubekit.dev/c")))
		}},
		{"secret-data", func() (report, error) {
			return run(core.Secrets(ns), v1.ExtractSecretFrom,
				spec("alice", v1.Secret("credentials", ns).
					WithType(corev1.SecretTypeOpaque).
					WithData(map[string][]byte{"user": []byte("admin"), "key": {0, 159, 146, 150}})))
		}},
		{"secret-string-data", func() (report, error) {
			return run(core.Secrets(ns), v1.ExtractSecretFrom,
				spec("alice", v1.Secret("written", ns).WithStringData(map[string]string{"token": "t0ken"})))
		}},
		{"serviceaccount", func() (report, error) {
			return run(core.ServiceAccounts(ns), v1.ExtractServiceAccountFrom,
				spec("alice", v1.ServiceAccount("robot", ns).
					WithAutomountServiceAccountToken(false).
					WithSecrets(v1.ObjectReference().WithName("robot-token"), v1.ObjectReference().WithName("robot-extra")).
					WithImagePullSecrets(v1.LocalObjectReference().WithName("registry"))))
		}},
		{"pod-containers", func() (report, error) {
			return run(core.Pods(ns), v1.ExtractPodFrom,
				spec("alice", v1.Pod("web", ns).WithSpec(v1.PodSpec().
					WithAutomountServiceAccountToken(false).
					WithRestartPolicy(corev1.RestartPolicyAlways).
					WithTerminationGracePeriodSeconds(5).
					WithContainers(
						container("web").
							WithCommand("/bin/web").
							WithArgs("--port", "8080", "--verbose").
							WithEnv(
								v1.EnvVar().WithName("MODE").WithValue("fast"),
								v1.EnvVar().WithName("POD").WithValueFrom(v1.EnvVarSource().
									WithFieldRef(v1.ObjectFieldSelector().WithFieldPath("metadata.name")))).
							WithPorts(
								v1.ContainerPort().WithName("http").WithContainerPort(8080).WithProtocol(corev1.ProtocolTCP),
								v1.ContainerPort().WithName("http-udp").WithContainerPort(8080).WithProtocol(corev1.ProtocolUDP)).
							WithResources(v1.ResourceRequirements().
								WithRequests(corev1.ResourceList{"cpu": q("100m"), "memory": q("64Mi")}).
								WithLimits(corev1.ResourceList{"memory": q("128Mi")})),
						container("sidecar").WithImagePullPolicy(corev1.PullIfNotPresent)))))
		}},
		{"pod-volumes", func() (report, error) {
			return run(core.Pods(ns), v1.ExtractPodFrom,
				spec("alice", v1.Pod("volumes", ns).WithSpec(podSpec("volumes").
					WithVolumes(
						v1.Volume().WithName("config").WithConfigMap(v1.ConfigMapVolumeSource().
							WithName("settings").WithDefaultMode(0o440).
							WithItems(v1.KeyToPath().WithKey("mode").WithPath("mode.txt"))),
						v1.Volume().WithName("cache").WithEmptyDir(v1.EmptyDirVolumeSource().
							WithMedium(corev1.StorageMediumMemory).WithSizeLimit(q("1Gi"))),
						v1.Volume().WithName("all").WithProjected(v1.ProjectedVolumeSource().
							WithSources(
								v1.VolumeProjection().WithSecret(v1.SecretProjection().WithName("credentials")),
								v1.VolumeProjection().WithDownwardAPI(v1.DownwardAPIProjection().WithItems(
									v1.DownwardAPIVolumeFile().WithPath("labels").
										WithFieldRef(v1.ObjectFieldSelector().WithFieldPath("metadata.labels"))))))))))
		}},
		{"pod-probes", func() (report, error) {
			return run(core.Pods(ns), v1.ExtractPodFrom,
				spec("alice", v1.Pod("probed", ns).WithSpec(v1.PodSpec().
					WithAutomountServiceAccountToken(false).
					WithContainers(container("probed").
						WithPorts(v1.ContainerPort().WithName("http").WithContainerPort(8080)).
						WithLivenessProbe(v1.Probe().
							WithHTTPGet(v1.HTTPGetAction().WithPath("/healthz").WithPort(intstr.FromInt32(8080)).
								WithHTTPHeaders(v1.HTTPHeader().WithName("X-Probe").WithValue("live"))).
							WithPeriodSeconds(7)).
						WithReadinessProbe(v1.Probe().
							WithTCPSocket(v1.TCPSocketAction().WithPort(intstr.FromString("http")))).
						WithStartupProbe(v1.Probe().
							WithExec(v1.ExecAction().WithCommand("cat", "/tmp/started")).
							WithFailureThreshold(30))))))
		}},
		{"pod-affinity", func() (report, error) {
			return run(core.Pods(ns), v1.ExtractPodFrom,
				spec("alice", v1.Pod("placed", ns).WithSpec(podSpec("placed").
					WithAffinity(v1.Affinity().
						WithNodeAffinity(v1.NodeAffinity().
							WithRequiredDuringSchedulingIgnoredDuringExecution(v1.NodeSelector().
								WithNodeSelectorTerms(v1.NodeSelectorTerm().WithMatchExpressions(
									v1.NodeSelectorRequirement().WithKey("zone").
										WithOperator(corev1.NodeSelectorOpIn).WithValues("a", "b")))).
							WithPreferredDuringSchedulingIgnoredDuringExecution(v1.PreferredSchedulingTerm().
								WithWeight(10).
								WithPreference(v1.NodeSelectorTerm().WithMatchExpressions(
									v1.NodeSelectorRequirement().WithKey("disk").WithOperator(corev1.NodeSelectorOpExists))))).
						WithPodAntiAffinity(v1.PodAntiAffinity().
							WithPreferredDuringSchedulingIgnoredDuringExecution(v1.WeightedPodAffinityTerm().
								WithWeight(50).
								WithPodAffinityTerm(v1.PodAffinityTerm().
									WithLabelSelector(selector("placed")).
									WithTopologyKey("kubernetes.io/hostname"))))))))
		}},
		{"pod-tolerations-node-selector", func() (report, error) {
			return run(core.Pods(ns), v1.ExtractPodFrom,
				spec("alice", v1.Pod("tolerant", ns).WithSpec(podSpec("tolerant").
					WithNodeSelector(map[string]string{"disk": "ssd", "zone": "a"}).
					WithTolerations(
						v1.Toleration().WithKey("dedicated").WithOperator(corev1.TolerationOpEqual).
							WithValue("web").WithEffect(corev1.TaintEffectNoSchedule),
						v1.Toleration().WithOperator(corev1.TolerationOpExists).
							WithEffect(corev1.TaintEffectNoExecute).WithTolerationSeconds(30)))))
		}},
		{"pod-security-context", func() (report, error) {
			return run(core.Pods(ns), v1.ExtractPodFrom,
				spec("alice", v1.Pod("secured", ns).WithSpec(v1.PodSpec().
					WithAutomountServiceAccountToken(false).
					WithSecurityContext(v1.PodSecurityContext().
						WithRunAsUser(1000).WithRunAsNonRoot(true).
						WithSupplementalGroups(2000, 3000).
						WithSysctls(v1.Sysctl().WithName("net.ipv4.ip_unprivileged_port_start").WithValue("0")).
						WithSeccompProfile(v1.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
					WithContainers(container("secured").WithSecurityContext(v1.SecurityContext().
						WithAllowPrivilegeEscalation(false).
						WithReadOnlyRootFilesystem(true).
						WithCapabilities(v1.Capabilities().WithAdd("NET_BIND_SERVICE").WithDrop("ALL")))))))
		}},
		{"pod-topology-spread", func() (report, error) {
			return run(core.Pods(ns), v1.ExtractPodFrom,
				spec("alice", v1.Pod("spread", ns).
					WithLabels(map[string]string{"app": "spread"}).
					WithSpec(podSpec("spread").WithTopologySpreadConstraints(
						v1.TopologySpreadConstraint().WithMaxSkew(1).WithTopologyKey("zone").
							WithWhenUnsatisfiable(corev1.DoNotSchedule).WithLabelSelector(selector("spread")),
						v1.TopologySpreadConstraint().WithMaxSkew(2).WithTopologyKey("zone").
							WithWhenUnsatisfiable(corev1.ScheduleAnyway).WithLabelSelector(selector("spread")).
							WithMatchLabelKeys("pod-template-hash")))))
		}},
		{"pod-host-aliases-dns", func() (report, error) {
			return run(core.Pods(ns), v1.ExtractPodFrom,
				spec("alice", v1.Pod("resolving", ns).WithSpec(podSpec("resolving").
					WithHostAliases(
						v1.HostAlias().WithIP("10.0.0.1").WithHostnames("db", "db.local"),
						v1.HostAlias().WithIP("10.0.0.2").WithHostnames("cache")).
					WithDNSPolicy(corev1.DNSNone).
					WithDNSConfig(v1.PodDNSConfig().
						WithNameservers("192.0.2.53").
						WithSearches("svc.cluster.local").
						WithOptions(v1.PodDNSConfigOption().WithName("ndots").WithValue("2"))))))
		}},
		{"pod-status", func() (report, error) {
			return run(core.Pods(ns), v1.ExtractPodFrom,
				spec("alice", v1.Pod("reported", ns).WithSpec(podSpec("reported"))),
				status("bob", v1.Pod("reported", ns).WithStatus(v1.PodStatus().
					WithConditions(
						v1.PodCondition().WithType("kubekit.dev/Compared").WithStatus(corev1.ConditionTrue).
							WithReason("Applied").WithMessage("by bob").WithLastTransitionTime(when),
						v1.PodCondition().WithType("kubekit.dev/Other").WithStatus(corev1.ConditionFalse)).
					WithMessage("reported by bob"))))
		}},
		{"podtemplate-two-managers", func() (report, error) {
			return run(core.PodTemplates(ns), v1.ExtractPodTemplateFrom,
				spec("alice", v1.PodTemplate("merged", ns).WithTemplate(v1.PodTemplateSpec().
					WithSpec(v1.PodSpec().WithContainers(
						container("a").WithEnv(v1.EnvVar().WithName("X").WithValue("1")))))),
				spec("bob", v1.PodTemplate("merged", ns).WithTemplate(v1.PodTemplateSpec().
					WithSpec(v1.PodSpec().WithContainers(
						v1.Container().WithName("a").WithEnv(v1.EnvVar().WithName("Y").WithValue("2")),
						container("b"))))))
		}},
		{"service-ports", func() (report, error) {
			return run(core.Services(ns), v1.ExtractServiceFrom,
				spec("alice", v1.Service("web", ns).WithSpec(v1.ServiceSpec().
					WithType(corev1.ServiceTypeClusterIP).
					WithSelector(map[string]string{"app": "web"}).
					WithPorts(
						v1.ServicePort().WithName("http").WithPort(80).WithTargetPort(intstr.FromInt32(8080)).WithProtocol(corev1.ProtocolTCP),
						v1.ServicePort().WithName("dns").WithPort(53).WithTargetPort(intstr.FromString("dns")).WithProtocol(corev1.ProtocolUDP),
						v1.ServicePort().WithName("dns-tcp").WithPort(53).WithTargetPort(intstr.FromString("dns")).WithProtocol(corev1.ProtocolTCP)).
					WithSessionAffinity(corev1.ServiceAffinityClientIP).
					WithSessionAffinityConfig(v1.SessionAffinityConfig().
						WithClientIP(v1.ClientIPConfig().WithTimeoutSeconds(600))))))
		}},
		{"service-two-managers", func() (report, error) {
			return run(core.Services(ns), v1.ExtractServiceFrom,
				spec("alice", v1.Service("split", ns).WithSpec(v1.ServiceSpec().
					WithPorts(v1.ServicePort().WithName("http").WithPort(80)))),
				spec("bob", v1.Service("split", ns).WithSpec(v1.ServiceSpec().
					WithPorts(v1.ServicePort().WithName("https").WithPort(443)))))
		}},
		{"service-status", func() (report, error) {
			return run(core.Services(ns), v1.ExtractServiceFrom,
				spec("alice", v1.Service("balanced", ns).WithSpec(v1.ServiceSpec().
					WithType(corev1.ServiceTypeLoadBalancer).
					WithAllocateLoadBalancerNodePorts(false).
					WithPorts(v1.ServicePort().WithName("http").WithPort(80)))),
				status("bob", v1.Service("balanced", ns).WithStatus(v1.ServiceStatus().
					WithLoadBalancer(v1.LoadBalancerStatus().WithIngress(
						v1.LoadBalancerIngress().WithIP("192.0.2.10"),
						v1.LoadBalancerIngress().WithHostname("web.kubekit.invalid"))).
					WithConditions(meta.Condition().WithType("kubekit.dev/Exposed").
						WithStatus(metav1.ConditionTrue).WithReason("Compared").
						WithMessage("by bob").WithLastTransitionTime(when)))))
		}},
		{"namespace-status", func() (report, error) {
			return run(core.Namespaces(), v1.ExtractNamespaceFrom,
				spec("alice", v1.Namespace(cluster("extra")).WithLabels(map[string]string{"kubekit.dev/compare": "yes"})),
				status("bob", v1.Namespace(cluster("extra")).WithStatus(v1.NamespaceStatus().
					WithConditions(v1.NamespaceCondition().WithType("kubekit.dev/Checked").
						WithStatus(corev1.ConditionTrue).WithReason("Compared").WithLastTransitionTime(when)))))
		}},
		{"endpointslice", func() (report, error) {
			return run(cs.DiscoveryV1().EndpointSlices(ns), discoveryv1.ExtractEndpointSliceFrom,
				spec("alice", discoveryv1.EndpointSlice("web-1", ns).
					WithLabels(map[string]string{"kubernetes.io/service-name": "web"}).
					WithAddressType("IPv4").
					WithEndpoints(
						discoveryv1.Endpoint().WithAddresses("10.0.0.1").
							WithConditions(discoveryv1.EndpointConditions().WithReady(true)).
							WithHostname("web-0").WithZone("a"),
						discoveryv1.Endpoint().WithAddresses("10.0.0.2").
							WithConditions(discoveryv1.EndpointConditions().WithReady(false).WithTerminating(true))).
					WithPorts(discoveryv1.EndpointPort().WithName("http").WithPort(80).WithProtocol(corev1.ProtocolTCP))))
		}},
		{"limitrange", func() (report, error) {
			return run(core.LimitRanges(ns), v1.ExtractLimitRangeFrom,
				spec("alice", v1.LimitRange("limits", ns).WithSpec(v1.LimitRangeSpec().WithLimits(
					v1.LimitRangeItem().WithType(corev1.LimitTypeContainer).
						WithMax(corev1.ResourceList{"cpu": q("2"), "memory": q("1Gi")}).
						WithMin(corev1.ResourceList{"cpu": q("10m")}).
						WithDefault(corev1.ResourceList{"cpu": q("500m")}).
						WithDefaultRequest(corev1.ResourceList{"cpu": q("100m")}),
					v1.LimitRangeItem().WithType(corev1.LimitTypePersistentVolumeClaim).
						WithMax(corev1.ResourceList{"storage": q("10Gi")})))))
		}},
		{"resourcequota", func() (report, error) {
			return run(core.ResourceQuotas(ns), v1.ExtractResourceQuotaFrom,
				spec("alice", v1.ResourceQuota("quota", ns).WithSpec(v1.ResourceQuotaSpec().
					WithHard(corev1.ResourceList{"pods": q("100"), "requests.cpu": q("40"), "limits.memory": q("80Gi")}).
					WithScopes(corev1.ResourceQuotaScopeNotBestEffort))))
		}},
		{"persistentvolumeclaim", func() (report, error) {
			return run(core.PersistentVolumeClaims(ns), v1.ExtractPersistentVolumeClaimFrom,
				spec("alice", v1.PersistentVolumeClaim("data", ns).WithSpec(v1.PersistentVolumeClaimSpec().
					WithAccessModes(corev1.ReadWriteOnce, corev1.ReadOnlyMany).
					WithStorageClassName("kubekit-none").
					WithVolumeMode(corev1.PersistentVolumeFilesystem).
					WithResources(v1.VolumeResourceRequirements().WithRequests(corev1.ResourceList{"storage": q("1Gi")})).
					WithSelector(meta.LabelSelector().WithMatchExpressions(meta.LabelSelectorRequirement().
						WithKey("tier").WithOperator(metav1.LabelSelectorOpIn).WithValues("fast", "faster"))))))
		}},
		{"persistentvolume", func() (report, error) {
			return run(core.PersistentVolumes(), v1.ExtractPersistentVolumeFrom,
				spec("alice", v1.PersistentVolume(cluster("disk")).WithSpec(v1.PersistentVolumeSpec().
					WithCapacity(corev1.ResourceList{"storage": q("5Gi")}).
					WithAccessModes(corev1.ReadWriteOnce).
					WithPersistentVolumeReclaimPolicy(corev1.PersistentVolumeReclaimRetain).
					WithStorageClassName("kubekit-none").
					WithMountOptions("ro", "noatime").
					WithHostPath(v1.HostPathVolumeSource().WithPath("/tmp/kubekit-compare").
						WithType(corev1.HostPathDirectoryOrCreate)).
					WithNodeAffinity(v1.VolumeNodeAffinity().WithRequired(v1.NodeSelector().
						WithNodeSelectorTerms(v1.NodeSelectorTerm().WithMatchExpressions(
							v1.NodeSelectorRequirement().WithKey("kubernetes.io/hostname").
								WithOperator(corev1.NodeSelectorOpIn).WithValues("node-a"))))))))
		}},
		{"deployment-rolling", func() (report, error) {
			return run(apps.Deployments(ns), appsv1.ExtractDeploymentFrom,
				spec("alice", appsv1.Deployment("web", ns).WithSpec(appsv1.DeploymentSpec().
					WithReplicas(2).
					WithSelector(selector("web")).
					WithTemplate(template("web").WithAnnotations(map[string]string{"kubekit.dev/rev": "1"})).
					WithStrategy(appsv1.DeploymentStrategy().
						WithType("RollingUpdate").
						WithRollingUpdate(appsv1.RollingUpdateDeployment().
							WithMaxSurge(intstr.FromString("25%")).
							WithMaxUnavailable(intstr.FromInt32(1)))).
					WithMinReadySeconds(3).
					WithRevisionHistoryLimit(4).
					WithProgressDeadlineSeconds(120))))
		}},
		{"deployment-recreate-paused", func() (report, error) {
			return run(apps.Deployments(ns), appsv1.ExtractDeploymentFrom,
				spec("alice", appsv1.Deployment("paused", ns).WithSpec(appsv1.DeploymentSpec().
					WithReplicas(0).
					WithPaused(true).
					WithSelector(meta.LabelSelector().
						WithMatchLabels(map[string]string{"app": "paused"}).
						WithMatchExpressions(meta.LabelSelectorRequirement().WithKey("track").
							WithOperator(metav1.LabelSelectorOpNotIn).WithValues("canary"))).
					WithTemplate(template("paused")).
					WithStrategy(appsv1.DeploymentStrategy().WithType("Recreate")))))
		}},
		{"statefulset", func() (report, error) {
			return run(apps.StatefulSets(ns), appsv1.ExtractStatefulSetFrom,
				spec("alice", appsv1.StatefulSet("db", ns).WithSpec(appsv1.StatefulSetSpec().
					WithReplicas(0).
					WithServiceName("db").
					WithSelector(selector("db")).
					WithTemplate(template("db")).
					WithPodManagementPolicy("Parallel").
					WithUpdateStrategy(appsv1.StatefulSetUpdateStrategy().WithType("RollingUpdate").
						WithRollingUpdate(appsv1.RollingUpdateStatefulSetStrategy().WithPartition(0))).
					WithPersistentVolumeClaimRetentionPolicy(appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy().
						WithWhenDeleted("Delete").WithWhenScaled("Retain")).
					WithOrdinals(appsv1.StatefulSetOrdinals().WithStart(1)).
					WithVolumeClaimTemplates(v1.PersistentVolumeClaim("data", "").
						WithLabels(map[string]string{"app": "db"}).
						WithSpec(v1.PersistentVolumeClaimSpec().
							WithAccessModes(corev1.ReadWriteOnce).
							WithResources(v1.VolumeResourceRequirements().
								WithRequests(corev1.ResourceList{"storage": q("2Gi")})))))))
		}},
		{"daemonset", func() (report, error) {
			return run(apps.DaemonSets(ns), appsv1.ExtractDaemonSetFrom,
				spec("alice", appsv1.DaemonSet("agent", ns).WithSpec(appsv1.DaemonSetSpec().
					WithSelector(selector("agent")).
					WithTemplate(template("agent").WithSpec(podSpec("agent").
						WithNodeSelector(map[string]string{"kubekit.dev/none": "true"}))).
					WithUpdateStrategy(appsv1.DaemonSetUpdateStrategy().WithType("RollingUpdate").
						WithRollingUpdate(appsv1.RollingUpdateDaemonSet().
							WithMaxSurge(intstr.FromInt32(1)).
							WithMaxUnavailable(intstr.FromInt32(0)))))))
		}},
		{"replicaset", func() (report, error) {
			return run(apps.ReplicaSets(ns), appsv1.ExtractReplicaSetFrom,
				spec("alice", appsv1.ReplicaSet("rs", ns).WithSpec(appsv1.ReplicaSetSpec().
					WithReplicas(0).
					WithSelector(selector("rs")).
					WithTemplate(template("rs")))))
		}},
		{"controllerrevision-raw", func() (report, error) {
			return run(apps.ControllerRevisions(ns), appsv1.ExtractControllerRevisionFrom,
				spec("alice", appsv1.ControllerRevision("rev", ns).
					WithRevision(3).
					WithData(runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"replicas":[1,2]},"note":"raw"}}`)})))
		}},
		{"job", func() (report, error) {
			return run(cs.BatchV1().Jobs(ns), batchv1.ExtractJobFrom,
				spec("alice", batchv1.Job("batch", ns).WithSpec(batchv1.JobSpec().
					WithSuspend(true).
					WithParallelism(2).
					WithCompletions(4).
					WithBackoffLimit(3).
					WithTTLSecondsAfterFinished(60).
					WithPodFailurePolicy(batchv1.PodFailurePolicy().WithRules(
						batchv1.PodFailurePolicyRule().WithAction("FailJob").
							WithOnExitCodes(batchv1.PodFailurePolicyOnExitCodesRequirement().
								WithContainerName("batch").WithOperator("In").WithValues(42, 43)),
						batchv1.PodFailurePolicyRule().WithAction("Ignore").
							WithOnPodConditions(batchv1.PodFailurePolicyOnPodConditionsPattern().
								WithType("DisruptionTarget").WithStatus(corev1.ConditionTrue)))).
					WithTemplate(v1.PodTemplateSpec().WithSpec(podSpec("batch").
						WithRestartPolicy(corev1.RestartPolicyNever))))))
		}},
		{"cronjob", func() (report, error) {
			return run(cs.BatchV1().CronJobs(ns), batchv1.ExtractCronJobFrom,
				spec("alice", batchv1.CronJob("nightly", ns).WithSpec(batchv1.CronJobSpec().
					WithSchedule("*/5 * * * *").
					WithTimeZone("Etc/UTC").
					WithConcurrencyPolicy("Forbid").
					WithSuspend(true).
					WithSuccessfulJobsHistoryLimit(2).
					WithJobTemplate(batchv1.JobTemplateSpec().
						WithLabels(map[string]string{"app": "nightly"}).
						WithSpec(batchv1.JobSpec().WithTemplate(v1.PodTemplateSpec().
							WithSpec(podSpec("nightly").WithRestartPolicy(corev1.RestartPolicyOnFailure))))))))
		}},
		{"horizontalpodautoscaler", func() (report, error) {
			return run(cs.AutoscalingV2().HorizontalPodAutoscalers(ns), autoscalingv2.ExtractHorizontalPodAutoscalerFrom,
				spec("alice", autoscalingv2.HorizontalPodAutoscaler("web", ns).WithSpec(autoscalingv2.HorizontalPodAutoscalerSpec().
					WithScaleTargetRef(autoscalingv2.CrossVersionObjectReference().
						WithAPIVersion("apps/v1").WithKind("Deployment").WithName("web")).
					WithMinReplicas(1).
					WithMaxReplicas(5).
					WithMetrics(
						autoscalingv2.MetricSpec().WithType("Resource").WithResource(autoscalingv2.ResourceMetricSource().
							WithName("cpu").WithTarget(autoscalingv2.MetricTarget().
							WithType("Utilization").WithAverageUtilization(70))),
						autoscalingv2.MetricSpec().WithType("Pods").WithPods(autoscalingv2.PodsMetricSource().
							WithMetric(autoscalingv2.MetricIdentifier().WithName("packets")).
							WithTarget(autoscalingv2.MetricTarget().WithType("AverageValue").WithAverageValue(q("1k"))))).
					WithBehavior(autoscalingv2.HorizontalPodAutoscalerBehavior().
						WithScaleDown(autoscalingv2.HPAScalingRules().
							WithStabilizationWindowSeconds(300).
							WithSelectPolicy("Min").
							WithPolicies(
								autoscalingv2.HPAScalingPolicy().WithType("Percent").WithValue(10).WithPeriodSeconds(60),
								autoscalingv2.HPAScalingPolicy().WithType("Pods").WithValue(2).WithPeriodSeconds(60)))))))
		}},
		{"poddisruptionbudget-percent", func() (report, error) {
			return run(cs.PolicyV1().PodDisruptionBudgets(ns), policyv1.ExtractPodDisruptionBudgetFrom,
				spec("alice", policyv1.PodDisruptionBudget("half", ns).WithSpec(policyv1.PodDisruptionBudgetSpec().
					WithMinAvailable(intstr.FromString("50%")).
					WithSelector(selector("web")).
					WithUnhealthyPodEvictionPolicy("AlwaysAllow"))))
		}},
		{"poddisruptionbudget-count", func() (report, error) {
			return run(cs.PolicyV1().PodDisruptionBudgets(ns), policyv1.ExtractPodDisruptionBudgetFrom,
				spec("alice", policyv1.PodDisruptionBudget("one", ns).WithSpec(policyv1.PodDisruptionBudgetSpec().
					WithMaxUnavailable(intstr.FromInt32(1)).
					WithSelector(selector("web")))))
		}},
		{"networkpolicy", func() (report, error) {
			return run(cs.NetworkingV1().NetworkPolicies(ns), networkingv1.ExtractNetworkPolicyFrom,
				spec("alice", networkingv1.NetworkPolicy("web", ns).WithSpec(networkingv1.NetworkPolicySpec().
					WithPodSelector(selector("web")).
					WithPolicyTypes("Ingress", "Egress").
					WithIngress(networkingv1.NetworkPolicyIngressRule().
						WithFrom(
							networkingv1.NetworkPolicyPeer().WithPodSelector(selector("client")),
							networkingv1.NetworkPolicyPeer().WithNamespaceSelector(meta.LabelSelector().
								WithMatchLabels(map[string]string{"team": "web"})),
							networkingv1.NetworkPolicyPeer().WithIPBlock(networkingv1.IPBlock().
								WithCIDR("10.0.0.0/8").WithExcept("10.1.0.0/16", "10.2.0.0/16"))).
						WithPorts(
							networkingv1.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromInt32(80)),
							networkingv1.NetworkPolicyPort().WithPort(intstr.FromString("http")),
							networkingv1.NetworkPolicyPort().WithPort(intstr.FromInt32(8000)).WithEndPort(9000))).
					WithEgress(networkingv1.NetworkPolicyEgressRule().
						WithTo(networkingv1.NetworkPolicyPeer().WithIPBlock(networkingv1.IPBlock().WithCIDR("0.0.0.0/0")))))))
		}},
		{"ingress", func() (report, error) {
			backend := func(port *networkingv1.ServiceBackendPortApplyConfiguration) *networkingv1.IngressBackendApplyConfiguration {
				return networkingv1.IngressBackend().WithService(networkingv1.IngressServiceBackend().WithName("web").WithPort(port))
			}
			return run(cs.NetworkingV1().Ingresses(ns), networkingv1.ExtractIngressFrom,
				spec("alice", networkingv1.Ingress("web", ns).WithSpec(networkingv1.IngressSpec().
					WithIngressClassName("kubekit").
					WithDefaultBackend(backend(networkingv1.ServiceBackendPort().WithNumber(80))).
					WithRules(networkingv1.IngressRule().WithHost("web.kubekit.invalid").
						WithHTTP(networkingv1.HTTPIngressRuleValue().WithPaths(
							networkingv1.HTTPIngressPath().WithPath("/").WithPathType("Prefix").
								WithBackend(backend(networkingv1.ServiceBackendPort().WithNumber(80))),
							networkingv1.HTTPIngressPath().WithPath("/api").WithPathType("Exact").
								WithBackend(backend(networkingv1.ServiceBackendPort().WithName("http")))))).
					WithTLS(networkingv1.IngressTLS().WithHosts("web.kubekit.invalid").WithSecretName("web-tls")))))
		}},
		{"ingressclass", func() (report, error) {
			return run(cs.NetworkingV1().IngressClasses(), networkingv1.ExtractIngressClassFrom,
				spec("alice", networkingv1.IngressClass(cluster("ingress")).WithSpec(networkingv1.IngressClassSpec().
					WithController("kubekit.dev/ingress").
					WithParameters(networkingv1.IngressClassParametersReference().
						WithAPIGroup("k8s.example.com").WithKind("IngressParameters").
						WithName("external").WithScope("Cluster")))))
		}},
		{"clusterrole", func() (report, error) {
			return run(cs.RbacV1().ClusterRoles(), rbacv1.ExtractClusterRoleFrom,
				spec("alice", rbacv1.ClusterRole(cluster("reader")).WithRules(
					rbacv1.PolicyRule().WithAPIGroups("").WithResources("configmaps", "secrets").
						WithVerbs("get", "list", "watch"),
					rbacv1.PolicyRule().WithNonResourceURLs("/healthz").WithVerbs("get"))))
		}},
		{"role", func() (report, error) {
			return run(cs.RbacV1().Roles(ns), rbacv1.ExtractRoleFrom,
				spec("alice", rbacv1.Role("editor", ns).WithRules(
					rbacv1.PolicyRule().WithAPIGroups("apps").WithResources("deployments").
						WithResourceNames("web").WithVerbs("get", "update", "patch"))))
		}},
		{"rolebinding", func() (report, error) {
			return run(cs.RbacV1().RoleBindings(ns), rbacv1.ExtractRoleBindingFrom,
				spec("alice", rbacv1.RoleBinding("editors", ns).
					WithRoleRef(rbacv1.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("Role").WithName("editor")).
					WithSubjects(
						rbacv1.Subject().WithKind("ServiceAccount").WithName("robot").WithNamespace(ns),
						rbacv1.Subject().WithKind("User").WithName("alice").WithAPIGroup("rbac.authorization.k8s.io"))))
		}},
		{"priorityclass", func() (report, error) {
			return run(cs.SchedulingV1().PriorityClasses(), schedulingv1.ExtractPriorityClassFrom,
				spec("alice", schedulingv1.PriorityClass(cluster("high")).
					WithValue(1000).
					WithGlobalDefault(false).
					WithDescription("compared").
					WithPreemptionPolicy(corev1.PreemptNever)))
		}},
		{"storageclass", func() (report, error) {
			return run(cs.StorageV1().StorageClasses(), storagev1.ExtractStorageClassFrom,
				spec("alice", storagev1.StorageClass(cluster("fast")).
					WithProvisioner("kubekit.dev/none").
					WithParameters(map[string]string{"type": "fast", "zone": "a"}).
					WithReclaimPolicy(corev1.PersistentVolumeReclaimRetain).
					WithVolumeBindingMode("WaitForFirstConsumer").
					WithAllowVolumeExpansion(true).
					WithMountOptions("ro", "noatime").
					WithAllowedTopologies(v1.TopologySelectorTerm().WithMatchLabelExpressions(
						v1.TopologySelectorLabelRequirement().WithKey("zone").WithValues("a", "b")))))
		}},
		{"csidriver-set", func() (report, error) {
			return run(cs.StorageV1().CSIDrivers(), storagev1.ExtractCSIDriverFrom,
				spec("alice", storagev1.CSIDriver(cluster("csi.kubekit.dev")).WithSpec(storagev1.CSIDriverSpec().
					WithAttachRequired(false).
					WithPodInfoOnMount(true).
					WithVolumeLifecycleModes("Persistent", "Ephemeral").
					WithFSGroupPolicy("File").
					WithRequiresRepublish(false).
					WithTokenRequests(storagev1.TokenRequest().WithAudience("kubekit").WithExpirationSeconds(3600)))),
				spec("bob", storagev1.CSIDriver(cluster("csi.kubekit.dev")).WithSpec(storagev1.CSIDriverSpec().
					WithVolumeLifecycleModes("Ephemeral"))))
		}},
		{"runtimeclass", func() (report, error) {
			return run(cs.NodeV1().RuntimeClasses(), nodev1.ExtractRuntimeClassFrom,
				spec("alice", nodev1.RuntimeClass(cluster("sandboxed")).
					WithHandler("runsc").
					WithOverhead(nodev1.Overhead().WithPodFixed(corev1.ResourceList{"cpu": q("10m"), "memory": q("16Mi")})).
					WithScheduling(nodev1.Scheduling().
						WithNodeSelector(map[string]string{"sandbox": "true"}).
						WithTolerations(v1.Toleration().WithKey("sandbox").WithOperator(corev1.TolerationOpExists)))))
		}},
		{"lease-micro-time", func() (report, error) {
			return run(cs.CoordinationV1().Leases(ns), coordinationv1.ExtractLeaseFrom,
				spec("alice", coordinationv1.Lease("leader", ns).WithSpec(coordinationv1.LeaseSpec().
					WithHolderIdentity("replica-0").
					WithLeaseDurationSeconds(15).
					WithAcquireTime(whenMicro).
					WithRenewTime(whenMicro).
					WithLeaseTransitions(2))))
		}},
		{"event", func() (report, error) {
			return run(cs.EventsV1().Events(ns), eventsv1.ExtractEventFrom,
				spec("alice", eventsv1.Event("compared.1", ns).
					WithEventTime(whenMicro).
					WithReportingController("kubekit.dev/compare").
					WithReportingInstance("compare-0").
					WithAction("Apply").
					WithReason("Compared").
					WithType("Normal").
					WithNote("the same on both sides").
					WithRegarding(v1.ObjectReference().WithAPIVersion("v1").WithKind("ConfigMap").
						WithNamespace(ns).WithName("settings")).
					WithSeries(eventsv1.EventSeries().WithCount(2).WithLastObservedTime(whenMicro))))
		}},
		{"validatingadmissionpolicy", func() (report, error) {
			return run(cs.AdmissionregistrationV1().ValidatingAdmissionPolicies(), ac.ExtractValidatingAdmissionPolicyFrom,
				spec("alice", ac.ValidatingAdmissionPolicy(cluster("replicas")).WithSpec(ac.ValidatingAdmissionPolicySpec().
					WithFailurePolicy("Fail").
					WithMatchConstraints(ac.MatchResources().WithResourceRules(ac.NamedRuleWithOperations().
						WithAPIGroups("kubekit.dev").WithAPIVersions("v1").
						WithOperations("CREATE", "UPDATE").WithResources("widgets"))).
					WithVariables(ac.Variable().WithName("replicas").WithExpression("object.spec.replicas")).
					WithValidations(ac.Validation().
						WithExpression("variables.replicas <= 5").
						WithMessage("at most 5 replicas")))),
				// Variables are a list of atomic items keyed by name: each manager owns its
				// items whole.
				spec("bob", ac.ValidatingAdmissionPolicy(cluster("replicas")).WithSpec(ac.ValidatingAdmissionPolicySpec().
					WithVariables(ac.Variable().WithName("limit").WithExpression("5")))))
		}},
		{"validatingwebhookconfiguration", func() (report, error) {
			return run(cs.AdmissionregistrationV1().ValidatingWebhookConfigurations(), ac.ExtractValidatingWebhookConfigurationFrom,
				spec("alice", ac.ValidatingWebhookConfiguration(cluster("widgets")).WithWebhooks(
					ac.ValidatingWebhook().
						WithName("widgets.kubekit.dev").
						WithClientConfig(ac.WebhookClientConfig().WithURL("https://kubekit.invalid/validate")).
						WithRules(ac.RuleWithOperations().
							WithOperations("CREATE").WithAPIGroups("kubekit.dev").
							WithAPIVersions("v1").WithResources("widgets").WithScope("Namespaced")).
						WithFailurePolicy("Ignore").
						WithSideEffects("None").
						WithAdmissionReviewVersions("v1").
						WithTimeoutSeconds(5).
						WithMatchConditions(ac.MatchCondition().WithName("not-kube-system").
							WithExpression("request.namespace != 'kube-system'")),
					ac.ValidatingWebhook().
						WithName("gadgets.kubekit.dev").
						WithClientConfig(ac.WebhookClientConfig().WithURL("https://kubekit.invalid/gadgets")).
						WithSideEffects("None").
						WithAdmissionReviewVersions("v1", "v1beta1"))))
		}},
	}
}
