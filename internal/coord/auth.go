package coord

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Roles of SetupAuth.
const (
	RoleNode     = "node"     // read the view, the change record and removed marks
	RoleOperator = "operator" // read and write everything under the cluster's prefix
)

// SetupAuth creates the roles and a user per certificate common name —
// nodes (each may also write only its own members/<id> key) and operators
// — and enables etcd's authentication. With client certificate auth the
// user is the certificate's CN: no passwords. Run it once, before auth is
// enabled (by anyone) or later as root; nodes added later get AddNode.
func SetupAuth(ctx context.Context, cli *clientv3.Client, o Options, nodes, operators []string) error {
	o.EnsureDefaults()
	a := cli.Auth
	root := o.root()
	steps := []func() error{
		func() error { _, err := a.RoleAdd(ctx, "root"); return err },
		func() error {
			_, err := a.UserAddWithOptions(ctx, "root", randomPassword(), &clientv3.UserAddOptions{})
			return err
		},
		func() error { _, err := a.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := a.RoleAdd(ctx, RoleNode); return err },
		func() error { _, err := a.RoleAdd(ctx, RoleOperator); return err },
		func() error {
			_, err := a.RoleGrantPermission(ctx, RoleOperator, root, clientv3.GetPrefixRangeEnd(root), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error {
			_, err := a.RoleGrantPermission(ctx, RoleNode, o.viewKey(), "", clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error {
			_, err := a.RoleGrantPermission(ctx, RoleNode, o.changeKey(), "", clientv3.PermissionType(clientv3.PermRead))
			return err
		},
		func() error {
			p := o.root() + "removed/"
			_, err := a.RoleGrantPermission(ctx, RoleNode, p, clientv3.GetPrefixRangeEnd(p), clientv3.PermissionType(clientv3.PermRead))
			return err
		},
	}
	for _, st := range steps {
		if err := st(); err != nil {
			return fmt.Errorf("coord: auth setup: %w", err)
		}
	}
	for _, id := range nodes {
		if err := AddNode(ctx, cli, o, id); err != nil {
			return err
		}
	}
	for _, op := range operators {
		if err := addUser(ctx, cli, op, RoleOperator); err != nil {
			return err
		}
	}
	if _, err := a.AuthEnable(ctx); err != nil {
		return fmt.Errorf("coord: enabling auth: %w", err)
	}
	return nil
}

// AddNode creates the user of node id: role node plus write access to its
// own member key only.
func AddNode(ctx context.Context, cli *clientv3.Client, o Options, id string) error {
	o.EnsureDefaults()
	if err := addUser(ctx, cli, id, RoleNode); err != nil {
		return err
	}
	own := "node-" + id
	if _, err := cli.Auth.RoleAdd(ctx, own); err != nil {
		return fmt.Errorf("coord: role %s: %w", own, err)
	}
	if _, err := cli.Auth.RoleGrantPermission(ctx, own, o.memberKey(id), "", clientv3.PermissionType(clientv3.PermReadWrite)); err != nil {
		return fmt.Errorf("coord: role %s: %w", own, err)
	}
	if _, err := cli.Auth.UserGrantRole(ctx, id, own); err != nil {
		return fmt.Errorf("coord: user %s: %w", id, err)
	}
	return nil
}

func addUser(ctx context.Context, cli *clientv3.Client, name, role string) error {
	// A random password nobody knows: the user authenticates by its
	// certificate's CN only.
	if _, err := cli.Auth.UserAddWithOptions(ctx, name, randomPassword(), &clientv3.UserAddOptions{}); err != nil {
		return fmt.Errorf("coord: user %s: %w", name, err)
	}
	if _, err := cli.Auth.UserGrantRole(ctx, name, role); err != nil {
		return fmt.Errorf("coord: user %s: %w", name, err)
	}
	return nil
}

func randomPassword() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
