package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"
)

// podTemplate decodes doc strictly if apiKind is a workload and returns
// its pod template; ok is false for any other kind.
func podTemplate(t *testing.T, where, apiKind string, doc []byte) (tmpl corev1.PodTemplateSpec, ok bool) {
	t.Helper()
	switch apiKind {
	case "apps/v1 StatefulSet":
		var o appsv1.StatefulSet
		decodeStrict(t, where, doc, &o)
		return o.Spec.Template, true
	case "apps/v1 Deployment":
		var o appsv1.Deployment
		decodeStrict(t, where, doc, &o)
		return o.Spec.Template, true
	case "apps/v1 DaemonSet":
		var o appsv1.DaemonSet
		decodeStrict(t, where, doc, &o)
		return o.Spec.Template, true
	case "apps/v1 ReplicaSet":
		var o appsv1.ReplicaSet
		decodeStrict(t, where, doc, &o)
		return o.Spec.Template, true
	case "batch/v1 Job":
		var o batchv1.Job
		decodeStrict(t, where, doc, &o)
		return o.Spec.Template, true
	case "batch/v1 CronJob":
		var o batchv1.CronJob
		decodeStrict(t, where, doc, &o)
		return o.Spec.JobTemplate.Spec.Template, true
	case "v1 Pod":
		var o corev1.Pod
		decodeStrict(t, where, doc, &o)
		return corev1.PodTemplateSpec{ObjectMeta: o.ObjectMeta, Spec: o.Spec}, true
	}
	return tmpl, false
}

// TestK8sPodSecurity evaluates every pod template of every workload in
// k8s/*.yaml (whatever else sits beside the nodes) against the restricted
// Pod Security Standard, with the checks the admission controller runs.
func TestK8sPodSecurity(t *testing.T) {
	ev, err := policy.NewEvaluator(policy.DefaultChecks())
	if err != nil {
		t.Fatal(err)
	}
	lv := psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()}
	n := 0
	k8sDocs(t, func(where, apiKind string, doc []byte) {
		tmpl, ok := podTemplate(t, where, apiKind, doc)
		if !ok {
			return
		}
		n++
		for _, r := range ev.EvaluatePod(lv, &tmpl.ObjectMeta, &tmpl.Spec) {
			if !r.Allowed {
				t.Errorf("%s (%s): restricted PSS: %s: %s", where, apiKind, r.ForbiddenReason, r.ForbiddenDetail)
			}
		}
	})
	if n == 0 {
		t.Fatal("no workload in k8s/")
	}
}

// The check above must be able to fail: a template without the seccomp
// profile and with privilege escalation allowed is refused.
func TestK8sPodSecurityRefuses(t *testing.T) {
	ev, err := policy.NewEvaluator(policy.DefaultChecks())
	if err != nil {
		t.Fatal(err)
	}
	lv := psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()}
	yes := true
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x",
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &yes}}}}
	refused := 0
	for _, r := range ev.EvaluatePod(lv, &metav1.ObjectMeta{}, &spec) {
		if !r.Allowed {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("restricted PSS allowed a pod with privilege escalation and no seccomp profile")
	}
}

// TestK8sDisruptionAndNetwork: the PodDisruptionBudget selects the nodes
// and lets one go at a time; the NetworkPolicy admits peers on the gRPC
// port only and Prometheus from the monitoring namespace on metrics only.
func TestK8sDisruptionAndNetwork(t *testing.T) {
	m := loadManifests(t)
	pdb, np := m.pdbs[0], m.netpols[0]
	pod := m.sts[0].Spec.Template.Labels
	for k, v := range pdb.Spec.Selector.MatchLabels {
		if pod[k] != v {
			t.Errorf("the PodDisruptionBudget's selector %s=%s does not select the nodes", k, v)
		}
	}
	if pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != intstr.FromInt32(1) || pdb.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget: want maxUnavailable 1, got %v / minAvailable %v", pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable)
	}
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if pod[k] != v {
			t.Errorf("the NetworkPolicy's podSelector %s=%s does not select the nodes", k, v)
		}
	}
	if !slices.Contains(np.Spec.PolicyTypes, "Ingress") {
		t.Error("the NetworkPolicy does not restrict ingress")
	}
	var peers, monitoring bool
	for _, rule := range np.Spec.Ingress {
		var ports []string
		for _, p := range rule.Ports {
			ports = append(ports, p.Port.String())
		}
		for _, from := range rule.From {
			switch {
			case from.PodSelector != nil && from.NamespaceSelector == nil && len(from.PodSelector.MatchLabels) > 0:
				peers = true
				if !slices.Equal(ports, []string{"grpc"}) {
					t.Errorf("peers are admitted on %v, want the gRPC port only", ports)
				}
			case from.NamespaceSelector != nil:
				monitoring = from.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "monitoring"
				if !monitoring || !slices.Equal(ports, []string{"metrics"}) {
					t.Errorf("namespace %v admitted on %v, want monitoring on the metrics port only", from.NamespaceSelector.MatchLabels, ports)
				}
			}
			if len(ports) == 0 || from.IPBlock != nil {
				t.Errorf("an ingress rule admits all ports or an IP block: %+v", rule)
			}
		}
		if len(rule.From) == 0 {
			t.Errorf("an ingress rule admits every source on %v", ports)
		}
	}
	if !peers || !monitoring {
		t.Errorf("NetworkPolicy: peers on gRPC %v, monitoring on metrics %v", peers, monitoring)
	}
}

// TestK8sKustomization: `kubectl apply -k` applies every manifest.
func TestK8sKustomization(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("k8s", "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatal(err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("kustomization.yaml is %s %s", k.APIVersion, k.Kind)
	}
	files, _ := filepath.Glob(filepath.Join("k8s", "*.yaml"))
	var want []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			want = append(want, filepath.Base(f))
		}
	}
	got := slices.Sorted(slices.Values(k.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources %v, manifests in k8s/ %v", got, want)
	}
}
