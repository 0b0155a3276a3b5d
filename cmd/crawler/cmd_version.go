package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

func init() {
	register(&command{name: "version", summary: "print the version, Go version and source revision of this binary", run: runVersion})
}

// version and revision are set by image builds that have no VCS metadata
// (deploy/build.sh, deploy/Dockerfile.multistage):
//
//	go build -ldflags "-X main.version=v1.2.3 -X main.revision=abc123"
//
// Empty, they come from the module's build info.
var version, revision string

// buildVersion is what `crawler version` prints and sextant_build_info
// exports.
type buildVersion struct {
	Version   string // module version, "(devel)" for a plain checkout build
	GoVersion string
	Revision  string // VCS revision, "unknown" if neither stamped nor set
	Modified  bool   // the work tree had uncommitted changes
}

// readBuildVersion merges the -X values over runtime/debug's build info.
func readBuildVersion() buildVersion {
	v := buildVersion{Version: "(devel)", GoVersion: runtime.Version(), Revision: "unknown"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		v.Version = version
	}
	if revision != "" {
		v.Revision, v.Modified = revision, false
	}
	return v
}

func runVersion(_ context.Context, env *cmdEnv, args []string) error {
	f := newFlags(env, "version", `

Prints the version (set by the image build with -ldflags -X main.version,
else the module version from the build info), the Go version and the source
revision (-X main.revision, else the VCS stamp of the build).`)
	if err := f.parse(args); err != nil {
		return err
	}
	v := readBuildVersion()
	rev := v.Revision
	if v.Modified {
		rev += " (modified)"
	}
	fmt.Fprintf(env.stdout, "crawler %s\ngo %s\nrevision %s\n", v.Version, v.GoVersion, rev)
	return nil
}
