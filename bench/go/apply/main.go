// Command apply measures building and serializing a typed server-side apply
// configuration with client-go's applyconfigurations, the same Deployment as
// kubekit-bench's `apply` subcommand builds, so that bench/run.sh can compare the two in
// one run. Each operation builds the configuration from nothing and marshals it as
// client-go's typed clients do for `Apply` (encoding/json). It prints one line:
// `ops=<n> seconds=<s> bytes=<length of one body>`; with -print, the body instead.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

func port(number int32, protocol corev1.Protocol, name string) *corev1ac.ContainerPortApplyConfiguration {
	return corev1ac.ContainerPort().WithContainerPort(number).WithProtocol(protocol).WithName(name)
}

// deployment is the configuration of kubekit-bench's `apply`, field for field.
func deployment(i int) *appsv1ac.DeploymentApplyConfiguration {
	name := fmt.Sprintf("web-%d", i)
	labels := map[string]string{"app": name, "tier": "frontend"}
	container := corev1ac.Container().
		WithName("web").
		WithImage("nginx:1.29").
		WithArgs("-g", "daemon off;").
		WithPorts(port(80, corev1.ProtocolTCP, "http"), port(443, corev1.ProtocolTCP, "https")).
		WithEnv(corev1ac.EnvVar().WithName("MODE").WithValue("fast"),
			corev1ac.EnvVar().WithName("LEVEL").WithValue("3")).
		WithResources(corev1ac.ResourceRequirements().WithLimits(corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("500m"),
			corev1.ResourceMemory: resource.MustParse("256Mi"),
		}))
	return appsv1ac.Deployment(name, "demo").
		WithLabels(labels).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(3).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(labels)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(labels).
				WithSpec(corev1ac.PodSpec().WithContainers(container))))
}

func main() {
	ops := flag.Int("ops", 200000, "configurations built and serialized")
	print := flag.Bool("print", false, "print the body of configuration 0 and exit")
	flag.Parse()
	if *print {
		body, err := json.Marshal(deployment(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Stdout.Write(body)
		return
	}
	total := 0
	start := time.Now()
	for i := 0; i < *ops; i++ {
		body, err := json.Marshal(deployment(i))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		total += len(body)
	}
	elapsed := time.Since(start)
	body, _ := json.Marshal(deployment(0))
	fmt.Printf("ops=%d seconds=%.6f bytes=%d total=%d\n", *ops, elapsed.Seconds(), len(body), total)
}
