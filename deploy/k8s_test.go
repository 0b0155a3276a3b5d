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
	"sigs.k8s.io/yaml"

	"github.com/sextant-crawler/sextant/internal/nodeconfig"
)

// manifests parses every document of every k8s/*.yaml file with the
// Kubernetes API types (strictly: an unknown field is an error).
type manifests struct {
	sts       []appsv1.StatefulSet
	services  []corev1.Service
	configMap []corev1.ConfigMap
	secrets   []corev1.Secret
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("k8s", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in k8s/: %v", err)
	}
	// The etcd cluster's objects are checked by TestK8sEtcd.
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "etcd.yaml" })
	var m manifests
	for _, f := range files {
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
			var target any
			switch meta.APIVersion + " " + meta.Kind {
			case "apps/v1 StatefulSet":
				m.sts = append(m.sts, appsv1.StatefulSet{})
				target = &m.sts[len(m.sts)-1]
			case "v1 Service":
				m.services = append(m.services, corev1.Service{})
				target = &m.services[len(m.services)-1]
			case "v1 ConfigMap":
				m.configMap = append(m.configMap, corev1.ConfigMap{})
				target = &m.configMap[len(m.configMap)-1]
			case "v1 Secret":
				m.secrets = append(m.secrets, corev1.Secret{})
				target = &m.secrets[len(m.secrets)-1]
			default:
				t.Fatalf("%s doc %d: unexpected %s %s", f, i, meta.APIVersion, meta.Kind)
			}
			if err := yaml.UnmarshalStrict(doc, target); err != nil {
				t.Fatalf("%s doc %d (%s): %v", f, i, meta.Kind, err)
			}
		}
	}
	if len(m.sts) == 0 || len(m.services) != 1 || len(m.configMap) != 1 || len(m.secrets) != len(m.sts) {
		t.Fatalf("want one StatefulSet and one Secret per node, one Service and one ConfigMap; got %d, %d, %d, %d",
			len(m.sts), len(m.secrets), len(m.services), len(m.configMap))
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

// checkNodeStatefulSet checks the StatefulSet of member mem.
func checkNodeStatefulSet(t *testing.T, sts appsv1.StatefulSet, svc corev1.Service, cm corev1.ConfigMap,
	secrets map[string]corev1.Secret, base *nodeconfig.Config, mem nodeconfig.Member, cfgPath string) {
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
	ctr := sts.Spec.Template.Spec.Containers[0]
	cports := map[string]int32{}
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
	args := strings.Join(ctr.Args, " ")
	if !strings.HasSuffix(args, "--id "+mem.ID) {
		t.Errorf("args %q do not pass --id %s", args, mem.ID)
	}
	// Probes.
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
	// Volumes: mounts resolve to the ConfigMap, the Secret, the PVC.
	mounts := map[string]string{}
	for _, vm := range ctr.VolumeMounts {
		mounts[vm.Name] = vm.MountPath
	}
	vols := map[string]corev1.Volume{}
	for _, v := range sts.Spec.Template.Spec.Volumes {
		vols[v.Name] = v
	}
	claims := map[string]bool{}
	for _, c := range sts.Spec.VolumeClaimTemplates {
		claims[c.Name] = true
	}
	for name := range mounts {
		if _, ok := vols[name]; !ok && !claims[name] {
			t.Errorf("volume mount %s has no volume or claim template", name)
		}
	}
	under := func(path, volName string) bool {
		mp, ok := mounts[volName]
		return ok && strings.HasPrefix(path, mp+"/")
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
	if !under(base.SeedsFile, cfgVol) || cm.Data[filepath.Base(base.SeedsFile)] == "" {
		t.Errorf("seeds_file %s is not a key of the mounted ConfigMap", base.SeedsFile)
	}
	// Exactly one Secret is mounted: this node's, with only its own key.
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
	c, err := nodeconfig.LoadAs(cfgPath, mem.ID)
	if err != nil {
		t.Fatalf("node.json for %s: %v", mem.ID, err)
	}
	if c.DataDir != dataMount {
		t.Errorf("data_dir %s is not the PVC mount %s", c.DataDir, dataMount)
	}
	for _, p := range []string{c.TLS.CA, c.TLS.Cert, c.TLS.Key} {
		if !under(p, pkiVol) {
			t.Errorf("%s is not under the Secret mount %s", p, mounts[pkiVol])
		}
		if !keys[filepath.Base(p)] {
			t.Errorf("the Secret %s lacks %s", sec.Name, filepath.Base(p))
		}
	}
	if _, ok := mounts["tmp"]; !ok || ctr.SecurityContext == nil || ctr.SecurityContext.ReadOnlyRootFilesystem == nil {
		t.Error("a read-only root needs an emptyDir on /tmp (spilled bodies)")
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
