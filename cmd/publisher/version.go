package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/opencarte/publisher/cmd/publisher/envflag"
)

// versionCommand prints what the binary was built from, read from its build information.
func versionCommand(_ context.Context, args []string, stdout, _ io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: publisher version\n\n"+
			"Prints the module version, the VCS revision (and whether the tree had uncommitted changes),\n"+
			"the commit time and the Go version this binary was built from. --version is the same.\n")
	}
	if err := envflag.Parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return envflag.Usagef("version", "takes no arguments, got %q", fs.Args())
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return errors.New("version: the binary holds no build information")
	}
	_, err := io.WriteString(stdout, versionText(info))
	return err
}

// versionText is what version prints of info: one line of each, the module version first.
func versionText(info *debug.BuildInfo) string {
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	var b strings.Builder
	fmt.Fprintf(&b, "publisher %s\n", cmp.Or(info.Main.Version, "(unknown version)"))
	switch rev := settings["vcs.revision"]; {
	case rev == "":
		b.WriteString("revision: unknown (built outside a version-controlled tree, or with -buildvcs=false)\n")
	case settings["vcs.modified"] == "true":
		fmt.Fprintf(&b, "revision: %s (modified: built with uncommitted changes)\n", rev)
	default:
		fmt.Fprintf(&b, "revision: %s\n", rev)
	}
	if t := settings["vcs.time"]; t != "" {
		fmt.Fprintf(&b, "commit time: %s\n", t)
	}
	fmt.Fprintf(&b, "go: %s", info.GoVersion)
	if goos, arch := settings["GOOS"], settings["GOARCH"]; goos != "" && arch != "" {
		fmt.Fprintf(&b, " %s/%s", goos, arch)
	}
	b.WriteString("\n")
	return b.String()
}
