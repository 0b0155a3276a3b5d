package fetcher

import (
	"context"
	"net/http"
	"testing"
)

// TestConditionalRequestHeader: WithRequestHeader's fields are sent (a 304
// comes back without a body), the fetcher's own fields are not replaced,
// and a fetch without it sends none of them.
func TestConditionalRequestHeader(t *testing.T) {
	var got []http.Header
	s := serve(t, func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Clone())
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		w.Write([]byte("<html>hello</html>"))
	})
	f := newTest(t, nil)
	r1, err := f.Fetch(context.Background(), s.URL+"/p")
	if err != nil {
		t.Fatal(err)
	}
	r1.Close()
	hdr := http.Header{"If-None-Match": {r1.Header.Get("ETag")}, "user-agent": {"evil"}}
	r2, err := f.Fetch(WithRequestHeader(context.Background(), hdr), s.URL+"/p")
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if r1.Status != 200 || r2.Status != http.StatusNotModified || r2.Bytes != 0 {
		t.Fatalf("statuses %d, %d (body %d bytes); want 200, 304 and no body", r1.Status, r2.Status, r2.Bytes)
	}
	if got[0].Get("If-None-Match") != "" || got[1].Get("If-None-Match") != `"v1"` {
		t.Fatalf("If-None-Match sent: %q then %q", got[0].Get("If-None-Match"), got[1].Get("If-None-Match"))
	}
	if ua := got[1].Get("User-Agent"); ua == "evil" || ua == "" {
		t.Fatalf("User-Agent %q: the fetcher's own must stay", ua)
	}
	if r2.RequestHeader.Get("If-None-Match") != `"v1"` {
		t.Fatal("Response.RequestHeader lacks the conditional field (the WARC request record needs it)")
	}
}
