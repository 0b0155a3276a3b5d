package main

import (
	"runtime"
	"strings"
	"testing"
)

// `crawler version` prints the build info's values, and the -X values over
// them when the image build set some.
func TestVersion(t *testing.T) {
	defer func(v, r string) { version, revision = v, r }(version, revision)
	code, out, _ := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "crawler ") || !strings.Contains(out, "go "+runtime.Version()+"\n") {
		t.Fatalf("exit %d, output %q", code, out)
	}
	version, revision = "v1.2.3", "0123abcd"
	code, out, _ = runCLI(t, "version")
	if want := "crawler v1.2.3\ngo " + runtime.Version() + "\nrevision 0123abcd\n"; code != 0 || out != want {
		t.Fatalf("exit %d, output %q, want %q", code, out, want)
	}
	if code, _, _ := runCLI(t, "version", "extra"); code != 2 {
		t.Fatalf("an argument: exit %d, want 2", code)
	}
}
