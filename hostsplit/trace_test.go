package hostsplit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/fingerprint"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func TestTraceHooks(t *testing.T) {
	var full, cross atomic.Int64
	var crossSum atomic.Uint64
	s, _ := isolated(t, func(o *Options) {
		o.FullTrace = func(uint64) { full.Add(1) }
		o.CrossTrace = func(fp uint64) { cross.Add(1); crossSum.Add(fp) }
	})
	urls := simURLs(300, 50, 6)
	if err := s.Route(context.Background(), urls); err != nil {
		t.Fatal(err)
	}
	var remote int64
	var want uint64
	for _, u := range urls {
		if o, _ := s.Ownership().Ring().OwnerOfURL(u); o != "a" {
			remote++
			want += fingerprint.URL(u)
		}
	}
	if full.Load() != int64(len(urls)) || cross.Load() != remote || crossSum.Load() != want {
		t.Errorf("full %d (want %d), cross %d (want %d), fingerprints match %v", full.Load(), len(urls), cross.Load(), remote, crossSum.Load() == want)
	}
}

func TestHealthServingUntilClose(t *testing.T) {
	c := newTestCluster(t, 2, nil)
	nd := c.nodes[0]
	creds := clientCreds(t, c.ca, "node-1", c.ids, "node-0", true)
	conn, err := grpc.NewClient(nd.addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	check := func() healthpb.HealthCheckResponse_ServingStatus {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetStatus()
	}
	if got := check(); got != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health %v", got)
	}
	if err := nd.sp.Close(); err != nil {
		t.Fatal(err)
	}
	if got := check(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("health after Close %v", got)
	}
}
