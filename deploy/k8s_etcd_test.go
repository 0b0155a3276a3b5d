package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/sextant-crawler/sextant/internal/nodeconfig"
)

// etcdManifests are the objects of k8s/etcd.yaml, decoded strictly.
type etcdManifests struct {
	sts    appsv1.StatefulSet
	svc    corev1.Service
	pdb    policyv1.PodDisruptionBudget
	secret corev1.Secret
}

func loadEtcdManifests(t *testing.T) etcdManifests {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("k8s", "etcd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m etcdManifests
	seen := map[string]int{}
	for i, doc := range bytes.Split(b, []byte("\n---\n")) {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("etcd.yaml doc %d: %v", i, err)
		}
		var target any
		switch k := meta.APIVersion + " " + meta.Kind; k {
		case "apps/v1 StatefulSet":
			target = &m.sts
		case "v1 Service":
			target = &m.svc
		case "policy/v1 PodDisruptionBudget":
			target = &m.pdb
		case "v1 Secret":
			target = &m.secret
		default:
			t.Fatalf("etcd.yaml doc %d: unexpected %s", i, k)
		}
		seen[meta.Kind]++
		if err := yaml.UnmarshalStrict(doc, target); err != nil {
			t.Fatalf("etcd.yaml doc %d (%s): %v", i, meta.Kind, err)
		}
	}
	for _, k := range []string{"StatefulSet", "Service", "PodDisruptionBudget", "Secret"} {
		if seen[k] != 1 {
			t.Fatalf("etcd.yaml: %d %s documents, want 1", seen[k], k)
		}
	}
	return m
}

// TestK8sEtcd checks the etcd StatefulSet against its headless Service,
// its Secret, the restricted Pod Security Standard, and the nodes' config:
// every member the pods name is a peer and an endpoint of node.json.
func TestK8sEtcd(t *testing.T) {
	m := loadEtcdManifests(t)
	sts, svc := m.sts, m.svc
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 3 {
		t.Fatalf("etcd replicas %v, want 3", sts.Spec.Replicas)
	}
	if sts.Spec.ServiceName != svc.Name || svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("etcd's Service %q: headless %q, publishNotReadyAddresses %v; the StatefulSet's serviceName %q",
			svc.Name, svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses, sts.Spec.ServiceName)
	}
	if sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q: members must start together to form a quorum", sts.Spec.PodManagementPolicy)
	}
	pod := sts.Spec.Template
	for k, v := range svc.Spec.Selector {
		if pod.Labels[k] != v || m.pdb.Spec.Selector.MatchLabels[k] != v {
			t.Errorf("selector %s=%s does not select the etcd pods (pod labels %v, PDB %v)", k, v, pod.Labels, m.pdb.Spec.Selector.MatchLabels)
		}
	}
	if mu := m.pdb.Spec.MaxUnavailable; mu == nil || mu.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget maxUnavailable %v, want 1 (a quorum of 3 survives one)", mu)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("%d containers in the etcd pod", len(pod.Spec.Containers))
	}
	c := pod.Spec.Containers[0]
	checkRestricted(t, pod.Spec, c)
	args := strings.Join(c.Args, " ")
	var peers, eps []string
	for i := range int(*sts.Spec.Replicas) {
		name := fmt.Sprintf("%s-%d", sts.Name, i)
		peers = append(peers, fmt.Sprintf("%s=%s.%s:2380", name, name, svc.Name))
		eps = append(eps, fmt.Sprintf("https://%s.%s:2379", name, svc.Name))
	}
	for _, want := range []string{
		"--peers " + strings.Join(peers, ","),
		"--name $(POD_NAME)", "--client $(POD_NAME)." + svc.Name + ":2379", "--peer $(POD_NAME)." + svc.Name + ":2380",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("etcd args %q lack %q", args, want)
		}
	}
	if len(c.Env) != 1 || c.Env[0].Name != "POD_NAME" || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("POD_NAME is not the pod's name: %+v", c.Env)
	}
	// Every file the args name is a key of the Secret mounted at /pki.
	for i, a := range c.Args {
		if f, ok := strings.CutPrefix(a, "/pki/"); ok && i > 0 && slices.Contains([]string{"--ca", "--cert", "--key"}, c.Args[i-1]) {
			if _, ok := m.secret.StringData[f]; !ok {
				t.Errorf("%s %s: no key %q in Secret %s", c.Args[i-1], a, f, m.secret.Name)
			}
		}
	}
	var pkiVol string
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			pkiVol = v.Secret.SecretName
		}
	}
	if pkiVol != m.secret.Name {
		t.Errorf("the etcd pods mount Secret %q, the file documents %q", pkiVol, m.secret.Name)
	}
	cm := loadManifests(t).configMap[0]
	cfg, err := nodeconfig.Parse([]byte(cm.Data["node.json"]))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Etcd == nil || strings.Join(cfg.Etcd.Endpoints, " ") != strings.Join(eps, " ") {
		t.Errorf("node.json's etcd %+v, want endpoints %v", cfg.Etcd, eps)
	}
}

// checkRestricted checks what the restricted Pod Security Standard asks of
// a pod and its container.
func checkRestricted(t *testing.T, spec corev1.PodSpec, c corev1.Container) {
	t.Helper()
	psc, sc := spec.SecurityContext, c.SecurityContext
	if psc == nil || sc == nil {
		t.Fatal("no securityContext on the pod or its container")
	}
	if psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Error("the pod may run as root")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("capabilities %+v, want drop [ALL], add none", sc.Capabilities)
	}
	seccomp := psc.SeccompProfile
	if sc.SeccompProfile != nil {
		seccomp = sc.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("seccompProfile %+v, want RuntimeDefault", seccomp)
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
	}
}
