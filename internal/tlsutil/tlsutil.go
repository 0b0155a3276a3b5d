// Package tlsutil makes and loads the cluster's mTLS material: one cluster
// CA and, per node, an ECDSA P-256 certificate whose common name and first
// DNS SAN are the node id (plus any extra host names and IPs given), valid
// for both server and client authentication. ServerConfig and ClientConfig
// build tls.Configs that accept only certificates signed by the cluster CA
// whose node id is in the membership list.
//
// Functions here are safe for concurrent use; the returned configs must not
// be modified after use starts.
package tlsutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// ErrNotMember is wrapped by the verification error for a certificate whose
// node id is not in the membership.
var ErrNotMember = errors.New("tlsutil: certificate identity is not a cluster member")

// CA is a cluster certificate authority.
type CA struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA makes a self-signed CA valid for validity from now.
func NewCA(name string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"Sextant cluster"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("tlsutil: make CA: %w", err)
	}
	return caFromDER(der, key)
}

func caFromDER(der []byte, key *ecdsa.PrivateKey) (*CA, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &CA{
		Cert: cert, Key: key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// LoadCA reads a CA written by WriteCluster (to issue more node certs).
func LoadCA(certFile, keyFile string) (*CA, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tlsutil: load CA: %w", err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("tlsutil: CA key is not ECDSA")
	}
	return caFromDER(pair.Certificate[0], key)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

// Issue makes a certificate for node id signed by ca, with id as common name
// and DNS SAN, and each of hosts as an IP SAN if it parses as an IP, else as
// a DNS SAN. It returns the certificate and key in PEM.
func (ca *CA) Issue(id string, hosts []string, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	if id == "" {
		return nil, nil, errors.New("tlsutil: empty node id")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: id, Organization: []string{"Sextant cluster"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{id},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" && h != id {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("tlsutil: issue %s: %w", id, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// NodeFiles names the files of node id in a cluster directory.
func NodeFiles(dir, id string) (certFile, keyFile string) {
	return filepath.Join(dir, id+".pem"), filepath.Join(dir, id+"-key.pem")
}

// WriteCluster makes a CA and one certificate per node id in dir: ca.pem,
// ca-key.pem, <id>.pem and <id>-key.pem; keys are written 0600. It refuses
// to overwrite an existing ca.pem.
func WriteCluster(dir string, ids, hosts []string, validity time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	caFile := filepath.Join(dir, "ca.pem")
	if _, err := os.Stat(caFile); err == nil {
		return fmt.Errorf("tlsutil: %s exists; not overwriting a cluster CA", caFile)
	}
	ca, err := NewCA("sextant-cluster-ca", validity)
	if err != nil {
		return err
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{{"ca-key.pem", ca.KeyPEM, 0o600}, {"ca.pem", ca.CertPEM, 0o644}}
	for _, id := range ids {
		c, k, err := ca.Issue(id, hosts, validity)
		if err != nil {
			return err
		}
		files = append(files, struct {
			name string
			data []byte
			mode os.FileMode
		}{id + ".pem", c, 0o644}, struct {
			name string
			data []byte
			mode os.FileMode
		}{id + "-key.pem", k, 0o600})
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(filepath.Join(dir, f.name), f.mode); err != nil {
			return err
		}
	}
	return nil
}

// Node is a node's TLS material: its certificate and the cluster CA pool.
type Node struct {
	Cert tls.Certificate
	Pool *x509.CertPool
}

// Load reads the CA certificate and a node's certificate and key (PEM).
func Load(caFile, certFile, keyFile string) (*Node, error) {
	var data [3][]byte
	for i, f := range []string{caFile, certFile, keyFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("tlsutil: %w", err)
		}
		data[i] = b
	}
	return FromPEM(data[0], data[1], data[2])
}

// FromPEM builds a Node from the CA certificate and a node's certificate
// and key in PEM.
func FromPEM(caPEM, certPEM, keyPEM []byte) (*Node, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("tlsutil: no CA certificate in PEM")
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("tlsutil: %w", err)
	}
	return &Node{Cert: pair, Pool: pool}, nil
}

// ID returns the node id a certificate names: its common name, which must
// also be one of its DNS SANs. An operator certificate names no node.
func ID(cert *x509.Certificate) (string, error) {
	id := cert.Subject.CommonName
	if slices.Contains(cert.Subject.OrganizationalUnit, OperatorOU) {
		return "", fmt.Errorf("tlsutil: certificate %q is an operator's, not a node's", id)
	}
	if id == "" || !slices.Contains(cert.DNSNames, id) {
		return "", fmt.Errorf("tlsutil: certificate %q does not name a node id as CN and DNS SAN", id)
	}
	return id, nil
}

// verifyMember returns a VerifyConnection hook that accepts a peer whose
// verified certificate names a member.
func verifyMember(members []string) func(tls.ConnectionState) error {
	members = slices.Clone(members)
	return func(cs tls.ConnectionState) error {
		if len(cs.VerifiedChains) == 0 || len(cs.PeerCertificates) == 0 {
			return errors.New("tlsutil: peer certificate not verified")
		}
		id, err := ID(cs.PeerCertificates[0])
		if err != nil {
			return err
		}
		if !slices.Contains(members, id) {
			return fmt.Errorf("%w: %q", ErrNotMember, id)
		}
		return nil
	}
}

// ServerConfig is the TLS config of a node's gRPC server: TLS 1.3, its own
// certificate, and client certificates required, signed by the cluster CA
// and naming a member.
func (n *Node) ServerConfig(members []string) *tls.Config {
	return &tls.Config{
		MinVersion:       tls.VersionTLS13,
		Certificates:     []tls.Certificate{n.Cert},
		ClientAuth:       tls.RequireAndVerifyClientCert,
		ClientCAs:        n.Pool,
		VerifyConnection: verifyMember(members),
	}
}

// ClientConfig is the TLS config for dialling peers: its own certificate,
// servers verified against the cluster CA and required to name a member.
// The caller sets ServerName to the peer's node id (hostsplit does).
func (n *Node) ClientConfig(members []string) *tls.Config {
	return &tls.Config{
		MinVersion:       tls.VersionTLS13,
		Certificates:     []tls.Certificate{n.Cert},
		RootCAs:          n.Pool,
		VerifyConnection: verifyMember(members),
	}
}

// SplitPerNode moves the node files of a cluster directory made by
// WriteCluster into one directory per node, dir/<id>/ (mode 0700) holding
// ca.pem, <id>.pem and <id>-key.pem (0600): a container or pod is then
// given only its own directory, never another node's key. With uid >= 0
// each node directory and its files are chowned to uid:gid (the user a
// container runs as, so that it can read its 0600 key; this needs the
// privilege to chown). The CA files stay in dir.
func SplitPerNode(dir string, ids []string, uid, gid int) error {
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil {
		return fmt.Errorf("tlsutil: %w", err)
	}
	for _, id := range ids {
		nd := filepath.Join(dir, id)
		if err := os.Mkdir(nd, 0o700); err != nil {
			return fmt.Errorf("tlsutil: %w", err)
		}
		cf, kf := NodeFiles(dir, id)
		ncf, nkf := NodeFiles(nd, id)
		if err := os.WriteFile(filepath.Join(nd, "ca.pem"), caPEM, 0o644); err != nil {
			return err
		}
		if err := os.Rename(cf, ncf); err != nil {
			return fmt.Errorf("tlsutil: %w", err)
		}
		if err := os.Rename(kf, nkf); err != nil {
			return fmt.Errorf("tlsutil: %w", err)
		}
		if err := os.Chmod(nkf, 0o600); err != nil {
			return err
		}
		if uid >= 0 {
			for _, p := range []string{nd, filepath.Join(nd, "ca.pem"), ncf, nkf} {
				if err := os.Chown(p, uid, gid); err != nil {
					return fmt.Errorf("tlsutil: %w", err)
				}
			}
		}
	}
	return nil
}
