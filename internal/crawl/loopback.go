package crawl

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
)

// LoopbackSeat is what one member of a LoopbackCluster needs to start: its
// id, its mTLS material and its bound gRPC listener (pass it as
// MemberOptions.Listener, or close it).
type LoopbackSeat struct {
	ID       string
	TLS      *tlsutil.Node
	Listener net.Listener
}

// LoopbackCluster prepares an n-node cluster on this machine (tests, the
// demo): ids node-0…node-(n-1), a cluster CA and certificates in pkiDir
// (made unless pkiDir already holds a CA, so a kept data dir resumes with
// the same identities), and one listener per node on 127.0.0.1. It returns
// the membership list and the seats.
func LoopbackCluster(pkiDir string, n int) ([]hostsplit.Member, []LoopbackSeat, error) {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("node-%d", i)
	}
	if _, err := os.Stat(filepath.Join(pkiDir, "ca.pem")); err != nil {
		if err := tlsutil.WriteCluster(pkiDir, ids, []string{"127.0.0.1", "localhost"}, 24*time.Hour); err != nil {
			return nil, nil, err
		}
	}
	members := make([]hostsplit.Member, 0, n)
	seats := make([]LoopbackSeat, 0, n)
	closeAll := func() {
		for _, s := range seats {
			s.Listener.Close()
		}
	}
	for _, id := range ids {
		cert, key := tlsutil.NodeFiles(pkiDir, id)
		tn, err := tlsutil.Load(filepath.Join(pkiDir, "ca.pem"), cert, key)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("crawl: listen: %w", err)
		}
		seats = append(seats, LoopbackSeat{ID: id, TLS: tn, Listener: l})
		members = append(members, hostsplit.Member{ID: hostsplit.NodeID(id), Addr: l.Addr().String()})
	}
	return members, seats, nil
}

// LoopbackOperator returns the operator identity "admin" of a cluster made
// by LoopbackCluster in pkiDir (issuing it on first use): membership
// changes (ChangeMembership) need an operator certificate.
func LoopbackOperator(pkiDir string) (*tlsutil.Node, error) {
	cert, key := tlsutil.OperatorFiles(pkiDir, "admin")
	if _, err := os.Stat(cert); err != nil {
		if err := tlsutil.WriteOperator(pkiDir, "admin", 24*time.Hour); err != nil {
			return nil, err
		}
	}
	return tlsutil.Load(filepath.Join(pkiDir, "ca.pem"), cert, key)
}
