package hostsplit_test

import (
	"context"
	"log"
	"net"
	"path/filepath"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

type dueSink struct{}

func (dueSink) Deliver(ctx context.Context, urls []string) error { return nil }

// How a node wires a Splitter to its gRPC server with the cluster's mTLS
// material (made by `crawler certs --nodes 3 --out pki`).
func Example() {
	members := []hostsplit.Member{
		{ID: "node-0", Addr: "127.0.0.1:7000"},
		{ID: "node-1", Addr: "127.0.0.1:7001"},
		{ID: "node-2", Addr: "127.0.0.1:7002"},
	}
	ids := []string{"node-0", "node-1", "node-2"}
	cert, key := tlsutil.NodeFiles("pki", "node-0")
	node, err := tlsutil.Load(filepath.Join("pki", "ca.pem"), cert, key)
	if err != nil {
		log.Fatal(err)
	}
	sp, err := hostsplit.New(hostsplit.Options{
		Self: "node-0", Members: members, DataDir: "data/node-0/spool",
		Local: dueSink{}, ClientTLS: node.ClientConfig(ids),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sp.Close()
	srv := grpc.NewServer(append(hostsplit.ServerOptions(hostsplit.Limits{}),
		grpc.Creds(credentials.NewTLS(node.ServerConfig(ids))))...)
	sp.Transport().Register(srv)
	lis, err := net.Listen("tcp", members[0].Addr)
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.GracefulStop()

	// For each fetched page: route its links, then make them durable.
	ctx := context.Background()
	_ = sp.Route(ctx, []string{"http://h00042.sim.test/p/1.html"})
	_ = sp.Flush(ctx)
}
