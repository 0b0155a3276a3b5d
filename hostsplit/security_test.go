package hostsplit

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sextant-crawler/sextant/internal/tlsutil"
	pb "github.com/sextant-crawler/sextant/proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// inject dials addr with creds and sends one batch claiming to come from
// sender; it returns nil only if the batch was acknowledged.
func inject(t *testing.T, addr string, creds credentials.TransportCredentials, b *pb.Batch) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := pb.NewPeerClient(conn).Send(ctx)
	if err != nil {
		return err
	}
	if err := stream.Send(b); err != nil {
		_, rerr := stream.Recv()
		return errors.Join(err, rerr)
	}
	ack, err := stream.Recv()
	if err != nil {
		return err
	}
	if ack.GetAckedSeq() != b.GetSeq() {
		t.Fatalf("ack %d for batch %d", ack.GetAckedSeq(), b.GetSeq())
	}
	_ = stream.CloseSend()
	return nil
}

func batchOf(t *testing.T, sender string, seq uint64, urls ...string) *pb.Batch {
	enc, err := EncodeBatch(nil, urls, CodecFrontZstd)
	if err != nil {
		t.Fatal(err)
	}
	return &pb.Batch{Sender: sender, Epoch: 77, Seq: seq, Count: uint32(len(urls)), Urls: enc}
}

func clientCreds(t *testing.T, ca *tlsutil.CA, id string, members []string, serverName string, withCert bool) credentials.TransportCredentials {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue(id, []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	n, err := tlsutil.FromPEM(ca.CertPEM, certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	cfg := n.ClientConfig(members)
	cfg.ServerName = serverName
	if !withCert {
		cfg.Certificates = nil
	}
	return credentials.NewTLS(cfg)
}

// Only members with certificates from the cluster CA can inject URLs.
func TestUnauthenticatedClientsCannotInject(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	target := c.nodes[0]
	other, err := tlsutil.NewCA("evil-ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// The server's certificate must verify for the attacker too, so the
	// failures below are the server refusing the client.
	noCert := credentials.NewTLS(&tls.Config{RootCAs: target.tls.Pool, ServerName: "node-0", MinVersion: tls.VersionTLS13})
	foreignCfg := func() credentials.TransportCredentials {
		certPEM, keyPEM, _ := other.Issue("node-1", nil, time.Hour)
		n, _ := tlsutil.FromPEM(c.ca.CertPEM, certPEM, keyPEM) // trusts the real CA for the server
		cfg := n.ClientConfig(c.ids)
		cfg.ServerName = "node-0"
		// Present the foreign certificate even though the server does
		// not list its CA as acceptable.
		cert := n.Cert
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
		return credentials.NewTLS(cfg)
	}()
	attacks := map[string]credentials.TransportCredentials{
		"plaintext":       insecure.NewCredentials(),
		"no client cert":  noCert,
		"other CA":        foreignCfg,
		"not a member":    clientCreds(t, c.ca, "node-9", append(c.ids, "node-9"), "node-0", true),
		"claims self":     clientCreds(t, c.ca, "node-0", c.ids, "node-0", true),
		"sender mismatch": clientCreds(t, c.ca, "node-2", c.ids, "node-0", true),
	}
	for name, creds := range attacks {
		t.Run(name, func(t *testing.T) {
			err := inject(t, target.addr, creds, batchOf(t, "node-1", 1, "http://evil.example/"+name))
			if err == nil {
				t.Fatal("batch accepted")
			}
			t.Logf("refused: %v", err)
		})
	}
	if got := target.sink.snapshot(); len(got) != 0 {
		t.Fatalf("injected URLs delivered: %v", keys(got))
	}
	// The same path with a member's certificate works, so the refusals
	// above are about identity.
	good := clientCreds(t, c.ca, "node-1", c.ids, "node-0", true)
	// A host node-0 owns (a URL it does not own would be forwarded).
	okURL := "http://ok.example/"
	for i := 0; target.sp.Ownership().Owner(okURL[7:len(okURL)-1]) != "node-0"; i++ {
		okURL = fmt.Sprintf("http://ok%d.example/", i)
	}
	if err := inject(t, target.addr, good, batchOf(t, "node-1", 1, okURL)); err != nil {
		t.Fatalf("member's batch refused: %v", err)
	}
	if got := keys(target.sink.snapshot()); len(got) != 1 || got[0] != okURL {
		t.Fatalf("delivered %v", got)
	}
	// A resend of the same (sender, epoch, seq) is acknowledged but not
	// delivered again.
	if err := inject(t, target.addr, good, batchOf(t, "node-1", 1, okURL)); err != nil {
		t.Fatal(err)
	}
	if n := target.sink.snapshot()[okURL]; n != 1 {
		t.Fatalf("resend delivered: count %d", n)
	}
	st := target.sp.Stats()
	if st.RejectedAuth == 0 || st.Peers[0].DupBatches != 1 {
		t.Errorf("rejected auth %d, dup batches %d", st.RejectedAuth, st.Peers[0].DupBatches)
	}
}

// A malformed batch from a member is refused with InvalidArgument, counted,
// and nothing is delivered.
func TestMalformedBatchRejectedAndCounted(t *testing.T) {
	c := newTestCluster(t, 2, nil)
	target := c.nodes[0]
	creds := clientCreds(t, c.ca, "node-1", c.ids, "node-0", true)
	bad := []*pb.Batch{
		{Sender: "node-1", Epoch: 5, Seq: 1, Count: 1, Urls: []byte{byte(CodecFront), 1, 3, 1, 'x'}},
		{Sender: "node-1", Epoch: 5, Seq: 1, Count: 2, Urls: batchOf(t, "", 0, "http://a/").GetUrls()}, // count lies
		{Sender: "node-1", Epoch: 5, Seq: 1, Count: 0, Urls: nil},
	}
	for i, b := range bad {
		err := inject(t, target.addr, creds, b)
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("batch %d: %v, want InvalidArgument", i, err)
		}
	}
	if st := target.sp.Stats(); st.Total.Malformed != uint64(len(bad)) {
		t.Errorf("malformed counted %d, want %d", st.Total.Malformed, len(bad))
	}
	if got := target.sink.snapshot(); len(got) != 0 {
		t.Errorf("delivered %v", keys(got))
	}
}
