package control

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/tlsutil"
	pb "github.com/sextant-crawler/sextant/proto"
)

// Client calls the Control service of a cluster's nodes with an operator
// certificate.
type Client struct {
	tn *tlsutil.Node
	// CallTimeout bounds one call to one node (a pause waits for the
	// fetches in flight). Default 2 minutes.
	CallTimeout time.Duration
}

// NewClient returns a Client presenting tn's certificate.
func NewClient(tn *tlsutil.Node) *Client { return &Client{tn: tn, CallTimeout: 2 * time.Minute} }

// Members returns the view of the first of peers that answers: every
// member with its id and address.
func (c *Client) Members(ctx context.Context, peers []string) ([]hostsplit.Member, error) {
	var errs []error
	for _, p := range peers {
		states, err := crawl.MemberStates(ctx, c.tn, []hostsplit.Member{{Addr: p}})
		if err != nil || len(states) == 0 {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			continue
		}
		return hostsplit.ViewFromProto(states[0].GetView()).Members, nil
	}
	return nil, fmt.Errorf("control: no peer answered: %w", errors.Join(errs...))
}

// Call runs fn with a Control client of m. An empty m.ID accepts any
// member certificate of the cluster CA for the server.
func (c *Client) Call(ctx context.Context, m hostsplit.Member, fn func(context.Context, pb.ControlClient) error) error {
	conn, err := grpc.NewClient(m.Addr, grpc.WithTransportCredentials(credentials.NewTLS(c.tlsConfig(string(m.ID)))))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, c.CallTimeout)
	defer cancel()
	return fn(ctx, pb.NewControlClient(conn))
}

// tlsConfig verifies the server as member id, or as any member of the
// cluster CA when id is empty.
func (c *Client) tlsConfig(id string) *tls.Config {
	cfg := c.tn.ClientConfig(nil)
	cfg.VerifyConnection = nil
	cfg.ServerName = id
	if id != "" {
		return cfg
	}
	cfg.InsecureSkipVerify = true // the chain is verified by hand below
	pool := c.tn.Pool
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("control: no server certificate")
		}
		inter := x509.NewCertPool()
		for _, x := range cs.PeerCertificates[1:] {
			inter.AddCert(x)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
		return err
	}
	return cfg
}

// Result is one node's answer to a command sent to every member.
type Result struct {
	Member hostsplit.Member
	Status Status
	Err    error
}

// Each sends a Control call to every member in turn and collects the
// statuses the calls return.
func (c *Client) Each(ctx context.Context, members []hostsplit.Member,
	call func(context.Context, pb.ControlClient) (*pb.ControlStatus, error)) []Result {
	out := make([]Result, 0, len(members))
	for _, m := range members {
		r := Result{Member: m}
		r.Err = c.Call(ctx, m, func(ctx context.Context, cl pb.ControlClient) error {
			p, err := call(ctx, cl)
			if err != nil {
				return err
			}
			r.Status, err = StatusFromProto(p)
			return err
		})
		out = append(out, r)
	}
	return out
}
