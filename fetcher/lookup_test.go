package fetcher

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
)

func TestLookupIP(t *testing.T) {
	calls := 0
	f, err := New(Options{AllowPrivate: true, Resolve: map[string]string{"sim.test": "127.0.0.1:8080"},
		Resolver: func(_ context.Context, host string) ([]netip.Addr, error) {
			calls++
			if host == "real.example" {
				return []netip.Addr{netip.MustParseAddr("192.0.2.7"), netip.MustParseAddr("192.0.2.8")}, nil
			}
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	for host, want := range map[string]string{
		"a.sim.test": "127.0.0.1", "B.Sim.Test.": "127.0.0.1", "real.example": "192.0.2.7",
		"10.1.2.3": "10.1.2.3", "[::1]": "::1",
		// Never sent to the resolver: IPv4 in URL notations, localhost.
		"0x7f.1": "127.0.0.1", "2130706433": "127.0.0.1", "localhost": "127.0.0.1", "www.localhost.": "127.0.0.1",
	} {
		got, err := f.LookupIP(ctx, host)
		if err != nil || got.String() != want {
			t.Errorf("LookupIP(%s) = %v, %v; want %s", host, got, err, want)
		}
	}
	if _, err := f.LookupIP(ctx, "real.example"); err != nil || calls != 1 {
		t.Errorf("second lookup: %v, %d resolver calls (want 1: cached)", err, calls)
	}
	if _, err := f.LookupIP(ctx, "256.0.0.1"); err == nil || calls != 1 {
		t.Errorf("256.0.0.1: %v, %d resolver calls", err, calls)
	}
	if _, err := f.LookupIP(ctx, "nowhere.example"); err == nil {
		t.Error("unknown name resolved")
	}
	g, _ := New(Options{DialContext: (&net.Dialer{}).DialContext})
	defer g.Close()
	if _, err := g.LookupIP(ctx, "x.example"); !errors.Is(err, ErrNoDialResolution) {
		t.Errorf("with DialContext: %v", err)
	}
}
