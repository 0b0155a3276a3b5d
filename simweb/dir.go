package simweb

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// dirSites serves ROOT/<host>/… .
type dirSites struct {
	root  string
	hosts map[string]bool
}

// StartDir serves a tree of static sites, one sub-directory of root per host
// name (ROOT/wiki.contextgarden.net/…): files with content types by
// extension (.html, .xhtml, .css, …), index.html/index.xhtml/index.htm for
// directories, 404 for anything missing. DialContext maps every host that
// has a directory.
func StartDir(root string, opts Options) (*Server, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("simweb: %w", err)
	}
	d := &dirSites{root: root, hosts: map[string]bool{}}
	for _, e := range ents {
		if e.IsDir() {
			d.hosts[strings.ToLower(e.Name())] = true
		}
	}
	if len(d.hosts) == 0 {
		return nil, fmt.Errorf("simweb: %s has no host directories", root)
	}
	return start(nil, d, opts)
}

func (d *dirSites) has(host string) bool { return d.hosts[host] }

// DirHosts lists the host names a directory tree serves.
func (s *Server) DirHosts() []string {
	if s.dir == nil {
		return nil
	}
	var hs []string
	for h := range s.dir.hosts {
		hs = append(hs, h)
	}
	sort.Strings(hs)
	return hs
}

var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8", ".htm": "text/html; charset=utf-8",
	".xhtml": "application/xhtml+xml", ".xml": "application/xml", ".css": "text/css; charset=utf-8",
	".js": "text/javascript; charset=utf-8", ".json": "application/json", ".txt": "text/plain; charset=utf-8",
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".svg": "image/svg+xml", ".webp": "image/webp", ".ico": "image/x-icon", ".pdf": "application/pdf",
}

// ContentTypeOf is the Content-Type directory mode sends for a file name.
func ContentTypeOf(name string) string {
	if ct, ok := contentTypes[strings.ToLower(path.Ext(name))]; ok {
		return ct
	}
	return "application/octet-stream"
}

var indexFiles = []string{"index.html", "index.xhtml", "index.htm"}

func (d *dirSites) serve(w http.ResponseWriter, r *http.Request, host string) int {
	if !d.hosts[host] {
		http.Error(w, "simweb: no such host", http.StatusMisdirectedRequest)
		return http.StatusMisdirectedRequest
	}
	p := path.Clean("/" + r.URL.Path)
	name := filepath.Join(d.root, host, filepath.FromSlash(p))
	st, err := os.Stat(name)
	if err == nil && st.IsDir() {
		if !strings.HasSuffix(r.URL.Path, "/") {
			w.Header().Set("Location", r.URL.EscapedPath()+"/")
			w.WriteHeader(http.StatusMovedPermanently)
			return http.StatusMovedPermanently
		}
		err = os.ErrNotExist
		for _, idx := range indexFiles {
			if st2, err2 := os.Stat(filepath.Join(name, idx)); err2 == nil && !st2.IsDir() {
				name, st, err = filepath.Join(name, idx), st2, nil
				break
			}
		}
	}
	if err != nil || !st.Mode().IsRegular() {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return http.StatusNotFound
	}
	f, err := os.Open(name)
	if err != nil {
		http.Error(w, "404 page not found", http.StatusNotFound)
		return http.StatusNotFound
	}
	defer f.Close()
	w.Header().Set("Content-Type", ContentTypeOf(name))
	w.Header().Set("Content-Length", itoa(int(st.Size())))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = io.Copy(w, f)
	}
	return http.StatusOK
}
