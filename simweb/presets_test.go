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

// The presets serve and expect what they did before sitemaps were added
// (digests taken on the code before Config.SitemapShare existed) once their
// HTTPS is turned off: a web without HTTPS is byte for byte what it was
// before HTTPS existed. With HTTPS (the presets since h-https: most hosts
// HTTPS, links and oracle in https) the digests are new golden values, set
// deliberately when HTTPS was turned on.
func TestPresetsUnchanged(t *testing.T) {
	noTLS := func(c Config) Config {
		c.HTTPSShare, c.RedirectHTTPSShare, c.H2Share, c.HSTSShare = 0, 0, 0, 0
		return c
	}
	const smallDigest = "678ec82b1e7f2134"
	if got := presetDigest(t, noTLS(SmallConfig()), true); got != smallDigest {
		t.Errorf("SmallConfig without HTTPS: digest %s changed", got)
	}
	if got := presetDigest(t, noTLS(DefaultConfig()), false); got != "2fb0f61f5efd794b" {
		t.Errorf("DefaultConfig without HTTPS: digest %s changed", got)
	}
	if got := presetDigest(t, SmallConfig(), true); got != "e435ab0b7b12246a" {
		t.Errorf("SmallConfig digest %s changed", got)
	}
	if got := presetDigest(t, DefaultConfig(), false); got != "23d86744c5818396" {
		t.Errorf("DefaultConfig digest %s changed", got)
	}
	if got := presetDigest(t, noTLS(sitemapConfig()), true); got == smallDigest {
		t.Errorf("the digest does not see sitemap hosts")
	}
}
