package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/sextant-crawler/sextant/extract"
	"github.com/sextant-crawler/sextant/frontier"
	"github.com/sextant-crawler/sextant/internal/crawl"
	"github.com/sextant-crawler/sextant/internal/demo"
	"github.com/sextant-crawler/sextant/internal/nodeconfig"
	"github.com/sextant-crawler/sextant/internal/termsafe"
)

// command is one subcommand of crawler.
type command struct {
	name    string
	summary string // one line, shown by `crawler help`
	// run parses args with its own FlagSet (see newFlags) and does the work.
	run func(ctx context.Context, env *cmdEnv, args []string) error
}

// cmdEnv is what a subcommand may use of the outside world.
type cmdEnv struct {
	stdout io.Writer
	stderr io.Writer
	log    *logConfig // --log-format, --log-level: see logging.go

	forceIdentity bool          // node --force, for runNodeConfig
	skipCheck     bool          // node --skip-check, for runNodeConfig
	progress      time.Duration // node --progress, for runNodeConfig
}

var commands = map[string]*command{}

// register adds a subcommand; it is called from init functions.
func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("crawler: duplicate command " + c.name)
	}
	commands[c.name] = c
}

// usageError is a bad command line: exit status 2 with a one-line message.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errHelpShown means -h was asked for and the help has been printed.
var errHelpShown = errors.New("help shown")

// run executes one command line and returns the process exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	env := &cmdEnv{stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		printHelp(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if c, ok := commands[args[1]]; ok {
				_ = c.run(ctx, &cmdEnv{stdout: stdout, stderr: stderr}, []string{"-h"})
				return 0
			}
			fmt.Fprintf(stderr, "crawler: unknown command %q (see 'crawler help')\n", args[1])
			return 2
		}
		printHelp(stdout)
		return 0
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "crawler: unknown command %q (see 'crawler help')\n", name)
		return 2
	}
	err := c.run(ctx, env, args[1:])
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return 0
	case errors.As(err, &ue), isInvalidInput(err):
		// Error texts may quote seeds, URLs or what a server or a peer
		// sent: escaped, so that they cannot drive the terminal.
		msg := strings.ReplaceAll(err.Error(), "\n", "; ")
		fmt.Fprintf(stderr, "crawler %s: %s (see 'crawler %s -h')\n", name, termsafe.String(msg), name)
		return 2
	default:
		fmt.Fprintf(stderr, "crawler %s: %s\n", name, termsafe.Text(err.Error()))
		return 1
	}
}

// isInvalidInput reports whether err is a library's verdict on options or
// input the user gave: a usage error, whatever path found it.
func isInvalidInput(err error) bool {
	for _, target := range []error{crawl.ErrInvalidOptions, crawl.ErrNoSeeds, nodeconfig.ErrInvalid,
		frontier.ErrInvalidOptions, extract.ErrInvalidOptions, demo.ErrInvalidOptions} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "Sextant — a distributed, Mercator-style web crawler.")
	fmt.Fprintln(w, "\nUsage: crawler COMMAND [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'crawler COMMAND -h' for the flags of a command.")
}

// flags is a subcommand's flag set with Sextant's conventions: errors are
// returned as usage errors (one line, exit 2), -h prints the full help to
// stdout.
type flags struct {
	*flag.FlagSet
	cmd      string
	synopsis string
	env      *cmdEnv
}

// newFlags makes the FlagSet for command name; synopsis is the usage line
// after "crawler NAME" followed by a paragraph of explanation.
func newFlags(env *cmdEnv, name, synopsis string) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	bindLogFlags(fs, env)
	return &flags{FlagSet: fs, cmd: name, synopsis: synopsis, env: env}
}

// parse parses args. It returns errHelpShown after printing help for -h, a
// usage error for bad flags or unexpected positional arguments.
func (f *flags) parse(args []string) error {
	err := f.FlagSet.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		f.printUsage(f.env.stdout)
		return errHelpShown
	}
	if err != nil {
		return &usageError{msg: err.Error()}
	}
	if f.NArg() > 0 {
		return usagef("unexpected argument %q", f.Arg(0))
	}
	return nil
}

func (f *flags) printUsage(w io.Writer) {
	fmt.Fprintf(w, "Usage: crawler %s %s\n\nFlags:\n", f.cmd, strings.TrimSpace(f.synopsis))
	f.SetOutput(w)
	f.PrintDefaults()
	f.SetOutput(io.Discard)
}

// errOracleMismatch: a crawl of the synthetic web did not fetch exactly the
// oracle's set.
var errOracleMismatch = errors.New("the fetched set differs from the oracle's (see the report)")
