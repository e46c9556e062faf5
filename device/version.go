package device

import (
	"runtime/debug"
	"sync"
)

// modulePath is this library's module.
const modulePath = "github.com/gaudi-go/gaudi"

// Version returns the version of this library as the Go toolchain
// recorded it in the binary: the module version a program depends on
// ("v1.2.0"), or, when the library is the main module, "(devel)" followed
// by the VCS revision the binary was built from ("(devel)-0123456789ab",
// with "-dirty" for uncommitted changes) when the build recorded one. It
// is "unknown" in binaries built without module information. It replaces
// hlthunk_get_version; the result is plain Go memory, so nothing needs
// freeing.
func Version() string { return version() }

var version = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return versionFrom(info)
})

// versionFrom picks the library's version out of build information.
func versionFrom(info *debug.BuildInfo) string {
	for _, dep := range info.Deps {
		if dep.Path == modulePath {
			if dep.Replace != nil && dep.Replace.Version != "" {
				return dep.Replace.Version
			}
			return dep.Version
		}
	}
	if info.Main.Path != modulePath {
		return "unknown"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if v != "(devel)" || rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v += "-" + rev
	if dirty {
		v += "-dirty"
	}
	return v
}
