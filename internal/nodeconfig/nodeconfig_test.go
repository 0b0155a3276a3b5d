package nodeconfig

import (
	"context"
	"errors"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

const good = `{
  "id": "node-1",
  "health_listen": ":7001",
  "members": [{"id": "node-0", "addr": "node-0:7000"}, {"id": "node-1", "addr": "node-1:7000"}],
  "data_dir": "data",
  "tls": {"ca": "pki/ca.pem", "cert": "pki/node-1.pem", "key": "/abs/node-1-key.pem"},
  "workers": 16,
  "cache_per_worker": 0,
  "politeness": {"min_delay": "0s", "max_delay": "2s", "factor": 5},
  "allow_private": true,
  "resolve": {"sim.test": "simweb:8080", "other.test": "10.0.0.9"},
  "scope": "suffixes", "suffixes": ["sim.test"],
  "seeds_file": "seeds.txt",
  "metrics_listen": "0.0.0.0:9100"
}`

func TestLoadDefaultsAndPaths(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "node.json")
	if err := os.WriteFile(p, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != ":7000" {
		t.Errorf("listen default %q, want :7000 (the member's port)", c.Listen)
	}
	if c.DataDir != filepath.Join(dir, "data") || c.TLS.CA != filepath.Join(dir, "pki/ca.pem") || c.TLS.Key != "/abs/node-1-key.pem" {
		t.Errorf("paths not resolved against the file's dir: %+v %+v", c.DataDir, c.TLS)
	}
	if *c.CachePerWorker != 0 || *c.PeerCacheSize != 4096 || c.MaxPagesPerHost != 1000 {
		t.Errorf("defaults: cache %d peer %d maxpages %d", *c.CachePerWorker, *c.PeerCacheSize, c.MaxPagesPerHost)
	}
	if time.Duration(*c.Politeness.MaxDelay) != 2*time.Second {
		t.Errorf("max_delay %v", *c.Politeness.MaxDelay)
	}
}

func TestValidateReportsEveryField(t *testing.T) {
	c, err := Parse([]byte(`{"id":"x","members":[{"id":"a","addr":"a"},{"id":"a","addr":"b:99999"}],
		"workers":-1,"cache_per_worker":-2,"politeness":{"min_delay":"2s","max_delay":"1s","factor":-1},
		"resolve":{"sim.test":"simweb:8080"},"scope":"world","metrics_listen":"nope","status_listen":"0.0.0.0"}`))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Validate()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
	for _, want := range []string{"members[0] (a): addr", "duplicate id", "bad port", `id "x" is not in members`,
		"data_dir is required", "tls:", "workers -1", "cache_per_worker -2", "max_delay 1s < min_delay 2s",
		"factor -1", `scope "world"`, "resolve needs allow_private", "seeds_file or seeds", "metrics_listen", "status_listen"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{`{"idd":"x"}`, `{"id":"x"} {}`, `{"politeness":{"min_delay":5}}`, `{"politeness":{"min_delay":"5 parsecs"}}`, `[`} {
		if _, err := Parse([]byte(in)); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%s) = %v, want ErrInvalid", in, err)
		}
	}
}

func TestResolveMap(t *testing.T) {
	c, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	lookup := func(_ context.Context, _, host string) ([]netip.Addr, error) {
		asked = append(asked, host)
		if host == "simweb" {
			return []netip.Addr{netip.MustParseAddr("fd00::5"), netip.MustParseAddr("172.18.0.5")}, nil
		}
		return nil, errors.New("no such host")
	}
	m, err := c.ResolveMap(context.Background(), lookup)
	if err != nil {
		t.Fatal(err)
	}
	if m["sim.test"] != "172.18.0.5:8080" || m["other.test"] != "10.0.0.9" {
		t.Errorf("ResolveMap = %v", m)
	}
	if len(asked) != 1 {
		t.Errorf("looked up %v; IP literals must not be looked up", asked)
	}
	c.Resolve = map[string]string{"x.test": "gone:80"}
	if _, err := c.ResolveMap(context.Background(), lookup); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Errorf("a failed lookup: %v", err)
	}
}

func TestReadSeeds(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.txt")
	if err := os.WriteFile(p, []byte("# c\nhttp://a.test/\n\n http://b.test/x # tail\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &Config{Seeds: []string{"http://z.test/"}, SeedsFile: p}
	s, err := c.ReadSeeds()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s, " ") != "http://z.test/ http://a.test/ http://b.test/x" {
		t.Errorf("seeds %q", s)
	}
}

func TestMemberOptions(t *testing.T) {
	c, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	c.TLS = TLS{CA: "/nonexistent/ca.pem", Cert: "/nonexistent/c.pem", Key: "/nonexistent/k.pem"}
	c.DataDir = t.TempDir()
	if _, err := c.MemberOptions([]string{"http://h1.sim.test/"}, nil); err == nil || !strings.Contains(err.Error(), "tls") {
		t.Errorf("missing TLS files: %v", err)
	}
}

func TestWireCoalesce(t *testing.T) {
	for _, tc := range []struct {
		json string
		want time.Duration
	}{
		{``, 0}, // the member's default
		{`,"wire_coalesce":"2s"`, 2 * time.Second},
		{`,"wire_coalesce":"0s"`, -1},
		{`,"wire_coalesce":"-1s"`, -1},
	} {
		c, err := Parse([]byte(`{"id":"a","members":[{"id":"a","addr":":1"}]` + tc.json + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.wireCoalesce(); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.json, got, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte(`{"id":"a","members":[{"id":"a","addr":":1"}]}`))
	f.Add([]byte(`{"politeness":{"max_delay":"-1s"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		_ = c.Validate() // must not panic on any decoded value
	})
}

func TestLoadAsExpandsID(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "shared.json")
	shared := strings.Replace(strings.Replace(good, `"pki/node-1.pem"`, `"/pki/{id}.pem"`, 1), `"data"`, `"/data/{id}"`, 1)
	if err := os.WriteFile(p, []byte(shared), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadAs(p, "node-0")
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != "node-0" || c.TLS.Cert != "/pki/node-0.pem" || c.DataDir != "/data/node-0" {
		t.Errorf("LoadAs: id %q cert %q data %q", c.ID, c.TLS.Cert, c.DataDir)
	}
	if _, err := LoadAs(p, "node-7"); err == nil || !strings.Contains(err.Error(), "not in members") {
		t.Errorf("an id outside the membership: %v", err)
	}
}

// Values the node's flags refuse are refused in the config file too, each
// naming its JSON field.
func TestValidateRefusesLikeTheFlags(t *testing.T) {
	base := `"members":[{"id":"a","addr":"a:1"}],"data_dir":"d","tls":{"ca":"c","cert":"c","key":"k"},"seeds":["http://a.test/"]`
	for _, tc := range []struct{ json, want string }{
		{`{"id":"a","workers":100000,` + base + `}`, "workers 100000"},
		{`{"id":"a","workers":4097,` + base + `}`, "workers 4097"},
		{`{"id":"a","scope":"suffixes","suffixes":[""],` + base + `}`, "suffixes[0]"},
		{`{"id":"a","suffixes":["a.test"," "],` + base + `}`, "suffixes[1]"},
		{`{"id":"a","politeness":{"max_delay":"-1s"},` + base + `}`, "politeness.max_delay"},
		{`{"id":"a","max_repeated_segments":-2,` + base + `}`, "max_repeated_segments"},
		{`{"id":"a","user_agent":"bot\u001b[2J",` + base + `}`, "user_agent"},
		{`{"id":"a\u001b[31m","members":[{"id":"a\u001b[31m","addr":"a:1"}],"data_dir":"d","tls":{"ca":"c","cert":"c","key":"k"},"seeds":["http://a.test/"]}`, "control"},
		{`{"id":"a","body_cap":-1,` + base + `}`, "body_cap"},
		{`{"id":"a","nofollow":"sometimes",` + base + `}`, "nofollow"},
	} {
		c, err := Parse([]byte(tc.json))
		if err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		err = c.Validate()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate = %v, want ErrInvalid naming %q", tc.json, err, tc.want)
		}
	}
	// A Config built in a program may hold what JSON cannot spell.
	c, err := Parse([]byte(`{"id":"a",` + base + `}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("base config: %v", err)
	}
	for _, f := range []float64{math.NaN(), math.Inf(1)} {
		c.Politeness.Factor = &f
		if err := c.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "politeness.factor") {
			t.Errorf("factor %v: Validate = %v", f, err)
		}
	}
}

// Bad seeds (in the file or the JSON list) are reported with their place
// and skipped; none valid is an error.
func TestSeedList(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.txt")
	if err := os.WriteFile(p, []byte("http://a.test/\nftp://b.test/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &Config{Seeds: []string{"http://z.test/", "javascript:alert(1)"}, SeedsFile: p}
	l, err := c.SeedList()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(l.URLs, " ") != "http://z.test/ http://a.test/" || l.Rejected != 2 {
		t.Errorf("seeds %q, %d rejected", l.URLs, l.Rejected)
	}
	if sum := l.Summary(); !strings.Contains(sum, "seeds[1]") || !strings.Contains(sum, "line 2") {
		t.Errorf("summary %q lacks seeds[1] and line 2", sum)
	}
	c = &Config{Seeds: []string{"mailto:x@y.test"}}
	if _, err := c.SeedList(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "seeds[0]") {
		t.Errorf("no valid seed: %v", err)
	}
}

// nofollow reaches the node's options: obey unless "ignore".
func TestNoFollowOption(t *testing.T) {
	base := `"members":[{"id":"a","addr":"a:1"}],"data_dir":"d","tls":{"ca":"c","cert":"c","key":"k"},"seeds":["http://a.test/"]`
	for in, want := range map[string]string{``: crawl.NoFollowObey, `"nofollow":"obey",`: crawl.NoFollowObey, `"nofollow":"ignore",`: crawl.NoFollowIgnore} {
		c, err := Parse([]byte(`{"id":"a",` + in + base + `}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		o := c.nodeOptions(nil, nil)
		o.EnsureDefaults()
		if o.NoFollow != want {
			t.Errorf("%s: NoFollow %q, want %q", in, o.NoFollow, want)
		}
	}
}

// The gRPC port listens on the member's own interface when its address
// names one (a loopback member was exposed on every interface).
func TestDefaultListen(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:7000": "127.0.0.1:7000",
		"[::1]:7000":     "[::1]:7000",
		"10.1.2.3:7000":  "10.1.2.3:7000",
		"localhost:7000": "localhost:7000",
		"node-0:7000":    ":7000",
		"nonsense":       "",
	} {
		if got := DefaultListen(addr); got != want {
			t.Errorf("DefaultListen(%q) = %q, want %q", addr, got, want)
		}
	}
	c, err := Parse([]byte(`{"id":"a","members":[{"id":"a","addr":"127.0.0.1:7000"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:7000" {
		t.Errorf("listen default %q for a loopback member", c.Listen)
	}
}
