package simweb

import (
	"crypto/sha256"
	"fmt"
	"io"
	"strings"
	"testing"
)

// presetDigest hashes what a preset web serves (robots.txt and
// /sitemap.xml of every host, a sample of pages) and its oracle.
func presetDigest(t *testing.T, c Config, oracle bool) string {
	w := newWeb(t, c)
	d := sha256.New()
	paths := samplePaths(w, 2000)
	for h := range w.hosts {
		for _, p := range []string{"/robots.txt", "/sitemap.xml", "/only/0.html"} {
			paths = append(paths, [2]string{w.HostName(h), p})
		}
	}
	for _, hp := range paths {
		r, err := w.Respond(hp[0], hp[1])
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(d, "%s%s %d %v %d\n", hp[0], hp[1], r.Status, r.Header, r.Size)
		d.Write(r.Body)
	}
	if oracle {
		res, err := w.Oracle(w.Seeds(), Rules{MaxPagesPerHost: 400})
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(d, strings.Join(res.Fetched, "\n"))
		fmt.Fprint(d, res.ByStatus, res.TrapHosts, res.Disallowed, res.OutOfScope, res.Links)
	}
	return fmt.Sprintf("%x", d.Sum(nil))[:16]
}

// With neither sitemaps nor HTTPS the presets serve and expect what they
// did before either was added (digests taken on the code before
// Config.SitemapShare existed); with sitemaps but no HTTPS, what they did
// before HTTPS existed (the golden values set when the presets turned
// SitemapShare on). As they are — sitemaps on and most hosts HTTPS, links
// and oracle in https — their digests are golden values set deliberately
// when the presets turned HTTPS on.
func TestPresetsUnchanged(t *testing.T) {
	noTLS := func(c Config) Config {
		c.HTTPSShare, c.RedirectHTTPSShare, c.H2Share, c.HSTSShare = 0, 0, 0, 0
		return c
	}
	const smallDigest = "678ec82b1e7f2134"
	small, def := noTLS(SmallConfig()), noTLS(DefaultConfig())
	small.SitemapShare, def.SitemapShare = 0, 0
	if got := presetDigest(t, small, true); got != smallDigest {
		t.Errorf("SmallConfig without sitemaps and HTTPS: digest %s changed", got)
	}
	if got := presetDigest(t, def, false); got != "2fb0f61f5efd794b" {
		t.Errorf("DefaultConfig without sitemaps and HTTPS: digest %s changed", got)
	}
	if got := presetDigest(t, noTLS(SmallConfig()), true); got != "8574fb99df7da35d" {
		t.Errorf("SmallConfig without HTTPS: digest %s changed", got)
	}
	if got := presetDigest(t, noTLS(DefaultConfig()), false); got != "4ed07f35a415aaef" {
		t.Errorf("DefaultConfig without HTTPS: digest %s changed", got)
	}
	if got := presetDigest(t, SmallConfig(), true); got != "98da0dc4222fc365" {
		t.Errorf("SmallConfig digest %s changed", got)
	}
	if got := presetDigest(t, DefaultConfig(), false); got != "44c9a6c5ae97191f" {
		t.Errorf("DefaultConfig digest %s changed", got)
	}
	if got := presetDigest(t, noTLS(sitemapConfig()), true); got == smallDigest {
		t.Errorf("the digest does not see sitemap hosts")
	}
}
