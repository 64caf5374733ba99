// Command webhook is controller-runtime's side of `bench/run.sh webhook`: a webhook server
// (sigs.k8s.io/controller-runtime/pkg/webhook) that validates Apps with the checks of
// kubekit's app-controller AppValidator, configured as kubebuilder scaffolds it (HTTP/2
// off, certificates read from --cert-dir and watched). It serves until killed.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// DeploymentTemplate is what an App's Deployment looks like.
type DeploymentTemplate struct {
	Name     string `json:"name,omitempty"`
	Image    string `json:"image,omitempty"`
	Replicas int32  `json:"replicas,omitempty"`
}

// ServiceTemplate is what an App's Service looks like.
type ServiceTemplate struct {
	Name string `json:"name,omitempty"`
}

// AppSpec is the App's desired state.
type AppSpec struct {
	DeploymentTemplate DeploymentTemplate `json:"deploymentTemplate,omitempty"`
	ServiceTemplate    ServiceTemplate    `json:"serviceTemplate,omitempty"`
}

// App is appcontroller.k8s.io/v1 App.
type App struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AppSpec `json:"spec,omitempty"`
}

// DeepCopyObject makes App a runtime.Object.
func (a *App) DeepCopyObject() runtime.Object {
	out := *a
	a.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

type appValidator struct{}

func (appValidator) ValidateCreate(_ context.Context, app *App) (admission.Warnings, error) {
	var problems []string
	d := app.Spec.DeploymentTemplate
	if d.Replicas < 0 {
		problems = append(problems, "spec.deploymentTemplate.replicas must not be negative")
	}
	if d.Name != "" {
		for _, p := range validation.IsDNS1123Subdomain(d.Name) {
			problems = append(problems, "spec.deploymentTemplate.name: "+p)
		}
	}
	if d.Name != "" && d.Image == "" {
		problems = append(problems, "spec.deploymentTemplate.image is required with a name")
	}
	if s := app.Spec.ServiceTemplate.Name; s != "" {
		for _, p := range validation.IsDNS1035Label(s) {
			problems = append(problems, "spec.serviceTemplate.name: "+p)
		}
		if s == d.Name {
			problems = append(problems, fmt.Sprintf("spec.serviceTemplate.name: %q is the Deployment's name too; the App's children need names of their own", s))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("App %q is invalid: %s", app.Name, strings.Join(problems, "; "))
	}
	return nil, nil
}

func (v appValidator) ValidateUpdate(ctx context.Context, _, app *App) (admission.Warnings, error) {
	return v.ValidateCreate(ctx, app)
}

func (appValidator) ValidateDelete(context.Context, *App) (admission.Warnings, error) {
	return nil, nil
}

func main() {
	certDir := flag.String("cert-dir", "", "directory holding tls.crt and tls.key")
	port := flag.Int("port", 9443, "port to serve on (127.0.0.1)")
	flag.Parse()

	scheme := runtime.NewScheme()
	gv := schema.GroupVersion{Group: "appcontroller.k8s.io", Version: "v1"}
	scheme.AddKnownTypes(gv, &App{})
	metav1.AddToGroupVersion(scheme, gv)

	server := webhook.NewServer(webhook.Options{
		Host:    "127.0.0.1",
		Port:    *port,
		CertDir: *certDir,
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
	})
	server.Register("/validate-appcontroller-k8s-io-v1-app", admission.WithValidator[*App](scheme, appValidator{}))
	if err := server.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "webhook server:", err)
		os.Exit(1)
	}
}
