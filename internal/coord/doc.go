// Package coord is Sextant's control plane on etcd (issue 25): the
// cluster's view and the membership change in progress (a handoff.Store),
// and for each node a Session whose lease fences it.
//
// # Keys
//
// Everything lives under Options.Prefix + Options.Cluster + "/":
//
//	view          the cluster's hostsplit.View (JSON)
//	change        the latest handoff.Record (JSON); its mod revision is Record.Rev
//	removed/<id>  present once <id> was removed: that id never comes back
//	members/<id>  a node's presence, attached to its lease
//
// Every write is a transaction conditioned on the mod revisions it read,
// so concurrent operators cannot both win.
//
// # Fencing
//
// A node opens a Session (NewSession) and asks it, before it takes work,
// whether it is Held: only while its lease was renewed recently (measured
// from when the renewal was SENT, on the local monotonic clock, so a node
// cut off from etcd gives up before etcd expires the lease), while the view
// it adopted (Adopt) is etcd's, and while etcd lists it and has not
// removed it. Store.Fence revokes a removed node's lease and returns the
// time to wait before its hosts may be given to others.
//
// # Caller's duties
//
// Close every Store, Session and Embedded. Each is safe for concurrent use.
// StartEmbedded runs a real etcd member in-process for tests and the demo;
// production points Options.Endpoints at an etcd cluster with client
// certificate authentication, set up once with SetupAuth.
package coord
