package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/sextant-crawler/sextant/cmd/crawler/nodeflags"
	"github.com/sextant-crawler/sextant/internal/crawl"
)

func init() {
	register(&command{name: "fsck", summary: "check a data directory's stores against each other; --repair rebuilds damaged ones", run: runFsck})
}

// errFsckDamaged makes fsck exit 1 when it found a damaged store it did not
// repair.
var errFsckDamaged = errors.New("damaged data directory (run again with --repair)")

func runFsck(ctx context.Context, env *cmdEnv, args []string) error {
	f := newFlags(env, "fsck", `--data DIR [--repair] [node flags]

Checks a stopped node's data directory: every store opens, the frontier has
applied every batch of new URLs the DUE delivered and none it never
committed, every frontier entry and DUE run block passes its checksum and
the frontier's stored count matches its entries; the crawl log is parsed.
A cluster member's spool (DIR/spool: links for peers not yet acknowledged,
and the archive of those that were) is read whole and compared with
DIR/spool.mark, which records how far it had got at the last open and
clean stop. It prints each problem and exits 1 if one of them would lose
URLs (a crawl or node refuses such a directory). --repair then rebuilds
the frontier and the DUE: the URLs the old stores still hold are queued
again, and so is every URL of the crawl log (fetched again, to find their
links once more); a damaged spool is rebuilt under a new epoch with the
batches it still holds (the lost ones are re-derived by those fetches).
A member's frontier also held URLs its peers sent it: the repair asks the
peers (a token in the spool) to re-send, once the cluster runs again, every
batch they had sent it; the crawl does not end before they have.
The old stores are kept as frontier.damaged, due.damaged, spool.damaged.
Give the crawl's own node flags (--max-pages-per-host, --politeness-key…):
the rebuilt frontier applies them (--skip-check does not apply: fsck reads
everything).

Limit: after a kill -9 (not a clean stop), the newest URLs in the DUE's
buffer log (due/*.log) and the spool batches of the last 2 seconds (since
spool.mark was last refreshed) are recorded nowhere else yet: damage to
those tails cannot be told from a write the kill cut short, and is cut
off without a word. --due-fsync makes the DUE's log
durable at each batch; after a disk error, a restore from backup or a
crawl with --skip-check, run fsck before resuming.`)
	nf := nodeflags.Add(f.FlagSet)
	repair := f.Bool("repair", false, "rebuild the frontier and the DUE if a check fails")
	if err := f.parse(args); err != nil {
		return err
	}
	opts, err := nf.Options(nil)
	if err != nil {
		return usagef("%s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	opts.Logger = env.logger()
	if !*repair {
		rep, err := crawl.Check(opts)
		if err != nil {
			return err
		}
		printCheck(env, rep)
		if !rep.OK() {
			return errFsckDamaged
		}
		return nil
	}
	rep, err := crawl.Repair(opts)
	printCheck(env, rep.Check)
	if err != nil {
		return err
	}
	if rep.Rebuilt {
		fmt.Fprintf(env.stdout, "repaired: frontier and DUE rebuilt with %d URLs (%d from the old frontier, %d from the old DUE, %d fetched before per crawl.log: fetched again)\n",
			rep.Admitted, rep.FromFrontier, rep.FromDUE, rep.FromLog)
	}
	if rep.ResendToken != 0 {
		fmt.Fprintf(env.stdout, "repaired: the peers will re-send what they sent this member (token %016x) once the cluster runs again\n", rep.ResendToken)
	}
	if sp := rep.Spool; sp != nil {
		fmt.Fprintf(env.stdout, "repaired: spool rebuilt under a new epoch: %d batches (%d URLs) still to send, %d archived (%d URLs), %d entries unreadable\n",
			sp.PendingBatches, sp.PendingURLs, sp.ArchivedBatches, sp.ArchivedURLs, sp.Skipped)
	}
	return nil
}

func printCheck(env *cmdEnv, r crawl.CheckReport) {
	for _, fd := range r.Findings {
		sev := "warning"
		if fd.Fatal {
			sev = "DAMAGED"
		}
		fmt.Fprintf(env.stdout, "%-8s %-9s %s\n", sev, fd.Store, fd.Problem)
	}
	fmt.Fprintf(env.stdout, "frontier: %d URLs stored, DUE batches applied up to %d; DUE: delivered up to %d, %d pending, %d fingerprints in %d runs; crawl.log: %d URLs fetched, %d bad lines; %d queued URLs were fetched before (will be fetched again)\n",
		r.Queued, r.FrontierApplied, r.DUE.Delivered, r.DUE.Pending, r.DUE.Entries, r.DUE.Runs, r.Fetched, r.BadLogLines, r.Refetch)
	if r.Member {
		fmt.Fprintf(env.stdout, "spool (cluster member): %d batches (%d URLs) not yet acknowledged, %d archived (%d URLs)\n",
			r.Spool.PendingBatches, r.Spool.PendingURLs, r.Spool.ArchivedBatches, r.Spool.ArchivedURLs)
	}
	if r.OK() {
		fmt.Fprintln(env.stdout, "ok: no store would lose URLs")
	}
}
