package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/nodeconfig"
	"github.com/sextant-crawler/sextant/simweb"
)

// TestComposeConfig checks that the shipped compose config is valid for
// every member, that its seeds are the small web's (HTTPS hosts included)
// and that the nodes trust the CA simweb writes.
func TestComposeConfig(t *testing.T) {
	for _, id := range []string{"node-0", "node-1", "node-2"} {
		c, err := nodeconfig.LoadAs(filepath.Join("compose", "node.json"), id)
		if err != nil {
			t.Fatal(err)
		}
		if c.TLS.Cert != "/pki/"+id+".pem" || c.DataDir != "/data" || c.MetricsListen != "0.0.0.0:9100" {
			t.Errorf("%s: cert %s data %s metrics %s", id, c.TLS.Cert, c.DataDir, c.MetricsListen)
		}
	}
	web, err := simweb.New(simweb.SmallConfig())
	if err != nil {
		t.Fatal(err)
	}
	c, _ := nodeconfig.LoadAs(filepath.Join("compose", "node.json"), "node-0")
	c.SeedsFile = filepath.Join("compose", "seeds.txt")
	seeds, err := c.ReadSeeds()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seeds, " ") != strings.Join(web.Seeds(), " ") {
		t.Errorf("compose/seeds.txt %v, simweb --preset small seeds %v", seeds, web.Seeds())
	}
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"node-0", "node-1", "node-2"} {
		if !strings.Contains(string(b), "--id\", \""+id+"\"") || !strings.Contains(string(b), "- "+id+":/data") {
			t.Errorf("compose.yaml lacks %s's --id or volume", id)
		}
	}
	checkComposePKI(t, string(b))
	checkComposeEtcd(t, string(b), c)
	checkComposeCA(t, string(b), c.CAFile)
}

// checkComposeCA: simweb serves HTTPS hosts and writes its CA (--ca-out)
// into the shared volume that every node mounts read-only at the directory
// of its ca_file; the nodes start once simweb is healthy (the CA written).
func checkComposeCA(t *testing.T, compose, caFile string) {
	t.Helper()
	if strings.Contains(compose, `"--plain"`) {
		t.Error("compose.yaml serves simweb --plain: the cluster would crawl no HTTPS host")
	}
	if caFile == "" {
		t.Fatal("compose/node.json has no ca_file: the nodes cannot verify simweb's HTTPS hosts")
	}
	if !strings.Contains(compose, `"--ca-out", "`+caFile+`"`) {
		t.Errorf("compose.yaml: simweb does not write its CA to %s (ca_file)", caFile)
	}
	dir := filepath.Dir(caFile)
	if !strings.Contains(compose, "- simweb-ca:"+dir+"\n") {
		t.Errorf("compose.yaml: simweb does not mount the simweb-ca volume at %s", dir)
	}
	if n := strings.Count(compose, "- simweb-ca:"+dir+":ro"); n != 3 {
		t.Errorf("compose.yaml: %d nodes mount simweb-ca at %s read-only, want 3", n, dir)
	}
	if !strings.Contains(compose, "condition: service_healthy") {
		t.Error("compose.yaml: the nodes do not wait for simweb to be healthy (its CA written)")
	}
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(df), "COPY --chown=65532:65532 ca/ "+dir+"/") {
		t.Errorf("Dockerfile: %s is not owned by the image's user: simweb could not write its CA into a fresh volume", dir)
	}
}

// checkComposePKI: every node mounts its own PKI directory and nothing else
// of the PKI (it used to mount every node's key into every container), and
// up.sh makes those directories with 0600 keys owned by the image's user.
func checkComposePKI(t *testing.T, compose string) {
	t.Helper()
	svc := ""
	mounts := map[string][]string{}
	for _, line := range strings.Split(compose, "\n") {
		if strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") && strings.HasSuffix(line, ":") {
			svc = strings.TrimSuffix(strings.TrimSpace(line), ":")
		}
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "- ") && strings.Contains(l, ":/pki") {
			mounts[svc] = append(mounts[svc], strings.TrimPrefix(l, "- "))
		}
	}
	if strings.Contains(compose, "compose/pki:/pki") {
		t.Error("compose.yaml mounts the whole PKI directory somewhere")
	}
	for _, id := range []string{"node-0", "node-1", "node-2", "etcd-0", "etcd-1", "etcd-2"} {
		if want := []string{"./compose/pki/" + id + ":/pki:ro"}; strings.Join(mounts[id], " ") != strings.Join(want, " ") {
			t.Errorf("%s mounts %v of the PKI, want %v", id, mounts[id], want)
		}
	}
	up, err := os.ReadFile("up.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(up), "--etcd 3") {
		t.Error("up.sh does not issue the etcd members' certificates (crawler certs --etcd 3)")
	}
	if !strings.Contains(string(up), "--per-node --owner 65532:65532") || strings.Contains(string(up), "0644") {
		t.Error("up.sh must make per-node PKI directories owned by 65532 (crawler certs --per-node --owner) and no 0644 key")
	}
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(df), "USER 65532:65532") {
		t.Error("the image's user is not 65532:65532, the owner up.sh gives the keys")
	}
}

// checkComposeEtcd: the nodes are fenced on the 3-member etcd the compose
// file runs (issue 25): every endpoint of node.json is a member's client
// address, each member lists all three as peers and uses its own
// certificate, and nodes and members start in any order.
func checkComposeEtcd(t *testing.T, compose string, c *nodeconfig.Config) {
	t.Helper()
	if c.Etcd == nil || len(c.Etcd.Endpoints) != 3 {
		t.Fatalf("compose/node.json: etcd %+v, want the 3 members' endpoints", c.Etcd)
	}
	peers := `"--peers", "etcd-0=etcd-0:2380,etcd-1=etcd-1:2380,etcd-2=etcd-2:2380"`
	if n := strings.Count(compose, peers); n != 3 {
		t.Errorf("compose.yaml: %d etcd members list all three peers, want 3", n)
	}
	for i, ep := range c.Etcd.Endpoints {
		name := fmt.Sprintf("etcd-%d", i)
		if ep != "https://"+name+":2379" {
			t.Errorf("node.json etcd endpoint %d: %s, want https://%s:2379", i, ep, name)
		}
		for _, want := range []string{
			"  " + name + ":\n",
			`"--name", "` + name + `"`,
			`"--client", "` + name + `:2379"`,
			`"--cert", "/pki/` + name + `.pem", "--key", "/pki/` + name + `-key.pem"`,
			"- " + name + ":/data",
		} {
			if !strings.Contains(compose, want) {
				t.Errorf("compose.yaml: etcd member %s lacks %q", name, want)
			}
		}
	}
	if c.Etcd.TTL != nil && time.Duration(*c.Etcd.TTL) < 3*time.Second {
		t.Errorf("node.json etcd ttl %v: must outlast an election with etcd's default 1 s timeout (≥ 3 s)", *c.Etcd.TTL)
	}
}
