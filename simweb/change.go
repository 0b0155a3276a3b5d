package simweb

import (
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Changing pages (Options.ChangeEvery), for continuous-crawling tests: a
// changing page's body ends with a version comment that changes every
// ChangeEvery since the server started; every served HTML page carries an
// ETag (a hash of its body) and a Last-Modified (when its version began),
// and a conditional request for the version being served is answered 304
// Not Modified. Links never change, so the oracle still holds. With
// ChangeEvery 0 none of this happens: the web is byte-identical to Respond.

// DefaultChangeFraction is Options.ChangeFraction's default.
const DefaultChangeFraction = 0.5

// Changing reports whether the page at host and pathAndQuery changes
// (Options.ChangeEvery set, and the page among Options.ChangeFraction
// chosen by a hash of its host and path).
func (s *Server) Changing(host, pathAndQuery string) bool {
	if s.opts.ChangeEvery <= 0 {
		return false
	}
	h := fnv.New64a()
	h.Write([]byte(host))
	h.Write([]byte{0})
	h.Write([]byte(pathAndQuery))
	return float64(mix(h.Sum64())>>11)/(1<<53) < s.opts.ChangeFraction
}

// Version is the version a changing page is at now: the number of
// Options.ChangeEvery periods since the server started (0 without).
func (s *Server) Version() int64 {
	if s.opts.ChangeEvery <= 0 {
		return 0
	}
	return int64(s.now().Sub(s.born) / s.opts.ChangeEvery)
}

func (s *Server) now() time.Time {
	if s.opts.Now != nil {
		return s.opts.Now()
	}
	return time.Now()
}

// versioned applies ChangeEvery to a generated 200 HTML page: the version
// comment, ETag and Last-Modified; it answers a conditional request for
// the current version with 304 itself (done true).
func (s *Server) versioned(w http.ResponseWriter, r *http.Request, g *gen, host, pq string) (status int, done bool) {
	if s.opts.ChangeEvery <= 0 || g.status != http.StatusOK || g.encoding != "" || g.tail != tailNone ||
		!strings.HasPrefix(g.ctype, "text/html") {
		return 0, false
	}
	lastMod := s.born
	if s.Changing(host, pq) {
		v := s.Version()
		g.buf = append(g.buf, "<!-- version "+strconv.FormatInt(v, 10)+" -->\n"...)
		lastMod = s.born.Add(time.Duration(v) * s.opts.ChangeEvery)
	}
	h := fnv.New64a()
	h.Write(g.buf)
	etag := `"` + strconv.FormatUint(h.Sum64(), 16) + `"`
	lm := lastMod.UTC().Format(http.TimeFormat)
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", lm)
	notModified := false
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		// RFC 9110 §13.1.3: If-Modified-Since is ignored when If-None-Match is sent.
		for _, t := range strings.Split(inm, ",") {
			if t = strings.TrimSpace(t); t == etag || t == "*" {
				notModified = true
			}
		}
	} else if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil {
		notModified = !lastMod.Truncate(time.Second).After(ims)
	}
	if !notModified {
		return 0, false
	}
	w.WriteHeader(http.StatusNotModified)
	return http.StatusNotModified, true
}
