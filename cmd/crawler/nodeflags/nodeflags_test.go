package nodeflags

import (
	"errors"
	"flag"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/internal/crawl"
)

// Flag values that used to be accepted (or silently replaced by a default)
// are refused with an error that names the flag.
func TestNodeFlagsRefuse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--factor", "NaN"}, "--factor"},
		{[]string{"--factor", "+Inf"}, "--factor"},
		{[]string{"--factor", "-1"}, "--factor"},
		{[]string{"--due-flush", "-1s"}, "--due-flush"},
		{[]string{"--min-delay", "-1s"}, "--min-delay"},
		{[]string{"--max-delay", "-1s"}, "--max-delay"},
		{[]string{"--max-crawl-delay", "-1s"}, "--max-crawl-delay"},
		{[]string{"--failure-backoff", "-1s"}, "--failure-backoff"},
		{[]string{"--max-failure-backoff", "-1s"}, "--max-failure-backoff"},
		{[]string{"--fetch-timeout", "-1s"}, "--fetch-timeout"},
		{[]string{"--max-url-length", "-1"}, "--max-url-length"},
		{[]string{"--max-url-length", "0"}, "--max-url-length"},
		{[]string{"--max-repeated-segments", "-2"}, "--max-repeated-segments"},
		{[]string{"--max-depth", "-1"}, "--max-depth"},
		{[]string{"--workers", "0"}, "--workers"},
		{[]string{"--workers", "-3"}, "--workers"},
		{[]string{"--workers", "100000"}, "--workers"},
		{[]string{"--workers", "4097"}, "--workers"},
		{[]string{"--suffix", ""}, "suffix"},
		{[]string{"--suffix", "a.test,,b.test"}, "suffix"},
		{[]string{"--scope", "suffixes", "--suffix", " "}, "suffix"},
		{[]string{"--allow", ""}, "allow"},
		{[]string{"--deny", ","}, "deny"},
		{[]string{"--id", "n\x1b[31m0"}, "ID"},
		{[]string{"--user-agent", "bot\x1b[2J"}, "UserAgent"},
		{[]string{"--proxy", "proxy.example:3128"}, "--proxy"},
		{[]string{"--proxy", "ftp://proxy.example"}, "--proxy"},
		{[]string{"--nofollow", "sometimes"}, "--nofollow"},
		{[]string{"--nofollow", ""}, "--nofollow"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		nf := Add(fs)
		err := fs.Parse(append([]string{"--data", t.TempDir()}, tc.args...))
		if err == nil {
			_, err = nf.Options(nil)
			if err != nil && !errors.Is(err, crawl.ErrInvalidOptions) {
				t.Errorf("%q: %v does not wrap crawl.ErrInvalidOptions", tc.args, err)
			}
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
	// The bounds themselves are accepted.
	for _, args := range [][]string{{"--workers", "1"}, {"--workers", "4096"}, {"--max-url-length", "1"}, {"--factor", "0.5"}, {"--min-delay", "0"}} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		nf := Add(fs)
		if err := fs.Parse(append([]string{"--data", t.TempDir()}, args...)); err != nil {
			t.Fatal(err)
		}
		if _, err := nf.Options(nil); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}

// --proxy: env by default (HTTPS_PROXY honoured), none, or a URL.
func TestProxyFlag(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://env-proxy.example:3128")
	target, _ := url.Parse("https://site.example/")
	for _, tc := range []struct {
		args []string
		want string // proxy host for target, "" direct
	}{
		{nil, "env-proxy.example:3128"},
		{[]string{"--proxy", "env"}, "env-proxy.example:3128"},
		{[]string{"--proxy", "none"}, ""},
		{[]string{"--proxy", "http://127.0.0.1:8888"}, "127.0.0.1:8888"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		nf := Add(fs)
		if err := fs.Parse(append([]string{"--data", t.TempDir()}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		o, err := nf.Options(nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		got := ""
		if o.Fetcher.Proxy != nil {
			p, err := o.Fetcher.Proxy(target)
			if err != nil {
				t.Fatal(err)
			}
			if p != nil {
				got = p.Host
			}
		}
		if got != tc.want {
			t.Errorf("%q: proxy %q, want %q", tc.args, got, tc.want)
		}
	}
}

// --nofollow reaches Options.NoFollow (obey by default).
func TestNoFollowFlag(t *testing.T) {
	for args, want := range map[string]string{"": crawl.NoFollowObey, "obey": crawl.NoFollowObey, "ignore": crawl.NoFollowIgnore} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		nf := Add(fs)
		a := []string{"--data", t.TempDir()}
		if args != "" {
			a = append(a, "--nofollow", args)
		}
		if err := fs.Parse(a); err != nil {
			t.Fatal(err)
		}
		o, err := nf.Options(nil)
		if err != nil || o.NoFollow != want {
			t.Errorf("--nofollow %q: NoFollow %q, %v; want %q", args, o.NoFollow, err, want)
		}
	}
}
