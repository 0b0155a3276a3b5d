package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// requireDocker gates the Docker suite (.ci/deploy-test.sh): it skips
// unless SEXTANT_DOCKER=1, and under CI=true a missing or unusable Docker
// is a failure, as in TestFaults.
func requireDocker(t *testing.T) {
	t.Helper()
	if os.Getenv("SEXTANT_DOCKER") != "1" {
		t.Skip("set SEXTANT_DOCKER=1 to run the Docker suite")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("docker is missing but CI=true: the Docker suite must run in CI")
		}
		t.Skip("docker is missing")
	}
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("docker info: %v\n%s", err, out)
		}
		t.Skipf("docker is not usable: %v", err)
	}
}

// run runs a command and fails the test with its output if it fails.
func run(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func repoRoot(t *testing.T) string {
	t.Helper()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// TestImageVersion builds the image both ways, with the offline
// deploy/build.sh (FROM scratch around a binary built here) and with the
// standard deploy/Dockerfile.multistage (a Go builder image made FROM
// scratch from this machine's toolchain, the modules vendored into the
// context, GOPROXY=off), and runs `crawler version` in each: the version
// and revision given to the build are what the binary prints and what the
// OCI labels say, and the image runs as the non-root user.
func TestImageVersion(t *testing.T) {
	requireDocker(t)
	repo := repoRoot(t)
	pid := os.Getpid()
	version, revision := fmt.Sprintf("v0.0.0-test.%d", pid), "0123456789abcdef0123456789abcdef01234567"
	builder := fmt.Sprintf("sextant-builder:test-%d", pid)
	for _, b := range []struct{ name, script string }{{"buildsh", "build.sh"}, {"multistage", "build-multistage.sh"}} {
		t.Run(b.name, func(t *testing.T) {
			tag := fmt.Sprintf("sextant:img-%s-%d", b.name, pid)
			if b.name == "multistage" {
				run(t, nil, "bash", filepath.Join(repo, "deploy", "builder-image.sh"), builder)
				t.Cleanup(func() { _ = exec.Command("docker", "rmi", builder).Run() })
				if got := run(t, nil, "docker", "run", "--rm", builder, "go", "version"); !strings.HasPrefix(got, "go version go") {
					t.Fatalf("the builder image's go version: %q", got)
				}
			}
			run(t, []string{"VERSION=" + version, "REVISION=" + revision, "BUILDER=" + builder}, "bash", filepath.Join(repo, "deploy", b.script), tag)
			t.Cleanup(func() { _ = exec.Command("docker", "rmi", tag).Run() })
			out := run(t, nil, "docker", "run", "--rm", tag, "version")
			if !strings.HasPrefix(out, "crawler "+version+"\ngo go") || !strings.HasSuffix(out, "\nrevision "+revision) {
				t.Errorf("crawler version in %s:\n%s", tag, out)
			}
			var cfg struct {
				User   string
				Labels map[string]string
			}
			if err := json.Unmarshal([]byte(run(t, nil, "docker", "image", "inspect", "-f", "{{json .Config}}", tag)), &cfg); err != nil {
				t.Fatal(err)
			}
			if cfg.User != "65532:65532" {
				t.Errorf("%s runs as %q, want 65532:65532", tag, cfg.User)
			}
			for k, want := range map[string]string{"version": version, "revision": revision, "title": "sextant"} {
				if got := cfg.Labels["org.opencontainers.image."+k]; got != want {
					t.Errorf("label org.opencontainers.image.%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}
