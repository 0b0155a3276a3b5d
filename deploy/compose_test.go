package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/internal/nodeconfig"
	"github.com/sextant-crawler/sextant/simweb"
)

// TestComposeConfig checks that the shipped compose config is valid for
// every member and that its seeds are the small web's.
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
	web, err := simweb.New(plainSmall())
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
	for _, id := range []string{"node-0", "node-1", "node-2"} {
		if want := []string{"./compose/pki/" + id + ":/pki:ro"}; strings.Join(mounts[id], " ") != strings.Join(want, " ") {
			t.Errorf("%s mounts %v of the PKI, want %v", id, mounts[id], want)
		}
	}
	up, err := os.ReadFile("up.sh")
	if err != nil {
		t.Fatal(err)
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

// plainSmall is `crawler simweb --preset small --plain`, the web the compose
// cluster and the fault test serve: plain HTTP (the nodes lack simweb's CA).
func plainSmall() simweb.Config {
	c := simweb.SmallConfig()
	c.HTTPSShare, c.RedirectHTTPSShare, c.H2Share, c.HSTSShare = 0, 0, 0, 0
	return c
}
