// Command rusage runs a command and writes the child's resource usage
// (getrusage of the waited-for child: user and system CPU seconds, peak RSS
// in bytes) as JSON to --out. It exists because Linux's ru_maxrss of a
// child includes the RSS of the process that spawned it (Go spawns with
// CLONE_VM|CLONE_VFORK, and exec keeps the old mm's high-water mark), so a
// harness holding a large oracle in memory would see every child's peak RSS
// floored at its own. Spawned from this small process instead, the floor is
// this process's few MiB. SIGINT and SIGTERM are forwarded to the child.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// Usage is what --out receives.
type Usage struct {
	UserSec   float64 `json:"user_s"`
	SysSec    float64 `json:"sys_s"`
	MaxRSS    int64   `json:"max_rss_bytes"`
	ExitCode  int     `json:"exit_code"`
	WallSec   float64 `json:"wall_s"`
	Signalled bool    `json:"signalled"`
}

func main() {
	out := flag.String("out", "", "write the child's usage here as JSON (required)")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: rusage --out FILE -- COMMAND [ARGS...]")
		os.Exit(2)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "rusage:", err)
		os.Exit(1)
	}
	go func() {
		for s := range sig {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	u := Usage{WallSec: time.Since(t0).Seconds()}
	st := cmd.ProcessState
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		u.UserSec = time.Duration(syscall.TimevalToNsec(ru.Utime)).Seconds()
		u.SysSec = time.Duration(syscall.TimevalToNsec(ru.Stime)).Seconds()
		u.MaxRSS = ru.Maxrss * 1024 // KiB on Linux
	}
	u.ExitCode = st.ExitCode()
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		u.Signalled = true
	}
	b, _ := json.Marshal(u)
	if werr := os.WriteFile(*out, b, 0o644); werr != nil {
		fmt.Fprintln(os.Stderr, "rusage:", werr)
		os.Exit(1)
	}
	if err != nil {
		if u.ExitCode > 0 {
			os.Exit(u.ExitCode)
		}
		os.Exit(1)
	}
}
