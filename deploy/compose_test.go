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
}

// plainSmall is `crawler simweb --preset small --plain`, the web the compose
// cluster and the fault test serve: plain HTTP (the nodes lack simweb's CA).
func plainSmall() simweb.Config {
	c := simweb.SmallConfig()
	c.HTTPSShare, c.RedirectHTTPSShare, c.H2Share, c.HSTSShare = 0, 0, 0, 0
	return c
}
