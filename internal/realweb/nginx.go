package realweb

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// NginxBinary is where Debian's nginx-light installs nginx.
const NginxBinary = "/usr/sbin/nginx"

var (
	// ErrNoNginx: the nginx binary is missing.
	ErrNoNginx = errors.New("realweb: nginx not found: install Debian's nginx-light (apt-get install nginx-light)")
	// ErrBadSite: a host name or root path nginx's configuration cannot
	// carry safely.
	ErrBadSite = errors.New("realweb: unusable site")
	// ErrNginxStart: nginx exited or did not listen.
	ErrNginxStart = errors.New("realweb: nginx did not start")
)

// NginxOptions configures StartNginx.
type NginxOptions struct {
	// Root holds one directory per host name (required).
	Root string
	// Hosts are the host names served; default every directory in Root.
	Hosts []string
	// Dir is nginx's prefix (configuration, logs, pid, temp files, the
	// certificate); default a new temporary directory removed by Close.
	Dir string
	// Binary is the nginx executable; default NginxBinary.
	Binary string
	// NoHTTP2 leaves HTTP/2 off the TLS listeners (ALPN offers only
	// http/1.1).
	NoHTTP2 bool
}

// Nginx is a running nginx serving a tree of static sites.
type Nginx struct {
	// HTTP and HTTPS are the plain and TLS listeners on 127.0.0.1, HTTP6
	// and HTTPS6 the same on [::1]; every host is served on each.
	HTTP, HTTPS, HTTP6, HTTPS6 netip.AddrPort
	// CAPEM is the certificate of the CA that signed the server's
	// certificate (for every host name); RootCAs holds it.
	CAPEM   []byte
	RootCAs *x509.CertPool
	// Hosts are the host names served.
	Hosts []string

	dir, ownDir string
	cmd         *exec.Cmd
	done        chan error // the process's exit, once
	stderr      *os.File
}

// hostRE is what a host name may be to go into nginx's configuration.
var hostRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)

// StartNginx starts nginx on free loopback ports and returns once every
// listener accepts connections. Close stops it.
func StartNginx(o NginxOptions) (*Nginx, error) {
	if o.Binary == "" {
		o.Binary = NginxBinary
	}
	if _, err := os.Stat(o.Binary); err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNoNginx, err)
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, err
	}
	hosts := slices.Clone(o.Hosts)
	if len(hosts) == 0 {
		es, err := os.ReadDir(root)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if e.IsDir() {
				hosts = append(hosts, e.Name())
			}
		}
	}
	sort.Strings(hosts)
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%w: no host directory in %s", ErrBadSite, root)
	}
	for _, h := range hosts {
		if !hostRE.MatchString(h) {
			return nil, fmt.Errorf("%w: host name %q", ErrBadSite, h)
		}
	}
	n := &Nginx{Hosts: hosts, dir: o.Dir}
	if n.dir == "" {
		if n.dir, err = os.MkdirTemp("", "sextant-nginx-"); err != nil {
			return nil, err
		}
		n.ownDir = n.dir
	}
	if n.dir, err = filepath.Abs(n.dir); err != nil {
		return nil, err
	}
	// Paths go into the configuration quoted: refuse what would need
	// escaping there ($ starts a variable in root).
	for _, p := range []string{root, n.dir} {
		if strings.ContainsAny(p, "\"\\$;{}\n\r") {
			n.removeDir()
			return nil, fmt.Errorf("%w: path %q", ErrBadSite, p)
		}
	}
	if err := n.writeCert(); err != nil {
		n.removeDir()
		return nil, err
	}
	// A free port found by listening and closing may be taken again
	// before nginx binds it: retry with new ports.
	for try := 0; ; try++ {
		err = n.start(root, o)
		if err == nil {
			return n, nil
		}
		if try == 2 || !strings.Contains(err.Error(), "Address already in use") {
			n.removeDir()
			return nil, err
		}
	}
}

// StartNginxT is StartNginx for a test: it fails tb (never skips) if nginx
// is missing or does not start, puts nginx's prefix in tb.TempDir() and
// stops it when the test ends.
func StartNginxT(tb testing.TB, o NginxOptions) *Nginx {
	tb.Helper()
	if o.Dir == "" {
		o.Dir = tb.TempDir()
	}
	n, err := StartNginx(o)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() {
		if err := n.Close(); err != nil {
			tb.Errorf("nginx: %v", err)
		}
	})
	return n
}

func (n *Nginx) writeCert() error {
	ca, err := tlsutil.NewCA("sextant realweb test CA", 24*time.Hour)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := ca.Issue(n.Hosts[0], n.Hosts[1:], 24*time.Hour)
	if err != nil {
		return err
	}
	n.CAPEM = ca.CertPEM
	n.RootCAs = x509.NewCertPool()
	n.RootCAs.AddCert(ca.Cert)
	for name, b := range map[string][]byte{"ca.pem": ca.CertPEM, "cert.pem": certPEM, "key.pem": keyPEM} {
		if err := os.WriteFile(filepath.Join(n.dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// freePort returns a port of addr (an IP) that was free a moment ago.
func freePort(ip string) (netip.AddrPort, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("realweb: listen on %s: %w", ip, err)
	}
	defer l.Close()
	return netip.MustParseAddrPort(l.Addr().String()), nil
}

func (n *Nginx) start(root string, o NginxOptions) error {
	var err error
	for _, p := range []struct {
		ap *netip.AddrPort
		ip string
	}{{&n.HTTP, "127.0.0.1"}, {&n.HTTPS, "127.0.0.1"}, {&n.HTTP6, "::1"}, {&n.HTTPS6, "::1"}} {
		if *p.ap, err = freePort(p.ip); err != nil {
			return err
		}
	}
	conf := filepath.Join(n.dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(n.config(root, !o.NoHTTP2)), 0o644); err != nil {
		return err
	}
	for _, d := range []string{"tmp", "logs"} {
		if err := os.MkdirAll(filepath.Join(n.dir, d), 0o755); err != nil {
			return err
		}
	}
	os.Remove(filepath.Join(n.dir, "logs", "access.log"))
	stderr, err := os.Create(filepath.Join(n.dir, "logs", "stderr.log"))
	if err != nil {
		return err
	}
	n.stderr = stderr
	// -e: nginx opens its compiled-in error log before reading the
	// configuration; keep even that in the prefix.
	n.cmd = exec.Command(o.Binary, "-p", n.dir+"/", "-c", conf, "-e", filepath.Join(n.dir, "logs", "error.log"), "-g", "daemon off;")
	n.cmd.Stdout, n.cmd.Stderr = stderr, stderr
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // no nginx outlives a killed test
	if err := n.cmd.Start(); err != nil {
		stderr.Close()
		return fmt.Errorf("%w: %v", ErrNginxStart, err)
	}
	n.done = make(chan error, 1)
	go func() { n.done <- n.cmd.Wait() }() // owned by Close, which waits for it
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ap := range []netip.AddrPort{n.HTTP, n.HTTPS, n.HTTP6, n.HTTPS6} {
		for {
			c, err := net.DialTimeout("tcp", ap.String(), time.Second)
			if err == nil {
				c.Close()
				break
			}
			select {
			case werr := <-n.done:
				n.done <- werr
				n.stderr.Close()
				return fmt.Errorf("%w: exited (%v): %s", ErrNginxStart, werr, n.logTail())
			case <-ctx.Done():
				n.stop()
				return fmt.Errorf("%w: %s not listening after 10 s: %s", ErrNginxStart, ap, n.logTail())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return nil
}

// logTail is the end of nginx's error output, for an error message.
func (n *Nginx) logTail() string {
	var b []byte
	for _, f := range []string{"stderr.log", "error.log"} {
		x, _ := os.ReadFile(filepath.Join(n.dir, "logs", f))
		b = append(b, x...)
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// config is nginx.conf: one server block per host on the four listeners,
// and a default server answering 421 to any other host.
func (n *Nginx) config(root string, http2 bool) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	if os.Geteuid() == 0 {
		// Workers would drop to "nobody", who cannot read a test's
		// 0700 temporary directories.
		p("user root;")
	}
	p("worker_processes 1;")
	p("pid %q;", filepath.Join(n.dir, "nginx.pid"))
	p("error_log %q warn;", filepath.Join(n.dir, "logs", "error.log"))
	p("events { worker_connections 1024; }")
	p("http {")
	// The same Content-Types as simweb's directory mode, so that the
	// reference (Reachable) reads the same files for links.
	p("  types {")
	for _, ext := range []string{".html", ".htm", ".xhtml", ".xml", ".css", ".js", ".json", ".txt", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".ico", ".pdf"} {
		ct, _, _ := strings.Cut(contentType(ext), ";")
		p("    %s %s;", ct, ext[1:])
	}
	p("  }")
	p("  default_type application/octet-stream;")
	p("  charset utf-8;")
	p(`  log_format sextant '$server_protocol $scheme $host $status $connection $connection_requests $request_method $request_uri';`)
	p("  access_log %q sextant;", filepath.Join(n.dir, "logs", "access.log"))
	for _, t := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		p("  %s_temp_path %q;", t, filepath.Join(n.dir, "tmp", t))
	}
	p("  sendfile on; server_tokens off; absolute_redirect off;")
	p("  keepalive_requests 1000000; keepalive_timeout 75s;")
	p("  ssl_certificate %q; ssl_certificate_key %q;", filepath.Join(n.dir, "cert.pem"), filepath.Join(n.dir, "key.pem"))
	p("  ssl_protocols TLSv1.2 TLSv1.3; ssl_session_cache shared:sextant:1m;")
	h2 := ""
	if http2 {
		h2 = " http2"
	}
	listen := func(extra string) {
		p("    listen %s%s;", n.HTTP, extra)
		p("    listen %s%s;", n.HTTP6, extra)
		p("    listen %s ssl%s%s;", n.HTTPS, h2, extra)
		p("    listen %s ssl%s%s;", n.HTTPS6, h2, extra)
	}
	p("  server {")
	listen(" default_server")
	p("    server_name _;")
	p("    return 421;")
	p("  }")
	for _, h := range n.Hosts {
		p("  server {")
		listen("")
		p("    server_name %s;", h)
		p("    root %q;", filepath.Join(root, h))
		p("    index index.html index.xhtml index.htm;")
		p("  }")
	}
	p("}")
	return b.String()
}

// Close stops nginx (SIGTERM, then SIGKILL after 5 s) and removes the
// prefix directory if StartNginx made it.
func (n *Nginx) Close() error {
	err := n.stop()
	n.removeDir()
	return err
}

func (n *Nginx) stop() error {
	if n.cmd == nil || n.cmd.Process == nil {
		return nil
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-n.done:
	case <-time.After(5 * time.Second):
		n.cmd.Process.Kill()
		err = <-n.done
	}
	n.done <- err // a second Close sees the same exit
	n.stderr.Close()
	var ee *exec.ExitError
	if errors.As(err, &ee) && !ee.Exited() {
		return nil // ended by our signal
	}
	return err
}

func (n *Nginx) removeDir() {
	if n.ownDir != "" {
		os.RemoveAll(n.ownDir)
	}
}

// Resolve maps every host to addr ("ip:port"), in the form of
// fetcher.Options.Resolve.
func (n *Nginx) Resolve(addr netip.AddrPort) map[string]string {
	m := map[string]string{}
	for _, h := range n.Hosts {
		m[h] = addr.String()
	}
	return m
}

// Request is one line of nginx's access log.
type Request struct {
	Protocol string // "HTTP/1.1", "HTTP/2.0"
	Scheme   string // "http", "https"
	Host     string
	Status   int
	// Conn is nginx's connection serial number; ConnRequests the number
	// of this request on its connection (1 = a new connection).
	Conn, ConnRequests int64
	Method, URI        string
}

// Requests reads the access log: every request nginx answered so far.
func (n *Nginx) Requests() ([]Request, error) {
	f, err := os.Open(filepath.Join(n.dir, "logs", "access.log"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rs []Request
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		r, err := ParseAccessLine(sc.Text())
		if err != nil {
			return rs, fmt.Errorf("access.log:%d: %w", line, err)
		}
		rs = append(rs, r)
	}
	return rs, sc.Err()
}

// Settled reads the access log once it holds at least min requests and no
// line was added for quiet, or after 5 s: nginx writes a request's line
// after sending its response, so a client can have the response (and a
// crawl can have ended) before the line is there.
func (n *Nginx) Settled(min int, quiet time.Duration) ([]Request, error) {
	deadline := time.Now().Add(5 * time.Second)
	rs, err := n.Requests()
	for last := time.Now(); time.Now().Before(deadline); {
		time.Sleep(quiet / 4)
		again, aerr := n.Requests()
		if len(again) != len(rs) {
			rs, err, last = again, aerr, time.Now()
			continue
		}
		rs, err = again, aerr
		if len(rs) >= min && time.Since(last) >= quiet {
			break
		}
	}
	return rs, err
}

// ErrBadLogLine: an access log line not in the sextant log_format.
var ErrBadLogLine = errors.New("realweb: malformed access log line")

// ParseAccessLine parses a line of the sextant log_format.
func ParseAccessLine(s string) (Request, error) {
	f := strings.SplitN(s, " ", 8)
	if len(f) != 8 {
		return Request{}, fmt.Errorf("%w: %d fields in %q", ErrBadLogLine, len(f), s)
	}
	r := Request{Protocol: f[0], Scheme: f[1], Method: f[6]}
	var err error
	if r.Host, err = unescapeLog(f[2]); err != nil {
		return Request{}, err
	}
	if r.URI, err = unescapeLog(f[7]); err != nil {
		return Request{}, err
	}
	if r.Status, err = strconv.Atoi(f[3]); err != nil {
		return Request{}, fmt.Errorf("%w: status %q", ErrBadLogLine, f[3])
	}
	if r.Conn, err = strconv.ParseInt(f[4], 10, 64); err != nil {
		return Request{}, fmt.Errorf("%w: connection %q", ErrBadLogLine, f[4])
	}
	if r.ConnRequests, err = strconv.ParseInt(f[5], 10, 64); err != nil {
		return Request{}, fmt.Errorf("%w: connection requests %q", ErrBadLogLine, f[5])
	}
	return r, nil
}

// unescapeLog undoes nginx's access-log escaping: '"', '\\', control
// and non-ASCII bytes are written as \xHH.
func unescapeLog(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+4 > len(s) || s[i+1] != 'x' {
			return "", fmt.Errorf("%w: bad escape in %q", ErrBadLogLine, s)
		}
		v, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
		if err != nil {
			return "", fmt.Errorf("%w: bad escape in %q", ErrBadLogLine, s)
		}
		b.WriteByte(byte(v))
		i += 3
	}
	return b.String(), nil
}
