package device

import (
	"runtime/debug"
	"testing"
)

func TestVersionFrom(t *testing.T) {
	rev := func(r, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: r}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tt := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{
		{"dependency", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: "golang.org/x/sys", Version: "v0.30.0"}, {Path: modulePath, Version: "v1.2.0"}}}, "v1.2.0"},
		{"replaced dependency", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v1.2.0", Replace: &debug.Module{Path: "../gaudi", Version: "v1.2.1"}}}}, "v1.2.1"},
		{"main with revision", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"},
			Settings: rev("0123456789abcdef0123", "false")}, "(devel)-0123456789ab"},
		{"main dirty", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"},
			Settings: rev("abc", "true")}, "(devel)-abc-dirty"},
		{"main tagged", debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v2.0.0"},
			Settings: rev("abc", "false")}, "v2.0.0"},
		{"main without vcs", debug.BuildInfo{Main: debug.Module{Path: modulePath}}, "(devel)"},
		{"absent", debug.BuildInfo{Main: debug.Module{Path: "example.com/app"}}, "unknown"},
	} {
		if got := versionFrom(&tt.info); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	if Version() == "" {
		t.Error("empty Version")
	}
}
