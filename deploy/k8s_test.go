package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/sextant-crawler/sextant/internal/nodeconfig"
)

// manifests parses every document of every k8s/*.yaml file with the
// Kubernetes API types (strictly: an unknown field is an error) and keeps
// the Sextant nodes' objects (label app.kubernetes.io/name=sextant), so
// that other workloads beside them (etcd) are decoded but not wired here.
type manifests struct {
	sts       []appsv1.StatefulSet
	services  []corev1.Service
	configMap []corev1.ConfigMap
	secrets   []corev1.Secret
	pdbs      []policyv1.PodDisruptionBudget
	netpols   []networkingv1.NetworkPolicy
}

// k8sDocs calls fn with every document of every manifest in k8s/ (the
// kustomization excepted) and its apiVersion and kind.
func k8sDocs(t *testing.T, fn func(where, apiKind string, doc []byte)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("k8s", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in k8s/: %v", err)
	}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(b, []byte("\n---\n")) {
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				t.Fatalf("%s doc %d: %v", f, i, err)
			}
			fn(fmt.Sprintf("%s doc %d", f, i), meta.APIVersion+" "+meta.Kind, doc)
		}
	}
}

// decodeStrict decodes doc into target, failing on an unknown field.
func decodeStrict(t *testing.T, where string, doc []byte, target any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, target); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
}

func isSextant(o metav1.ObjectMeta) bool { return o.Labels["app.kubernetes.io/name"] == "sextant" }

func loadManifests(t *testing.T) manifests {
	t.Helper()
	var m manifests
	k8sDocs(t, func(where, apiKind string, doc []byte) {
		switch apiKind {
		case "apps/v1 StatefulSet":
			var o appsv1.StatefulSet
			if decodeStrict(t, where, doc, &o); isSextant(o.ObjectMeta) {
				m.sts = append(m.sts, o)
			}
		case "v1 Service":
			var o corev1.Service
			if decodeStrict(t, where, doc, &o); isSextant(o.ObjectMeta) {
				m.services = append(m.services, o)
			}
		case "v1 ConfigMap":
			var o corev1.ConfigMap
			if decodeStrict(t, where, doc, &o); isSextant(o.ObjectMeta) {
				m.configMap = append(m.configMap, o)
			}
		case "v1 Secret":
			var o corev1.Secret
			if decodeStrict(t, where, doc, &o); isSextant(o.ObjectMeta) {
				m.secrets = append(m.secrets, o)
			}
		case "policy/v1 PodDisruptionBudget":
			var o policyv1.PodDisruptionBudget
			if decodeStrict(t, where, doc, &o); isSextant(o.ObjectMeta) {
				m.pdbs = append(m.pdbs, o)
			}
		case "networking.k8s.io/v1 NetworkPolicy":
			var o networkingv1.NetworkPolicy
			if decodeStrict(t, where, doc, &o); isSextant(o.ObjectMeta) {
				m.netpols = append(m.netpols, o)
			}
		default:
			if _, ok := podTemplate(t, where, apiKind, doc); !ok {
				t.Fatalf("%s: unexpected %s", where, apiKind)
			}
		}
	})
	if len(m.sts) == 0 || len(m.services) != 1 || len(m.configMap) != 1 || len(m.secrets) != len(m.sts) ||
		len(m.pdbs) != 1 || len(m.netpols) != 1 {
		t.Fatalf("want one StatefulSet and one Secret per node, one Service, ConfigMap, PodDisruptionBudget and NetworkPolicy; got %d, %d, %d, %d, %d, %d",
			len(m.sts), len(m.secrets), len(m.services), len(m.configMap), len(m.pdbs), len(m.netpols))
	}
	return m
}

func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%q: %v", addr, err)
	}
	return p
}

// TestK8sManifests checks that the StatefulSets (one per node), the
// headless Service, the ConfigMap's node config and the Secrets (one per
// node) agree: node count, member addresses, ports, probes and volume
// wiring, and that each pod mounts only its own node's key.
func TestK8sManifests(t *testing.T) {
	m := loadManifests(t)
	svc, cm := m.services[0], m.configMap[0]

	raw, ok := cm.Data["node.json"]
	if !ok {
		t.Fatal("ConfigMap has no node.json")
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "node.json")
	if err := os.WriteFile(cfgPath, []byte(raw), 0o644); err != nil {
		t.Fatal(err)
	}
	base, err := nodeconfig.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(base.Members) != len(m.sts) {
		t.Errorf("%d StatefulSets, the ConfigMap %d members", len(m.sts), len(base.Members))
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("the Service %q is not headless (clusterIP %q)", svc.Name, svc.Spec.ClusterIP)
	}
	secrets := map[string]corev1.Secret{}
	for _, sec := range m.secrets {
		secrets[sec.Name] = sec
	}
	// The StatefulSets differ only in the node id.
	var template []byte
	for i, sts := range m.sts {
		b, err := json.Marshal(sts)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte(sts.Name), []byte("NODE"))
		if i == 0 {
			template = b
		} else if !bytes.Equal(b, template) {
			t.Errorf("StatefulSet %s differs from %s by more than the node id", sts.Name, m.sts[0].Name)
		}
	}
	for i, mem := range base.Members {
		if i >= len(m.sts) {
			break
		}
		sts := m.sts[i]
		t.Run(sts.Name, func(t *testing.T) { checkNodeStatefulSet(t, sts, svc, cm, secrets, base, mem, cfgPath) })
	}
}

// nodeCheck is one member's StatefulSet with what it must agree with.
type nodeCheck struct {
	sts     appsv1.StatefulSet
	svc     corev1.Service
	cm      corev1.ConfigMap
	secrets map[string]corev1.Secret
	base    *nodeconfig.Config
	mem     nodeconfig.Member
	cfgPath string

	ctr    corev1.Container
	cports map[string]int32  // container port by name
	args   string            // the container's args, space-separated
	mounts map[string]string // volume name → mount path
	vols   map[string]corev1.Volume
	claims map[string]bool // volume claim template names
}

// checkNodeStatefulSet checks the StatefulSet of member mem: selectors,
// ports and address, probes, volumes, and its PKI Secret.
func checkNodeStatefulSet(t *testing.T, sts appsv1.StatefulSet, svc corev1.Service, cm corev1.ConfigMap,
	secrets map[string]corev1.Secret, base *nodeconfig.Config, mem nodeconfig.Member, cfgPath string) {
	nc := &nodeCheck{sts: sts, svc: svc, cm: cm, secrets: secrets, base: base, mem: mem, cfgPath: cfgPath}
	nc.checkWiring(t)
	nc.checkProbes(t)
	nc.checkVolumes(t)
	nc.checkPKI(t)
}

// checkWiring checks names, selectors, ports and the member address.
func (nc *nodeCheck) checkWiring(t *testing.T) {
	sts, svc, base, mem := nc.sts, nc.svc, nc.base, nc.mem
	if sts.Name != mem.ID || sts.Spec.Replicas == nil || *sts.Spec.Replicas != 1 {
		t.Errorf("StatefulSet %s (replicas %v) for member %s: want one per member, named by its id, of 1 replica", sts.Name, sts.Spec.Replicas, mem.ID)
	}
	if sts.Spec.ServiceName != svc.Name {
		t.Errorf("the StatefulSet's serviceName %q must name the headless Service %q", sts.Spec.ServiceName, svc.Name)
	}
	for k, v := range svc.Spec.Selector {
		if sts.Spec.Template.Labels[k] != v {
			t.Errorf("the Service's selector %s=%s does not select the pod", k, v)
		}
	}
	for k, v := range sts.Spec.Selector.MatchLabels {
		if sts.Spec.Template.Labels[k] != v {
			t.Errorf("label %s=%s not shared by the selector and the pod template", k, v)
		}
	}
	if len(sts.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("want one container")
	}
	nc.ctr = sts.Spec.Template.Spec.Containers[0]
	ctr, cports := nc.ctr, map[string]int32{}
	nc.cports = cports
	for _, p := range ctr.Ports {
		cports[p.Name] = p.ContainerPort
	}
	grpcPort := port(t, base.Listen)
	if fmt.Sprint(cports["grpc"]) != grpcPort {
		t.Errorf("container grpc port %d, config listen %s", cports["grpc"], base.Listen)
	}
	for _, p := range svc.Spec.Ports {
		if fmt.Sprint(p.Port) != fmt.Sprint(cports[p.Name]) || p.TargetPort.String() != p.Name {
			t.Errorf("Service port %s: %d → %s, container has %d", p.Name, p.Port, p.TargetPort.String(), cports[p.Name])
		}
	}
	// The pod is <statefulset>-0, reached as <pod>.<service>.
	if want := fmt.Sprintf("%s-0.%s:%s", sts.Name, svc.Name, grpcPort); mem.Addr != want {
		t.Errorf("member %s addr %q, want %q", mem.ID, mem.Addr, want)
	}
	nc.args = strings.Join(ctr.Args, " ")
	args := nc.args
	if !strings.HasSuffix(args, "--id "+mem.ID) {
		t.Errorf("args %q do not pass --id %s", args, mem.ID)
	}
}

// checkProbes checks the probes, grace period and resources.
func (nc *nodeCheck) checkProbes(t *testing.T) {
	ctr, cports, base, sts := nc.ctr, nc.cports, nc.base, nc.sts
	rp := ctr.ReadinessProbe
	if rp == nil || rp.GRPC == nil || base.HealthListen == "" || fmt.Sprint(rp.GRPC.Port) != port(t, base.HealthListen) || fmt.Sprint(cports["health"]) != port(t, base.HealthListen) {
		t.Errorf("readiness must be a grpc probe on health_listen %q (container health port %d)", base.HealthListen, cports["health"])
	}
	lp := ctr.LivenessProbe
	if lp == nil || lp.HTTPGet == nil || lp.HTTPGet.Path != "/healthz" || lp.HTTPGet.Port.String() != "metrics" || fmt.Sprint(cports["metrics"]) != port(t, base.MetricsListen) {
		t.Errorf("liveness must GET /healthz on the metrics port %q", base.MetricsListen)
	}
	if g := sts.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g < 30 {
		t.Error("terminationGracePeriodSeconds must leave time for a graceful stop (≥ 30 s)")
	}
	if ctr.Resources.Requests.Cpu().IsZero() || ctr.Resources.Requests.Memory().IsZero() {
		t.Error("resource requests missing")
	}
	sp := ctr.StartupProbe
	if sp == nil || sp.HTTPGet == nil || sp.HTTPGet.Path != "/healthz" || sp.HTTPGet.Port.String() != "metrics" ||
		sp.PeriodSeconds*sp.FailureThreshold < 300 {
		t.Error("startupProbe must GET /healthz on the metrics port and allow ≥ 5 minutes for a data dir check")
	}
	if fmt.Sprint(cports["status"]) != port(t, base.StatusListen) {
		t.Errorf("container status port %d, config status_listen %q", cports["status"], base.StatusListen)
	}
}

// checkVolumes checks that mounts resolve to the ConfigMap, the Secret and
// the PVC, and that the config and seeds are where the args point.
func (nc *nodeCheck) checkVolumes(t *testing.T) {
	ctr, sts, cm, base, args := nc.ctr, nc.sts, nc.cm, nc.base, nc.args
	// Volumes: mounts resolve to the ConfigMap, the Secret, the PVC.
	mounts := map[string]string{}
	nc.mounts = mounts
	for _, vm := range ctr.VolumeMounts {
		mounts[vm.Name] = vm.MountPath
	}
	vols := map[string]corev1.Volume{}
	nc.vols = vols
	for _, v := range sts.Spec.Template.Spec.Volumes {
		vols[v.Name] = v
	}
	claims := map[string]bool{}
	nc.claims = claims
	for _, c := range sts.Spec.VolumeClaimTemplates {
		claims[c.Name] = true
	}
	for name := range mounts {
		if _, ok := vols[name]; !ok && !claims[name] {
			t.Errorf("volume mount %s has no volume or claim template", name)
		}
	}
	cfgVol := ""
	for name, v := range vols {
		if v.ConfigMap != nil && v.ConfigMap.Name == cm.Name {
			cfgVol = name
		}
	}
	if cfgVol == "" || !strings.Contains(args, mounts[cfgVol]+"/node.json") {
		t.Errorf("the ConfigMap %s is not mounted where --config points (%s)", cm.Name, args)
	}
	if !nc.under(base.SeedsFile, cfgVol) || cm.Data[filepath.Base(base.SeedsFile)] == "" {
		t.Errorf("seeds_file %s is not a key of the mounted ConfigMap", base.SeedsFile)
	}
	if _, ok := mounts["tmp"]; !ok || ctr.SecurityContext == nil || ctr.SecurityContext.ReadOnlyRootFilesystem == nil {
		t.Error("a read-only root needs an emptyDir on /tmp (spilled bodies)")
	}
}

func (nc *nodeCheck) under(path, volName string) bool {
	mp, ok := nc.mounts[volName]
	return ok && strings.HasPrefix(path, mp+"/")
}

// checkPKI checks that exactly one Secret is mounted, this node's, with
// only its own key, and that the config's TLS files are in it.
func (nc *nodeCheck) checkPKI(t *testing.T) {
	vols, mounts, claims, secrets, mem := nc.vols, nc.mounts, nc.claims, nc.secrets, nc.mem
	pkiVol, secName := "", ""
	for name, v := range vols {
		if v.Secret != nil {
			if pkiVol != "" {
				t.Errorf("more than one Secret mounted: %s and %s", secName, v.Secret.SecretName)
			}
			pkiVol, secName = name, v.Secret.SecretName
		}
		if v.Projected != nil {
			t.Errorf("projected volume %s: mount only the node's own Secret", name)
		}
	}
	sec, ok := secrets[secName]
	if pkiVol == "" || !ok {
		t.Fatalf("no Secret of the manifests is mounted (%q)", secName)
	}
	keys := map[string]bool{}
	for k := range sec.StringData {
		keys[k] = true
	}
	for k := range sec.Data {
		keys[k] = true
	}
	for k := range keys {
		if strings.HasSuffix(k, "-key.pem") && k != mem.ID+"-key.pem" {
			t.Errorf("Secret %s mounted by %s holds another node's key %s", sec.Name, mem.ID, k)
		}
	}
	if v := vols[pkiVol].Secret.DefaultMode; v == nil || *v&0o007 != 0 {
		t.Errorf("Secret %s mounted readable by others (defaultMode %v)", sec.Name, v)
	}
	dataMount := ""
	for name := range claims {
		if mp, ok := mounts[name]; ok {
			dataMount = mp
		}
	}
	c, err := nodeconfig.LoadAs(nc.cfgPath, mem.ID)
	if err != nil {
		t.Fatalf("node.json for %s: %v", mem.ID, err)
	}
	if c.DataDir != dataMount {
		t.Errorf("data_dir %s is not the PVC mount %s", c.DataDir, dataMount)
	}
	for _, p := range []string{c.TLS.CA, c.TLS.Cert, c.TLS.Key} {
		if !nc.under(p, pkiVol) {
			t.Errorf("%s is not under the Secret mount %s", p, mounts[pkiVol])
		}
		if !keys[filepath.Base(p)] {
			t.Errorf("the Secret %s lacks %s", sec.Name, filepath.Base(p))
		}
	}
}

// TestDashboardAndPrometheus checks that the Grafana dashboard is valid
// JSON whose queries name only metrics the node exports, and that the
// Prometheus config scrapes every compose node.
func TestDashboardAndPrometheus(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("grafana", "sextant-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("..", "cmd", "crawler", "metrics.go"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`sextant_[a-z_]+`)
	if len(dash.Panels) == 0 {
		t.Fatal("no panels")
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range re.FindAllString(tg.Expr, -1) {
				if !strings.Contains(string(src), `"`+strings.TrimPrefix(name, "sextant_")+`"`) {
					t.Errorf("panel %q queries %s, which the node does not export", p.Title, name)
				}
			}
		}
	}
	var prom struct {
		ScrapeConfigs []struct {
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
		} `json:"scrape_configs"`
	}
	pb, err := os.ReadFile("prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(pb, &prom); err != nil {
		t.Fatal(err)
	}
	compose, _ := os.ReadFile("compose.yaml")
	var targets []string
	for _, sc := range prom.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	for i := range 3 {
		pub := fmt.Sprintf("127.0.0.1:910%d", i+1)
		if !slices.Contains(targets, pub) || !strings.Contains(string(compose), pub+":9100") {
			t.Errorf("node-%d's published metrics port %s is not both in compose.yaml and scraped", i, pub)
		}
	}
}
