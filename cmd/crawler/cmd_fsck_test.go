package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/memberserve"
)

// Issue 23, defect 4: a --data made by a crawl of another web is refused
// (it used to be reused silently: 0 fetches, exit 0), naming both
// identities; --force takes it over with a warning.
func TestCrawlRefusesAnotherRunsData(t *testing.T) {
	dir := t.TempDir()
	common := []string{"--data", dir, "--workers", "4", "--max-fetches", "20", "--progress", "0", "--cache-advice=false"}
	if code, out, errOut := runCLI(t, append([]string{"crawl", "--simweb", "small"}, common...)...); code != 0 {
		t.Fatalf("first crawl: exit %d: %s %s", code, out, errOut)
	}
	lines := countLines(t, filepath.Join(dir, "crawl.log"))
	code, out, errOut := runCLI(t, append([]string{"crawl", "--simweb", "default"}, common...)...)
	if code != 1 || !strings.Contains(errOut, "IDENTITY was made by crawl node n0 seeds") || !strings.Contains(errOut, "this run is crawl node n0 seeds") {
		t.Fatalf("a small-web directory reused for the default web: exit %d, stderr %q, stdout %q", code, errOut, out)
	}
	if got := countLines(t, filepath.Join(dir, "crawl.log")); got != lines {
		t.Fatalf("the refused run fetched: crawl.log %d → %d lines", lines, got)
	}
	code, out, errOut = runCLI(t, append([]string{"crawl", "--simweb", "default", "--force"}, common...)...)
	if code != 0 || !strings.Contains(errOut, "taken over") || !strings.Contains(errOut, `taken_over_by="crawl node n0 seeds`) {
		t.Fatalf("--force: exit %d, stderr %q, stdout %q", code, errOut, out)
	}
	// The directory is now the default web's: the same run resumes.
	if code, out, errOut := runCLI(t, append([]string{"crawl", "--simweb", "default"}, common...)...); code != 0 {
		t.Fatalf("resume after --force: exit %d: %s %s", code, out, errOut)
	}
}

// crawler fsck reports a damaged directory (exit 1, naming the store), a
// crawl refuses it, fsck --repair rebuilds it, and the crawl then resumes.
func TestFsckRepairCLI(t *testing.T) {
	dir := t.TempDir()
	crawlArgs := []string{"crawl", "--simweb", "small", "--data", dir, "--workers", "8", "--max-fetches", "200", "--progress", "0", "--cache-advice=false"}
	if code, out, errOut := runCLI(t, crawlArgs...); code != 0 {
		t.Fatalf("crawl: exit %d: %s %s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "fsck", "--data", dir); code != 0 || !strings.Contains(out, "ok: no store would lose URLs") {
		t.Fatalf("fsck of a sound directory: exit %d: %s %s", code, out, errOut)
	}
	if err := os.RemoveAll(filepath.Join(dir, "frontier")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "fsck", "--data", dir)
	if code != 1 || !strings.Contains(out, "DAMAGED  directory") || !strings.Contains(out, filepath.Join(dir, "frontier")) {
		t.Fatalf("fsck without a frontier: exit %d: %s %s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, crawlArgs...)
	if code != 1 || !strings.Contains(errOut, "damaged data directory") || !strings.Contains(errOut, "fsck --data "+dir+" --repair") {
		t.Fatalf("crawl without a frontier: exit %d: %s %s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "fsck", "--data", dir, "--repair")
	if code != 0 || !strings.Contains(out, "repaired: frontier and DUE rebuilt") {
		t.Fatalf("fsck --repair: exit %d: %s %s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "fsck", "--data", dir); code != 0 {
		t.Fatalf("fsck after repair: exit %d: %s %s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, crawlArgs...); code != 0 {
		t.Fatalf("crawl after repair: exit %d: %s %s", code, out, errOut)
	}
}

// Issue 23: fsck checks a cluster member's spool. A member's data dir (a
// one-node cluster, opened and closed) is sound; without its spool, fsck
// exits 1 naming it, --repair rebuilds it, and fsck then passes.
func TestFsckMemberSpoolCLI(t *testing.T) {
	root := t.TempDir()
	members, seats, err := crawl.LoopbackCluster(filepath.Join(root, "pki"), 1)
	if err != nil {
		t.Fatal(err)
	}
	node := filepath.Join(root, seats[0].ID)
	m, err := memberserve.Start(crawl.MemberOptions{Node: crawl.Options{DataDir: node, Workers: 1},
		Self: seats[0].ID, Members: members, TLS: seats[0].TLS, Listener: seats[0].Listener})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "fsck", "--data", node)
	if code != 0 || !strings.Contains(out, "spool (cluster member)") || !strings.Contains(out, "ok: no store would lose URLs") {
		t.Fatalf("fsck of a sound member: exit %d: %s %s", code, out, errOut)
	}
	if err := os.RemoveAll(filepath.Join(node, "spool")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "fsck", "--data", node)
	if code != 1 || !strings.Contains(out, "DAMAGED  spool") || !strings.Contains(out, filepath.Join(node, "spool")+" missing") {
		t.Fatalf("fsck of a member without its spool: exit %d: %s %s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "fsck", "--data", node, "--repair")
	if code != 0 || !strings.Contains(out, "repaired: spool rebuilt under a new epoch") {
		t.Fatalf("fsck --repair: exit %d: %s %s", code, out, errOut)
	}
	if code, out, errOut := runCLI(t, "fsck", "--data", node); code != 0 {
		t.Fatalf("fsck after repair: exit %d: %s %s", code, out, errOut)
	}
}
