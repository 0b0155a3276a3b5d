package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

func TestUnknownCommandExits2(t *testing.T) {
	code, _, stderr := runCLI(t, "nosuch")
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "nosuch") {
		t.Fatalf("want a one-line error naming the command, got %q", stderr)
	}
}

func TestNoArgsExits2(t *testing.T) {
	if code, _, _ := runCLI(t); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	code, out, _ := runCLI(t, "help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for name := range commands {
		if !strings.Contains(out, name) {
			t.Errorf("help does not list %q", name)
		}
	}
}

// Every command explains its flags on -h and rejects an unknown flag with a
// one-line error and exit status 2.
func TestEveryCommandHelpAndBadFlag(t *testing.T) {
	for name := range commands {
		t.Run(name, func(t *testing.T) {
			code, out, _ := runCLI(t, name, "-h")
			if code != 0 || !strings.Contains(out, "Usage: crawler "+name) {
				t.Fatalf("-h: exit %d, output %q", code, out)
			}
			code, _, stderr := runCLI(t, name, "-no-such-flag")
			if code != 2 {
				t.Fatalf("bad flag: exit %d, want 2", code)
			}
			if strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Fatalf("bad flag: want one line, got %q", stderr)
			}
		})
	}
}
