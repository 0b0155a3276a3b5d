package main

import (
	"errors"
	"flag"
	"log/slog"
	"sync"
)

// logConfig is where every subcommand's logger comes from: newFlags binds
// --log-format and --log-level on each FlagSet, and env.logger() builds the
// one *slog.Logger (on stderr) that the command hands to the libraries.
// Library Options take a *slog.Logger; nil there means discard.
type logConfig struct {
	json  bool
	level slog.Level

	once sync.Once // the logger is built once: handlers share stderr
	l    *slog.Logger
}

var errLogFormat = errors.New("want text or json")

// bindLogFlags adds --log-format and --log-level to fs. A bad value is a
// flag parse error, so it exits 2 naming the flag.
func bindLogFlags(fs *flag.FlagSet, env *cmdEnv) {
	c := env.logConfig()
	fs.Func("log-format", "format of log lines on stderr: text or json (default text)", func(s string) error {
		switch s {
		case "text":
			c.json = false
		case "json":
			c.json = true
		default:
			return errLogFormat
		}
		return nil
	})
	fs.Func("log-level", "lowest level logged: debug, info, warn or error (default info)", func(s string) error {
		switch s {
		case "debug", "info", "warn", "error":
			return c.level.UnmarshalText([]byte(s))
		}
		return errors.New("want debug, info, warn or error")
	})
}

// logger returns the command's logger, writing to stderr in the chosen
// format at the chosen level. The report and progress on stdout are the
// command's output, not logging: they do not go through it.
func (env *cmdEnv) logger() *slog.Logger {
	c := env.logConfig()
	c.once.Do(func() {
		o := &slog.HandlerOptions{Level: c.level}
		if c.json {
			c.l = slog.New(slog.NewJSONHandler(env.stderr, o))
		} else {
			c.l = slog.New(slog.NewTextHandler(env.stderr, o))
		}
	})
	return c.l
}

// logConfig returns env's log configuration, made on first use (before the
// command starts goroutines). A pointer, so that copies of env share it.
func (env *cmdEnv) logConfig() *logConfig {
	if env.log == nil {
		env.log = new(logConfig)
	}
	return env.log
}
