package hostsplit

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// Issue 25 defect 3: a member removed by a change kept its rights through
// the previous view (Known accepted it) and could be re-admitted. Once the
// change is done (Retire) it is refused for good, across a restart, even
// if a later view or an expected one names it.
func TestRetireRefusesRemovedMember(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	ctx := context.Background()
	n0 := c.nodes[0]
	v2 := View{Epoch: 2, Members: c.members[:2]}
	if err := n0.sp.SetView(ctx, v2); err != nil {
		t.Fatal(err)
	}
	if !n0.sp.Ownership().Known("node-2") {
		t.Fatal("during the change the leaver (handing its hosts over) must still be known")
	}
	if err := n0.sp.Ownership().Retire(); err != nil {
		t.Fatal(err)
	}
	if n0.sp.Ownership().Known("node-2") {
		t.Fatal("Known accepts a member removed by a finished change")
	}
	if !n0.sp.Ownership().Known("node-1") || !n0.sp.Ownership().Known("node-0") {
		t.Fatal("Retire refused a member of the view")
	}
	v3 := View{Epoch: 3, Members: c.members}
	n0.sp.Ownership().Expect(v3)
	if n0.sp.Ownership().Known("node-2") {
		t.Fatal("an expected view re-admits a removed member")
	}
	n0.sp.Ownership().Unexpect()
	if err := n0.sp.SetView(ctx, v3); !errors.Is(err, ErrRemovedID) {
		t.Fatalf("SetView naming a removed id: %v, want ErrRemovedID", err)
	}
	c.restart(n0)
	if n0.sp.Ownership().Known("node-2") {
		t.Fatal("a restart forgot the removed ids")
	}
	if got := n0.sp.Ownership().Removed(); !slices.Equal(got, []NodeID{"node-2"}) {
		t.Fatalf("Removed = %v", got)
	}
}
