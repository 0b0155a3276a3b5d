package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	grpcstatus "google.golang.org/grpc/status"

	pb "github.com/sextant-crawler/sextant/proto"
)

// The cluster view over gRPC: every node registers the read-only NodeStatus
// service (proto/status.proto) on its peer mTLS server, and a node's page
// asks its peers for their Snapshots with Peers.

// Register registers the NodeStatus service answering with src's Snapshot
// on s: a cluster member's mTLS gRPC server (crawl.MemberOptions.Services),
// so only cluster members may ask. The service only reads.
func Register(s grpc.ServiceRegistrar, src Source) {
	pb.RegisterNodeStatusServer(s, &service{src: src})
}

type service struct {
	pb.UnimplementedNodeStatusServer
	src Source
}

func (s *service) Snapshot(ctx context.Context, _ *pb.SnapshotRequest) (*pb.SnapshotResponse, error) {
	snap := s.src.Snapshot()
	fill(&snap)
	b, err := json.Marshal(snap)
	if err != nil {
		return nil, grpcstatus.Errorf(codes.Internal, "status: %v", err)
	}
	return &pb.SnapshotResponse{Node: snap.Node, Json: b}, nil
}

// PeerAddr is another node of the cluster: its id and gRPC address.
type PeerAddr struct{ ID, Addr string }

// Peers asks other nodes for their Snapshots over gRPC. Safe for
// concurrent use; Close it.
type Peers struct {
	timeout time.Duration
	peers   []PeerAddr
	conns   []*grpc.ClientConn
}

// ErrNoPeers reports DialPeers given no transport credentials.
var ErrNoPeers = errors.New("status: peers need transport credentials")

// DialPeers prepares clients for peers (no connection is made until the
// first call). creds are the node's mTLS client credentials (the same as
// the splitter's) without a ServerName: each peer's certificate is checked
// against its node id, whatever its address. timeout bounds each peer's answer; default 2 s.
func DialPeers(peers []PeerAddr, creds credentials.TransportCredentials, timeout time.Duration) (*Peers, error) {
	if creds == nil {
		return nil, ErrNoPeers
	}
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	p := &Peers{timeout: timeout, peers: peers}
	for _, pa := range peers {
		// The TLS server name is the peer's node id, as hostsplit dials
		// it: `crawler certs` always names the node id in its
		// certificate, but an address (an IP, a service name) only if
		// --hosts listed it, so a healthy peer addressed by IP failed
		// verification.
		c, err := grpc.NewClient(pa.Addr, grpc.WithTransportCredentials(creds), grpc.WithAuthority(pa.ID))
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("status: peer %s: %w", pa.ID, err)
		}
		p.conns = append(p.conns, c)
	}
	return p, nil
}

// Snapshots asks every peer at once and returns their Snapshots in the
// order given; a peer that does not answer in time (or answers nonsense)
// is a Snapshot with only Node and Error set.
func (p *Peers) Snapshots(ctx context.Context) []Snapshot {
	out := make([]Snapshot, len(p.peers))
	var wg sync.WaitGroup
	for i, pa := range p.peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, p.timeout)
			defer cancel()
			r, err := pb.NewNodeStatusClient(p.conns[i]).Snapshot(cctx, &pb.SnapshotRequest{})
			if err == nil {
				err = json.Unmarshal(r.GetJson(), &out[i])
			}
			if err != nil {
				out[i] = Snapshot{Node: pa.ID, Error: "unreachable: " + grpcstatus.Convert(err).Message()}
			}
		}()
	}
	wg.Wait()
	return out
}

// Cluster returns a function for Options.Cluster: self's Snapshot first,
// then every peer's.
func (p *Peers) Cluster(self Source) func(context.Context) []Snapshot {
	return func(ctx context.Context) []Snapshot {
		return append([]Snapshot{self.Snapshot()}, p.Snapshots(ctx)...)
	}
}

// Close closes the connections.
func (p *Peers) Close() error {
	var errs []error
	for _, c := range p.conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
