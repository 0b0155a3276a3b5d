package crawl

import (
	"slices"
	"strings"
	"testing"
)

func TestReadSeeds(t *testing.T) {
	in := "# seeds\nhttp://a.test/\n\n  http://b.test/x  # the b host\n#http://c.test/\n"
	got, err := ReadSeeds(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"http://a.test/", "http://b.test/x"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if _, err := ReadSeedsFile("/nonexistent/seeds.txt"); err == nil {
		t.Fatal("missing file accepted")
	}
}
