package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sextant-crawler/sextant/hostsplit"
	"github.com/sextant-crawler/sextant/internal/control"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/termsafe"
	pb "github.com/sextant-crawler/sextant/proto"
)

func init() {
	register(&command{name: "ctl", summary: "steer a running cluster: seed, pause/resume, block/unblock, per-host overrides, drain, status", run: runCtl})
}

const ctlUsage = `--pki DIR --peer ADDR[,ADDR...] [--as NAME] COMMAND [flags]

Steers a running cluster through the Control gRPC service every node
serves on its mTLS port. Only an operator certificate is accepted
(--pki/operator-NAME.pem, default NAME admin, made by 'crawler certs'
or 'crawler certs --operator NAME --out DIR'); a node's own certificate
is refused. The cluster's members are read from the first --peer that
answers (Membership.GetView); commands other than seed go to every
member (or only to --node ID). Rules are node state: each node keeps them
in its data dir across restarts, logs every change with the operator's
name, shows them on its status page and exports them as metrics.

  seed URL... | seed --file F   inject seeds at the first --peer; each URL
                                goes to the node that owns its host and is
                                fetched once (the DUE keeps it exact)
  pause  [--host H | --domain D]   no request to those hosts (every host
                                without --host/--domain) from when the
                                command returns: fetches in flight are
                                waited for; their URLs stay queued
  resume [--host H | --domain D]   lifts that pause (without a host or a
                                domain: every pause)
  block   --host H | --domain D    as pause, for a host that must not be
                                crawled; its URLs stay queued and counted
  unblock --host H | --domain D    lifts that block (neither: every block)
  set --host H [--delay D] [--factor F] [--max-pages N] [--clear]
                                per-host politeness at run time: a fixed
                                delay between fetches, the factor of the
                                fetch time, the page budget (URLs admitted
                                beyond it are dropped); --clear drops the
                                host's override first
  drain                         every node finishes its fetches in flight,
                                persists and exits 0 (as on SIGTERM); a
                                restart with the same data dir resumes
  status                        per node: fetched, queued, in flight, URLs
                                held by pauses and blocks, rules`

// ctlArgs are crawler ctl's parsed arguments.
type ctlArgs struct {
	pki, as, peers, node, host, domain, file string
	delay                                    time.Duration
	factor                                   float64
	maxPages                                 int
	clear, factorSet                         bool
	timeout                                  time.Duration
	pos                                      []string
}

func parseCtl(env *cmdEnv, args []string) (*ctlArgs, error) {
	f := newFlags(env, "ctl", ctlUsage)
	a := &ctlArgs{}
	f.StringVar(&a.pki, "pki", "", "cluster directory from 'crawler certs' (ca.pem, operator-NAME.pem); default $SEXTANT_PKI")
	f.StringVar(&a.as, "as", "admin", "the operator whose certificate this command presents (--pki/operator-NAME.pem)")
	f.StringVar(&a.peers, "peer", "", "gRPC address of any member (host:port); several, comma-separated, are tried in turn")
	f.StringVar(&a.node, "node", "", "send the command to this member only (not for seed)")
	f.StringVar(&a.host, "host", "", "the host the command is about (a host name, or host:port)")
	f.StringVar(&a.domain, "domain", "", "every host under this domain (the domain and its subdomains)")
	f.StringVar(&a.file, "file", "", "seed: read URLs from this file (one a line; # comments)")
	f.DurationVar(&a.delay, "delay", 0, "set: fixed delay between two fetches of the host")
	f.Float64Var(&a.factor, "factor", 0, "set: the host's politeness factor (delay = factor × fetch time)")
	f.IntVar(&a.maxPages, "max-pages", 0, "set: the host's page budget (URLs admitted from now on beyond it are dropped)")
	f.BoolVar(&a.clear, "clear", false, "set: drop the host's override first")
	f.DurationVar(&a.timeout, "timeout", 2*time.Minute, "give up after this long")
	rest := args
	for { // flags may follow the command and its arguments
		err := f.FlagSet.Parse(rest)
		if errors.Is(err, flag.ErrHelp) {
			f.printUsage(env.stdout)
			return nil, errHelpShown
		}
		if err != nil {
			return nil, &usageError{msg: err.Error()}
		}
		if f.NArg() == 0 {
			break
		}
		a.pos = append(a.pos, f.Arg(0))
		rest = f.Args()[1:]
	}
	f.Visit(func(fl *flag.Flag) {
		if fl.Name == "factor" {
			a.factorSet = true
		}
	})
	return a, nil
}

func runCtl(ctx context.Context, env *cmdEnv, args []string) error {
	a, err := parseCtl(env, args)
	if err != nil {
		return err
	}
	if len(a.pos) == 0 {
		return usagef("ctl: want a command: seed, pause, resume, block, unblock, set, drain or status")
	}
	if a.pki == "" {
		a.pki = os.Getenv("SEXTANT_PKI")
	}
	if a.pki == "" || a.peers == "" {
		return usagef("ctl: --pki and --peer are required")
	}
	if a.timeout <= 0 {
		return usagef("ctl: --timeout %v must be positive", a.timeout)
	}
	tn, err := loadIdentity(a.pki, a.as, false)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	cl := control.NewClient(tn)
	cl.CallTimeout = a.timeout
	peers := strings.Split(a.peers, ",")
	cmd, rest := a.pos[0], a.pos[1:]
	if cmd == "seed" {
		return ctlSeed(ctx, env, cl, peers, a, rest)
	}
	if len(rest) > 0 {
		return usagef("ctl %s: unexpected argument %q", cmd, rest[0])
	}
	req, err := ctlRequest(cmd, a)
	if err != nil {
		return err
	}
	members, err := cl.Members(ctx, peers)
	if err != nil {
		return err
	}
	if a.node != "" {
		members = selectMember(members, a.node)
		if len(members) == 0 {
			return usagef("ctl: --node %q is not a member", a.node)
		}
	}
	res := cl.Each(ctx, members, req)
	printCtlResults(env, cmd, res)
	var errs []error
	for _, r := range res {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.Member.ID, r.Err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("ctl %s: %w", cmd, err)
	}
	if cmd == "drain" {
		return ctlWaitGone(ctx, env, cl, members)
	}
	return nil
}

// ctlRequest is the call a command makes on every member.
func ctlRequest(cmd string, a *ctlArgs) (func(context.Context, pb.ControlClient) (*pb.ControlStatus, error), error) {
	switch cmd {
	case "status":
		return func(ctx context.Context, c pb.ControlClient) (*pb.ControlStatus, error) {
			return c.Status(ctx, &pb.ControlStatusRequest{})
		}, nil
	case "drain":
		return func(ctx context.Context, c pb.ControlClient) (*pb.ControlStatus, error) {
			return c.Drain(ctx, &pb.ControlDrainRequest{})
		}, nil
	case control.ActPause, control.ActResume, control.ActBlock, control.ActUnblock, control.ActSet:
	default:
		return nil, usagef("ctl: unknown command %q (seed, pause, resume, block, unblock, set, drain, status)", cmd)
	}
	if a.host != "" && a.domain != "" {
		return nil, usagef("ctl %s: give --host or --domain, not both", cmd)
	}
	if (cmd == control.ActBlock) && a.host == "" && a.domain == "" {
		return nil, usagef("ctl block: --host or --domain is required")
	}
	if cmd == control.ActSet && (a.host == "" || a.domain != "") {
		return nil, usagef("ctl set: --host is required (overrides are per host)")
	}
	req := &pb.ControlRuleRequest{Action: cmd, Host: a.host, Domain: a.domain, DelayNs: int64(a.delay), Factor: a.factor,
		FactorSet: a.factorSet, MaxPages: int64(a.maxPages), Clear: a.clear}
	return func(ctx context.Context, c pb.ControlClient) (*pb.ControlStatus, error) { return c.Rule(ctx, req) }, nil
}

func selectMember(ms []hostsplit.Member, id string) []hostsplit.Member {
	for _, m := range ms {
		if string(m.ID) == id {
			return []hostsplit.Member{m}
		}
	}
	return nil
}

// ctlSeed sends the seeds to the first peer that takes them.
func ctlSeed(ctx context.Context, env *cmdEnv, cl *control.Client, peers []string, a *ctlArgs, urls []string) error {
	if a.file != "" {
		sl, err := crawl.ReadSeedList(a.file, 0)
		if err != nil {
			return err
		}
		urls = append(urls, sl.URLs...)
		if s := sl.Summary(); s != "" {
			fmt.Fprintf(env.stderr, "ctl seed: %s\n", termsafe.String(s))
		}
	}
	if len(urls) == 0 {
		return usagef("ctl seed: give URLs or --file")
	}
	var errs []error
	for _, p := range peers {
		var resp *pb.ControlSeedResponse
		err := cl.Call(ctx, hostsplit.Member{Addr: p}, func(ctx context.Context, c pb.ControlClient) error {
			var err error
			resp, err = c.Seed(ctx, &pb.ControlSeedRequest{Urls: urls})
			return err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			if st, ok := status.FromError(err); ok && st.Code() != codes.Unavailable {
				break // refused, not unreachable: another peer would refuse too
			}
			continue
		}
		fmt.Fprintf(env.stdout, "ctl seed: %d URLs routed to their owners by %s, %d refused\n", resp.GetAccepted(), p, resp.GetRejected())
		for _, pr := range resp.GetProblems() {
			fmt.Fprintf(env.stdout, "  refused: %s\n", termsafe.String(pr))
		}
		return nil
	}
	return fmt.Errorf("ctl seed: %w", errors.Join(errs...))
}

func printCtlResults(env *cmdEnv, cmd string, res []control.Result) {
	for _, r := range res {
		if r.Err != nil {
			fmt.Fprintf(env.stdout, "%s (%s): %s failed: %v\n", r.Member.ID, r.Member.Addr, cmd, r.Err)
			continue
		}
		st := r.Status
		state := ""
		if st.Metrics.Draining {
			state = ", draining"
		}
		fmt.Fprintf(env.stdout, "%s (%s): fetched %d, queued %d, in flight %d, held by pauses %d, by blocks %d, %d rule changes%s\n",
			r.Member.ID, r.Member.Addr, st.Fetched, st.Queued, st.InFlight, st.Metrics.HeldPaused, st.Metrics.HeldBlocked, st.Metrics.Changes, state)
		for _, l := range control.Describe(st.Rules) {
			fmt.Fprintf(env.stdout, "  %s\n", termsafe.String(l))
		}
	}
}

// ctlWaitGone waits until every drained member stops answering.
func ctlWaitGone(ctx context.Context, env *cmdEnv, cl *control.Client, members []hostsplit.Member) error {
	for _, m := range members {
		for {
			err := cl.Call(ctx, m, func(ctx context.Context, c pb.ControlClient) error {
				cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				_, err := c.Status(cctx, &pb.ControlStatusRequest{})
				return err
			})
			if st, ok := status.FromError(err); err != nil && ok && st.Code() == codes.Unavailable {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("ctl drain: %s still answers: %w", m.ID, ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
		fmt.Fprintf(env.stdout, "%s: stopped\n", m.ID)
	}
	return nil
}
