package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/parsers/yaml"

	"github.com/toolbridge/toolbridge/cmd/toolbridge/internal/testenv"
)

// helmChart is the example chart this test lints and renders.
const helmChart = "../../../examples/deploy/helm/toolbridge"

// helmPackage and helmVersion pin the helm CI uses, built from the Go
// module proxy once into the test cache (testenv.GoTool).
const (
	helmPackage = "helm.sh/helm/v3/cmd/helm"
	helmVersion = "v3.22.0"
)

// helmRunner runs helm with its home directories in the test's temp dir.
type helmRunner struct {
	t   *testing.T
	bin string
	env []string
}

func newHelm(t *testing.T) helmRunner {
	t.Helper()
	home := t.TempDir()
	env := append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	return helmRunner{t: t, bin: testenv.GoTool(t, helmPackage, helmVersion), env: env}
}

func (h helmRunner) run(args ...string) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Env = h.env
	var stderr testenv.SyncBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		h.t.Fatalf("helm %s: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// k8sObject is one rendered manifest.
type k8sObject map[string]any

// at walks keys (strings for maps, ints for lists) and returns what is
// there, or nil.
func (o k8sObject) at(path ...any) any {
	var cur any = map[string]any(o)
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = m[k]
		case int:
			l, ok := cur.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			cur = l[k]
		}
	}
	return cur
}

// docSeparator splits a rendered stream into its YAML documents.
var docSeparator = regexp.MustCompile(`(?m)^---\s*$`)

// render runs helm template with args and returns the objects by kind.
func (h helmRunner) render(args ...string) map[string]k8sObject {
	h.t.Helper()
	out := h.run(append([]string{"template", "gw", helmChart}, args...)...)
	objs := map[string]k8sObject{}
	for _, doc := range docSeparator.Split(out, -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		m, err := yaml.Parser().Unmarshal([]byte(doc))
		if err != nil {
			h.t.Fatalf("helm template rendered invalid YAML: %v\n%s", err, doc)
		}
		if len(m) == 0 {
			continue // a document of comments only
		}
		kind, _ := m["kind"].(string)
		if _, dup := objs[kind]; dup {
			h.t.Fatalf("two objects of kind %s rendered", kind)
		}
		objs[kind] = m
	}
	return objs
}

// TestHelmChart lints and renders examples/deploy/helm/toolbridge with
// the pinned helm, and checks what a cluster would get: every object the
// chart promises, the probes on /healthz and /readyz, the hardened pod,
// the HPA owning the replica count (or replicaCount without it), Secrets
// referenced by name only, and a ConfigMap whose config the real
// toolbridge accepts (config check). Not exercised: installing it into a
// cluster.
func TestHelmChart(t *testing.T) {
	h := newHelm(t)
	if out := h.run("lint", "--strict", helmChart); !strings.Contains(out, "0 chart(s) failed") {
		t.Fatalf("helm lint --strict:\n%s", out)
	}

	objs := h.render()
	for _, kind := range []string{"Deployment", "Service", "ConfigMap", "PodDisruptionBudget", "HorizontalPodAutoscaler"} {
		if objs[kind] == nil {
			t.Errorf("helm template rendered no %s", kind)
		}
	}
	dep := objs["Deployment"]
	if dep == nil {
		t.FailNow()
	}
	if r := dep.at("spec", "replicas"); r != nil {
		t.Errorf("with the HPA on, the Deployment sets replicas %v: it would fight the HPA", r)
	}
	hpa := objs["HorizontalPodAutoscaler"]
	if min, max := fmt.Sprint(hpa.at("spec", "minReplicas")), fmt.Sprint(hpa.at("spec", "maxReplicas")); min != "3" || max != "10" {
		t.Errorf("HPA replicas %s..%s, want 3..10", min, max)
	}
	if got := hpa.at("spec", "scaleTargetRef", "name"); got != dep.at("metadata", "name") {
		t.Errorf("the HPA scales %v, not the Deployment %v", got, dep.at("metadata", "name"))
	}
	if got := fmt.Sprint(objs["PodDisruptionBudget"].at("spec", "maxUnavailable")); got != "1" {
		t.Errorf("PDB maxUnavailable %s, want 1", got)
	}

	c := k8sObject(dep.at("spec", "template", "spec", "containers", 0).(map[string]any))
	for probe, want := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz", "startupProbe": "/healthz"} {
		if got := c.at(probe, "httpGet", "path"); got != want {
			t.Errorf("%s path %v, want %s", probe, got, want)
		}
		if got := c.at(probe, "httpGet", "port"); got != "http" {
			t.Errorf("%s port %v, want the named port http", probe, got)
		}
	}
	if got := fmt.Sprint(c.at("ports", 0, "containerPort")); got != "8080" {
		t.Errorf("containerPort %s, want 8080", got)
	}
	if got := objs["Service"].at("spec", "ports", 0, "targetPort"); got != "http" {
		t.Errorf("Service targetPort %v, want http", got)
	}
	// /metrics has its own port, with no token: in the pod, never in the
	// Service that clients reach.
	if name, port := fmt.Sprint(c.at("ports", 1, "name")), fmt.Sprint(c.at("ports", 1, "containerPort")); name != "metrics" || port != "9464" {
		t.Errorf("second container port %s %s, want metrics 9464", name, port)
	}
	if n := len(objs["Service"].at("spec", "ports").([]any)); n != 1 {
		t.Errorf("the Service exposes %d ports, want only http (metrics stay in the pod)", n)
	}
	if got := fmt.Sprint(dep.at("spec", "template", "metadata", "annotations", "prometheus.io/port")); got != "9464" {
		t.Errorf("prometheus.io/port annotation %s, want 9464", got)
	}
	pod := k8sObject(dep.at("spec", "template", "spec").(map[string]any))
	for _, check := range []struct {
		path []any
		want string
	}{
		{[]any{"securityContext", "runAsNonRoot"}, "true"},
		{[]any{"securityContext", "runAsUser"}, "65532"},
		{[]any{"automountServiceAccountToken"}, "false"},
	} {
		if got := fmt.Sprint(pod.at(check.path...)); got != check.want {
			t.Errorf("pod %v = %s, want %s", check.path, got, check.want)
		}
	}
	for _, check := range []struct {
		path []any
		want string
	}{
		{[]any{"securityContext", "readOnlyRootFilesystem"}, "true"},
		{[]any{"securityContext", "allowPrivilegeEscalation"}, "false"},
		{[]any{"securityContext", "capabilities", "drop", 0}, "ALL"},
	} {
		if got := fmt.Sprint(c.at(check.path...)); got != check.want {
			t.Errorf("container %v = %s, want %s", check.path, got, check.want)
		}
	}
	// With a read-only root, /tmp and the state directory are volumes.
	var mounts []string
	for _, m := range c.at("volumeMounts").([]any) {
		mounts = append(mounts, fmt.Sprint(m.(map[string]any)["mountPath"]))
	}
	for _, want := range []string{"/etc/toolbridge", "/tmp", "/var/lib/toolbridge"} {
		if !slices.Contains(mounts, want) {
			t.Errorf("no volume mounted at %s: %v", want, mounts)
		}
	}
	env := envOf(c)
	if env["TOOLBRIDGE_CONFIG"] != "/etc/toolbridge/toolbridge.yaml" || env["TOOLBRIDGE_SERVE__TRANSPORT"] != "http" {
		t.Errorf("container env %v does not point at the mounted config over HTTP", env)
	}
	if _, ok := env["TOOLBRIDGE_REDIS__URL"]; ok {
		t.Errorf("TOOLBRIDGE_REDIS__URL set with no redis.existingSecret")
	}

	// The ConfigMap's config, with the environment the pod has, passes
	// the real toolbridge's config check.
	cfgText, _ := objs["ConfigMap"].at("data", "toolbridge.yaml").(string)
	if !strings.Contains(cfgText, "allowed_hosts") || !strings.Contains(cfgText, "drain_delay") {
		t.Errorf("the ConfigMap's toolbridge.yaml does not set allowed_hosts and drain_delay:\n%s", cfgText)
	}
	cfgFile := writeConfig(t, "toolbridge.yaml", cfgText)
	podEnv := []string{"TOOLBRIDGE_STATE_DIR=" + t.TempDir(),
		"TOOLBRIDGE_SERVE__TRANSPORT=http", "TOOLBRIDGE_SERVE__LISTEN=" + env["TOOLBRIDGE_SERVE__LISTEN"],
		"TOOLBRIDGE_SERVE__ALLOW_REMOTE=" + env["TOOLBRIDGE_SERVE__ALLOW_REMOTE"]}
	// As the pod has it, and with the variables the chart sets from
	// Secrets, which must be settings toolbridge knows.
	for _, extra := range [][]string{nil, {"TOOLBRIDGE_REDIS__URL=redis://127.0.0.1:6379/0", "TOOLBRIDGE_SERVE__AUTH_TOKEN=chart-test-token"}} {
		check := exec.Command(binary, "config", "check", "-c", cfgFile)
		check.Env = testEnv(t, append(slices.Clone(podEnv), extra...))
		if out, err := check.CombinedOutput(); err != nil {
			t.Errorf("toolbridge config check on the chart's config (extra env %q): %v\n%s", extra, err, out)
		}
	}

	// Secrets by reference, and replicaCount without the HPA.
	objs = h.render("--set", "redis.existingSecret=gw-redis", "--set", "authToken.existingSecret=gw-token",
		"--set", "secretEnv[0].name=TOOLBRIDGE_TOKEN_KEY", "--set", "secretEnv[0].secretName=gw-keys", "--set", "secretEnv[0].key=token-key",
		"--set", "autoscaling.enabled=false", "--set", "replicaCount=4")
	if objs["HorizontalPodAutoscaler"] != nil {
		t.Error("autoscaling.enabled=false still rendered an HPA")
	}
	dep = objs["Deployment"]
	if got := fmt.Sprint(dep.at("spec", "replicas")); got != "4" {
		t.Errorf("replicas %s without the HPA, want replicaCount 4", got)
	}
	c = k8sObject(dep.at("spec", "template", "spec", "containers", 0).(map[string]any))
	refs := secretRefsOf(c)
	for name, want := range map[string]string{
		"TOOLBRIDGE_REDIS__URL":        "gw-redis/redis-url",
		"TOOLBRIDGE_SERVE__AUTH_TOKEN": "gw-token/auth-token",
		"TOOLBRIDGE_TOKEN_KEY":         "gw-keys/token-key",
	} {
		if refs[name] != want {
			t.Errorf("%s from secret %q, want %q", name, refs[name], want)
		}
	}
}

// envOf returns a container's plain environment.
func envOf(c k8sObject) map[string]string {
	env := map[string]string{}
	list, _ := c.at("env").([]any)
	for _, e := range list {
		m := e.(map[string]any)
		if v, ok := m["value"]; ok {
			env[fmt.Sprint(m["name"])] = fmt.Sprint(v)
		}
	}
	return env
}

// secretRefsOf returns a container's variables from Secrets, as
// "secret/key".
func secretRefsOf(c k8sObject) map[string]string {
	refs := map[string]string{}
	list, _ := c.at("env").([]any)
	for _, e := range list {
		o := k8sObject(e.(map[string]any))
		if name, ok := o.at("valueFrom", "secretKeyRef", "name").(string); ok {
			refs[fmt.Sprint(o["name"])] = name + "/" + fmt.Sprint(o.at("valueFrom", "secretKeyRef", "key"))
		}
	}
	return refs
}
