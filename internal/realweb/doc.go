// Package realweb serves trees of static sites with real web servers for
// tests and benchmarks, and computes, independently of the crawler, the set
// of URLs a crawl of such a tree must fetch.
//
// Nginx runs Debian's /usr/sbin/nginx (nginx-light) as a foreground process
// under a private prefix directory: one server block per host name (one
// directory per host under the root), plain HTTP and TLS with HTTP/2 offered
// by ALPN, each on 127.0.0.1 and on [::1], with a certificate from a CA it
// makes (RootCAs trusts it), and an access log the caller can read back
// (Requests) to see what the server really answered, and over which protocol.
//
// Reachable is the reference crawl: breadth-first over the links of the
// HTML files on disk with net/url and x/net/html only, modelling the corner
// cases of the server in front (simweb's directory mode or nginx).
package realweb
