// Command crawler is Sextant's command-line entry point: a thin layer that turns
// flags into Options, calls constructors and runs the result.
//
// Every subcommand lives in its own file and registers itself in init; see
// `crawler help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
