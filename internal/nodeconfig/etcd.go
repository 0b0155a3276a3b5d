package nodeconfig

import "time"

// Etcd is the node's control plane (issue 25): with it the node fetches
// only while it holds a lease in etcd and runs on etcd's view.
type Etcd struct {
	// Endpoints of the etcd cluster ("https://host:port").
	Endpoints []string `json:"endpoints"`
	// TLS is the node's etcd client identity; default the node's own
	// certificate ("tls"), whose common name is its etcd user.
	TLS TLS `json:"tls,omitzero"`
	// TTL of the node's lease (whole seconds; default 5 s): a node cut off
	// from etcd stops fetching within it.
	TTL *Duration `json:"ttl,omitempty"`
	// ElectionTimeout is the etcd cluster's election timeout (default
	// 1 s, etcd's): the node refuses a TTL a leader election would
	// outlast (about 3× this).
	ElectionTimeout *Duration `json:"election_timeout,omitempty"`
	// Cluster names the cluster's keys in etcd (default "default").
	Cluster string `json:"cluster,omitempty"`
}

// EtcdTLS is the etcd client identity: Etcd.TLS, defaulting each file to
// the node's own.
func (c *Config) EtcdTLS() TLS {
	t := c.Etcd.TLS
	if t.CA == "" {
		t.CA = c.TLS.CA
	}
	if t.Cert == "" {
		t.Cert = c.TLS.Cert
	}
	if t.Key == "" {
		t.Key = c.TLS.Key
	}
	return t
}

// validateEtcd reports the problems of c.Etcd.
func (c *Config) validateEtcd(bad func(format string, args ...any)) {
	if c.Etcd == nil {
		return
	}
	if len(c.Etcd.Endpoints) == 0 {
		bad("etcd: no endpoints")
	}
	if c.Etcd.TTL != nil {
		if d := time.Duration(*c.Etcd.TTL); d < time.Second || d%time.Second != 0 {
			bad("etcd: ttl %v: whole seconds, at least 1s", d)
		}
	}
}
