package fetcher

import (
	"fmt"
	"net/http"
	"testing"
)

func TestRobotsTokenOf(t *testing.T) {
	for ua, want := range map[string]string{
		DefaultUserAgent:                       "sextant",
		"AcmeBot/2.1 (+https://acme.test/bot)": "acmebot",
		"  my_crawler-x (contact: a@b.test)":   "my_crawler-x",
		"Mozilla/5.0 (compatible; FooBot/1.0)": "mozilla",
		"":                                     DefaultRobotsToken,
		"123bot/1":                             DefaultRobotsToken,
		"Bot\u00e9/1":                          "bot",
		"UPPER":                                "upper",
	} {
		if got := RobotsTokenOf(ua); got != want {
			t.Errorf("RobotsTokenOf(%q) = %q, want %q", ua, got, want)
		}
	}
}

// A crawler renamed by UserAgent obeys the group written for its own name,
// not Sextant's (the token used to stay "sextant" whatever the User-Agent).
func TestRobotsTokenFollowsUserAgent(t *testing.T) {
	rw := newRobotsWeb(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: acmebot\nDisallow: /acme\n\nUser-agent: sextant\nDisallow: /sextant\n")
	}, func(o *Options) { o.UserAgent = "AcmeBot/2.1 (+https://acme.test/bot)" })
	r, _ := rw.robots(t, "a.sim.test")
	if r.Allowed("http://a.sim.test/acme/page") || !r.Allowed("http://a.sim.test/sextant/page") {
		t.Fatalf("AcmeBot got Sextant's rules: /acme allowed %v, /sextant allowed %v",
			r.Allowed("http://a.sim.test/acme/page"), r.Allowed("http://a.sim.test/sextant/page"))
	}
}
