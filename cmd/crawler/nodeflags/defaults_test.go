package nodeflags

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sextant-crawler/sextant/fetcher"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/nodeconfig"
)

// The three ways of configuring a node — flags, the node config file and
// Go (crawl.DefaultOptions) — give the same options when nothing is set
// (issue 26: they used to disagree, e.g. on the per-host budget and the
// frontier's back queues). Only what cannot be compared is left out: the
// link filter and the logger (built per path); the proxy, a func, is
// compared by what it does with HTTPS_PROXY set.
func TestDefaultsAgree(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HTTPS_PROXY", "http://proxy.test:3128")
	t.Setenv("NO_PROXY", "")

	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	nf := Add(fs)
	if err := fs.Parse([]string{"--data", dir}); err != nil {
		t.Fatal(err)
	}
	fromFlags, err := nf.Options(nil)
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := nodeconfig.Parse(fmt.Appendf(nil, `{"id": "n0", "members": [{"id": "n0", "addr": "127.0.0.1:7000"}],
		"data_dir": %q, "tls": {"ca": "ca.pem", "cert": "n0.pem", "key": "n0-key.pem"}, "seeds": ["http://a.test/"]}`, dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	fromFile, err := cfg.NodeOptions(nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	fromGo := crawl.DefaultOptions()
	fromGo.DataDir = dir
	fromGo.EnsureDefaults()
	if err := fromGo.Validate(); err != nil {
		t.Fatal(err)
	}

	ignore := cmp.Options{
		cmpopts.IgnoreUnexported(crawl.Options{}),
		cmpopts.IgnoreFields(crawl.Options{}, "Filter", "Logger"),
		cmpopts.IgnoreFields(fetcher.Options{}, "Proxy"),
		cmpopts.IgnoreInterfaces(struct{ frontier.Clock }{}),
		cmpopts.IgnoreTypes((*slog.Logger)(nil)),
	}
	if d := cmp.Diff(fromGo, fromFlags, ignore); d != "" {
		t.Errorf("flags differ from crawl.DefaultOptions (-go +flags):\n%s", d)
	}
	if d := cmp.Diff(fromGo, fromFile, ignore); d != "" {
		t.Errorf("node config differs from crawl.DefaultOptions (-go +file):\n%s", d)
	}
	target, _ := url.Parse("https://example.test/")
	for name, o := range map[string]crawl.Options{"go": fromGo, "flags": fromFlags, "file": fromFile} {
		if o.Fetcher.Proxy == nil {
			t.Errorf("%s: no proxy function: HTTPS_PROXY is ignored", name)
			continue
		}
		if p, err := o.Fetcher.Proxy(target); err != nil || p == nil || p.Host != "proxy.test:3128" {
			t.Errorf("%s: proxy for %s = %v, %v; want proxy.test:3128 from HTTPS_PROXY", name, target, p, err)
		}
	}
	// The values the issue names, to be sure the comparison compared.
	if fromGo.MaxPagesPerHost != 1000 || fromGo.SoftPagesPerHost != 500 || fromGo.CachePerWorker != 512 {
		t.Errorf("defaults: %d pages per host (soft %d), %d cache entries per worker", fromGo.MaxPagesPerHost, fromGo.SoftPagesPerHost, fromGo.CachePerWorker)
	}
	if got := filepath.Clean(fromFile.DataDir); got != filepath.Clean(dir) {
		t.Errorf("node config data dir %q, want %q", got, dir)
	}
}

// An unset library budget is the default one, as for the flags and the
// node config: the library used to default to no budget at all.
func TestLibraryBudgetDefault(t *testing.T) {
	o := crawl.Options{DataDir: t.TempDir()}
	o.EnsureDefaults()
	if b := o.Frontier.HostBudget; b.Hard != 1000 || b.Soft != 500 {
		t.Errorf("Options{} budget %+v, want hard 1000, soft 500", b)
	}
	o = crawl.Options{DataDir: t.TempDir(), MaxPagesPerHost: -1}
	o.EnsureDefaults()
	if b := o.Frontier.HostBudget; b.Hard != 0 || b.Soft != 0 {
		t.Errorf("MaxPagesPerHost -1: budget %+v, want none", b)
	}
}

// A hard budget set alone gets half of it as soft budget, from the flags
// and from the node config alike (a config with max_pages_per_host 200
// was refused: the default soft budget, 500, exceeded it).
func TestBudgetSetAloneAgrees(t *testing.T) {
	dir := t.TempDir()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	nf := Add(fs)
	if err := fs.Parse([]string{"--data", dir, "--max-pages-per-host", "200"}); err != nil {
		t.Fatal(err)
	}
	fromFlags, err := nf.Options(nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := nodeconfig.Parse(fmt.Appendf(nil, `{"id": "n0", "members": [{"id": "n0", "addr": "127.0.0.1:7000"}], "max_pages_per_host": 200,
		"data_dir": %q, "tls": {"ca": "ca.pem", "cert": "n0.pem", "key": "n0-key.pem"}, "seeds": ["http://a.test/"]}`, dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	fromFile, err := cfg.NodeOptions(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := frontier.Budget{Soft: 100, Hard: 200, LowPriority: 1}
	if fromFlags.Frontier.HostBudget != want || fromFile.Frontier.HostBudget != want {
		t.Errorf("budgets: flags %+v, node config %+v; want %+v", fromFlags.Frontier.HostBudget, fromFile.Frontier.HostBudget, want)
	}
}
