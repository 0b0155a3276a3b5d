package fetcher

import (
	"errors"
	"sync/atomic"
	"time"
)

type counter struct{ atomic.Int64 }

func (c *counter) add(n int64) { c.Add(n) }

// Stats are cumulative counters since New. Fetches are counted by outcome
// class: the status class of a response, or the error class of a failure.
type Stats struct {
	Fetches     int64 // every Fetch call that reached the network (not bad URLs)
	Status1xx   int64 // a final 1xx (101 Switching Protocols: net/http reads the others itself)
	Status2xx   int64
	Status3xx   int64
	Status4xx   int64
	Status5xx   int64
	StatusOther int64 // codes outside 100–599
	Truncated   int64 // responses cut at BodyCap or DecompressCap

	ErrTimeout  int64
	ErrConnect  int64
	ErrDNS      int64
	ErrPrivate  int64
	ErrEncoding int64
	// ErrTooManyEncodings counts the ErrEncoding failures (robots.txt
	// fetches included) of responses stacking more than MaxContentCodings.
	ErrTooManyEncodings int64
	ErrCanceled         int64
	ErrTLS              int64 // TLS failures other than timeouts (their kinds below)
	ErrOther            int64
	ErrBadURL           int64

	// TLS and DNS failures by kind (Kind), robots.txt fetches included:
	// the cause behind ErrTLS, ErrDNS and some ErrTimeout.
	TLSUnknownAuthority int64 // ErrCertUnknownAuthority
	TLSHostname         int64 // ErrCertHostname
	TLSExpired          int64 // ErrCertExpired
	TLSBadCert          int64 // ErrCertInvalid
	TLSHandshakeFailed  int64 // ErrTLSHandshake
	TLSNotTLS           int64 // ErrNotTLS
	TLSTimeout          int64 // ErrTLSTimeout
	DNSNotFound         int64 // ErrDNSNotFound
	DNSTimeout          int64 // ErrDNSTimeout
	DNSOther            int64 // ErrDNSOther

	// TLSHandshakes counts completed TLS handshakes (new connections);
	// TLSResumed those of them that resumed a session (no certificate
	// exchange: a cheaper handshake).
	TLSHandshakes int64
	TLSResumed    int64
	// HTTP2 counts responses received over HTTP/2 (robots.txt included).
	HTTP2 int64
	// ConnsOpen is the number of connections open now (a gauge);
	// IdleSweeps counts the times more than MaxIdleConns of them were idle
	// and the idle ones were closed (HTTP/2 connections escape the
	// transport's own bound).
	ConnsOpen  int64
	IdleSweeps int64

	WireBytes int64 // body bytes read from the network (compressed)
	BodyBytes int64 // body bytes stored (decoded)
	Spilled   int64 // bodies that spilled to a temporary file

	DNSHits   int64
	DNSMisses int64

	RobotsFetches     int64 // HTTP requests for robots.txt, redirect hops included
	RobotsCacheHits   int64
	RobotsCacheMisses int64
	RobotsEvictions   int64
	RobotsRules       int64 // fetches that yielded rules (2xx)
	RobotsAllowAll    int64 // 4xx, too many redirects, refused redirect
	RobotsRefusedHops int64 // redirects to another host refused (no RobotsHostGate, RobotsCrossHostRedirects unset)
	RobotsCrossHops   int64 // requests to another host for a robots.txt redirect (RobotsHostGate or RobotsCrossHostRedirects)
	RobotsDeferred    int64 // robots.txt redirects waiting for the other host's politeness slot (RobotsHostGate refused it for now)
	RobotsUnreachable int64 // 5xx or network failure (disallow all, retry later)

	// Latency histograms of page fetches (robots.txt excluded): the whole
	// fetch, header and body, of every fetch that reached the network
	// except those the caller cancelled; the time to the response's first
	// byte; each DNS query the fetcher made (cache misses; robots.txt
	// included); each completed TLS handshake (robots.txt included).
	FetchSeconds, TTFBSeconds, DNSSeconds, TLSSeconds Histogram
}

type stats struct {
	fetches, s2xx, s3xx, s4xx, s5xx, sOther, truncated       counter
	eTimeout, eConnect, eDNS, ePrivate, eEncoding, eCanceled counter
	eOther, eBadURL, tooManyEncodings, eTLS                  counter
	kinds                                                    [len(kindList)]counter
	tlsHandshakes, tlsResumed, http2, idleSweeps             counter
	wireBytes, bodyBytes, spilled                            counter
	robotsFetches, robotsHits, robotsMisses, robotsEvictions counter
	robotsRules, robotsAllowAll, robotsUnreachable           counter
	robotsRefused, robotsCrossHops, robotsDeferred           counter
	s1xx                                                     counter
	lat                                                      latencies
}

// observe records a page fetch's latencies: every fetch that reached the
// network, failed ones included (a timeout is a slow fetch), except those
// cancelled by the caller (the crawl stopping, not the server).
func (s *stats) observe(resp *Response, err error, took time.Duration) {
	if err != nil {
		if !errors.Is(err, ErrCanceled) {
			s.lat.fetch.Observe(took)
		}
		return
	}
	s.lat.fetch.Observe(took)
	if resp.TTFB > 0 {
		s.lat.ttfb.Observe(resp.TTFB)
	}
}

func (s *stats) countStatus(code int) {
	switch {
	case code >= 100 && code < 200:
		s.s1xx.add(1)
	case code >= 200 && code < 300:
		s.s2xx.add(1)
	case code >= 300 && code < 400:
		s.s3xx.add(1)
	case code >= 400 && code < 500:
		s.s4xx.add(1)
	case code >= 500 && code < 600:
		s.s5xx.add(1)
	default:
		s.sOther.add(1)
	}
}

func (s *stats) countErr(err error) {
	ce, ok := err.(*classError)
	if !ok {
		s.eOther.add(1)
		return
	}
	switch ce.class {
	case ErrTimeout:
		s.eTimeout.add(1)
	case ErrConnect:
		s.eConnect.add(1)
	case ErrDNS:
		s.eDNS.add(1)
	case ErrPrivateAddress:
		s.ePrivate.add(1)
	case ErrEncoding:
		s.eEncoding.add(1)
	case ErrCanceled:
		s.eCanceled.add(1)
	case ErrTLS:
		s.eTLS.add(1)
	case ErrBadURL:
		s.eBadURL.add(1)
	default:
		s.eOther.add(1)
	}
}

// kindList orders the kinds for stats.kinds.
var kindList = [...]error{ErrCertUnknownAuthority, ErrCertHostname, ErrCertExpired, ErrCertInvalid,
	ErrTLSHandshake, ErrNotTLS, ErrTLSTimeout, ErrDNSNotFound, ErrDNSTimeout, ErrDNSOther}

// countKind counts err's TLS or DNS kind, if it has one.
func (s *stats) countKind(err error) {
	k := Kind(err)
	for i, e := range kindList {
		if e == k {
			s.kinds[i].add(1)
			return
		}
	}
}

// Stats returns a snapshot of the counters. Safe for concurrent use.
func (f *Fetcher) Stats() Stats {
	s := &f.stats
	return Stats{
		Fetches: s.fetches.Load(), Status1xx: s.s1xx.Load(), Status2xx: s.s2xx.Load(), Status3xx: s.s3xx.Load(),
		Status4xx: s.s4xx.Load(), Status5xx: s.s5xx.Load(), StatusOther: s.sOther.Load(),
		Truncated:  s.truncated.Load(),
		ErrTimeout: s.eTimeout.Load(), ErrConnect: s.eConnect.Load(), ErrDNS: s.eDNS.Load(),
		ErrPrivate: s.ePrivate.Load(), ErrEncoding: s.eEncoding.Load(), ErrTooManyEncodings: s.tooManyEncodings.Load(),
		ErrCanceled: s.eCanceled.Load(), ErrTLS: s.eTLS.Load(), ErrOther: s.eOther.Load(), ErrBadURL: s.eBadURL.Load(),
		TLSUnknownAuthority: s.kinds[0].Load(), TLSHostname: s.kinds[1].Load(), TLSExpired: s.kinds[2].Load(),
		TLSBadCert: s.kinds[3].Load(), TLSHandshakeFailed: s.kinds[4].Load(), TLSNotTLS: s.kinds[5].Load(),
		TLSTimeout: s.kinds[6].Load(), DNSNotFound: s.kinds[7].Load(), DNSTimeout: s.kinds[8].Load(),
		DNSOther:      s.kinds[9].Load(),
		TLSHandshakes: s.tlsHandshakes.Load(), TLSResumed: s.tlsResumed.Load(), HTTP2: s.http2.Load(),
		ConnsOpen: f.dialer.open.Load(), IdleSweeps: s.idleSweeps.Load(),
		WireBytes: s.wireBytes.Load(), BodyBytes: s.bodyBytes.Load(), Spilled: s.spilled.Load(),
		DNSHits: f.dialer.dns.hits.Load(), DNSMisses: f.dialer.dns.misses.Load(),
		RobotsFetches: s.robotsFetches.Load(), RobotsCacheHits: s.robotsHits.Load(),
		RobotsCacheMisses: s.robotsMisses.Load(), RobotsEvictions: s.robotsEvictions.Load(),
		RobotsRules: s.robotsRules.Load(), RobotsAllowAll: s.robotsAllowAll.Load(),
		RobotsUnreachable: s.robotsUnreachable.Load(), RobotsRefusedHops: s.robotsRefused.Load(),
		RobotsCrossHops: s.robotsCrossHops.Load(), RobotsDeferred: s.robotsDeferred.Load(),
		FetchSeconds: s.lat.fetch.Snapshot(), TTFBSeconds: s.lat.ttfb.Snapshot(),
		DNSSeconds: s.lat.dns.Snapshot(), TLSSeconds: s.lat.tls.Snapshot(),
	}
}
