package fingerprint

import "testing"

// Fingerprints are stored on disk and exchanged between nodes: a change of
// hash function or seed would silently corrupt every stored seen-set.
func TestStable(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
	}{
		{"", 0xef46db3751d8e999},
		{"http://h00001.sim.test/", 0x14b7f736b422a436},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %#x, want %#x", c.in, got, c.want)
		}
		if got := Bytes([]byte(c.in)); got != c.want {
			t.Errorf("Bytes(%q) = %#x, want %#x", c.in, got, c.want)
		}
	}
	if URL("http://a.test/x") == URL("http://a.test/y") {
		t.Fatal("distinct URLs share a fingerprint")
	}
}
