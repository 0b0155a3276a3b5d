package simweb

import (
	"bytes"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	whatwg "github.com/nlnwa/whatwg-url/url"

	"github.com/sextant-crawler/sextant/internal/fixture"
)

const wikiHost = fixture.WikiHost

// sitesRoot unpacks the wiki mirror (testdata/sites) for the test: the
// directory holds wikiHost/.
func sitesRoot(t *testing.T) string { return fixture.Sites(t) }

// expect is what directory mode must answer for a URL, computed from the
// disk alone.
type expect struct {
	status int
	file   string
}

func expectFor(root string, u *whatwg.Url) expect {
	p, err := url.PathUnescape(u.Pathname())
	if err != nil {
		return expect{status: 404}
	}
	name := filepath.Join(root, wikiHost, filepath.FromSlash(path.Clean("/"+p)))
	st, err := os.Stat(name)
	if err == nil && st.IsDir() {
		if !strings.HasSuffix(p, "/") {
			return expect{status: 301}
		}
		for _, idx := range []string{"index.html", "index.xhtml", "index.htm"} {
			if st, err := os.Stat(filepath.Join(name, idx)); err == nil && !st.IsDir() {
				return expect{200, filepath.Join(name, idx)}
			}
		}
		return expect{status: 404}
	}
	if err != nil {
		return expect{status: 404}
	}
	return expect{200, name}
}

// The link closure of the wiki's home page, computed from the files, is
// served exactly: same bytes, right content types, 404 for dangling links.
func TestDirModeWikiClosure(t *testing.T) {
	root := sitesRoot(t)
	srv, err := StartDir(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if hs := srv.DirHosts(); len(hs) != 1 || hs[0] != wikiHost {
		t.Fatalf("hosts %v", hs)
	}
	want := map[string]expect{}
	queue := []string{"http://" + wikiHost + "/"}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if _, ok := want[s]; ok {
			continue
		}
		u, _ := whatwg.Parse(s)
		e := expectFor(root, u)
		want[s] = e
		if e.status != 200 || !strings.HasSuffix(e.file, ".html") {
			continue
		}
		data, err := os.ReadFile(e.file)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range extractLinks(s, data) {
			if strings.HasPrefix(l, "http://"+wikiHost+"/") {
				queue = append(queue, l)
			}
		}
	}
	c := srv.Client()
	n200, n404 := 0, 0
	for s, e := range want {
		resp, err := c.Get(s)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != e.status {
			t.Errorf("%s: status %d, want %d", s, resp.StatusCode, e.status)
			continue
		}
		if e.status != 200 {
			n404++
			continue
		}
		n200++
		file, _ := os.ReadFile(e.file)
		if !bytes.Equal(body, file) {
			t.Errorf("%s: body differs from %s", s, e.file)
		}
		if ct := resp.Header.Get("Content-Type"); ct != ContentTypeOf(e.file) {
			t.Errorf("%s: Content-Type %q", s, ct)
		}
	}
	t.Logf("closure of the home page: %d files served, %d dangling links", n200, n404)
	if n200 < 100 {
		t.Errorf("closure only %d files", n200)
	}
}

func TestDirModeBasics(t *testing.T) {
	root := sitesRoot(t)
	srv, err := StartDir(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := srv.Client()
	for _, tc := range []struct {
		path, ct string
		status   int
	}{
		{"/", "text/html; charset=utf-8", 200},
		{"/style.css", "text/css; charset=utf-8", 200},
		{"/test.txt", "text/plain; charset=utf-8", 200},
		{"/ConTeXt_and_Lua_programming/ConTeXt_Development/Read_Me/", "text/html; charset=utf-8", 200},
		{"/Input_and_compilation/Sample_documents/Catalogue_raisonn%C3%A9.html", "text/html; charset=utf-8", 200},
		{"/no/such/page.html", "", 404},
		{"/Color", "", 301},
		{"/../../etc/passwd", "", 404},
	} {
		resp, err := c.Get("http://" + wikiHost + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || (tc.ct != "" && resp.Header.Get("Content-Type") != tc.ct) {
			t.Errorf("%s: %d %q, want %d %q", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), tc.status, tc.ct)
		}
	}
	if _, err := c.Get("http://h00000.sim.test/"); err == nil {
		t.Error("directory mode dialled a host it has no directory for")
	}
	for ext, want := range map[string]string{"a.xhtml": "application/xhtml+xml", "b.HTML": "text/html; charset=utf-8",
		"c.bin": "application/octet-stream"} {
		if got := ContentTypeOf(ext); got != want {
			t.Errorf("ContentTypeOf(%q) = %q", ext, got)
		}
	}
	// The server logs a request after its handler returns, which may be
	// after the client has read the whole response: wait for the last one.
	log := srv.Log()[wikiHost]
	for deadline := time.Now().Add(5 * time.Second); len(log) < 8 && time.Now().Before(deadline); log = srv.Log()[wikiHost] {
		time.Sleep(time.Millisecond)
	}
	if len(log) != 8 {
		t.Errorf("log has %d entries, want 8", len(log))
	}
}
