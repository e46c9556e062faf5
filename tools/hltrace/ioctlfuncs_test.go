package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// withKallsyms gives a fake system a kallsyms file with these lines.
func withKallsyms(t *testing.T, s system, lines ...string) system {
	t.Helper()
	if err := os.WriteFile(s.kallsyms, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFindFuncs(t *testing.T) {
	const root = "000001ffffffffff"
	gaudi := []string{
		"ffffffffc0a01000 t hl_ioctl_control\t[habanalabs]",
		"ffffffffc0a02000 t hl_info_ioctl\t[habanalabs]",
		"ffffffffc0800000 T drm_ioctl\t[drm]",
		"ffffffff81000000 T _stext",
	}
	for _, tc := range []struct {
		name        string
		lines       []string
		names       []string
		found, miss []string
		err         string // error text, or "" for success
	}{
		{"defaults on 6.12 with habanalabs", gaudi, nil, []string{"hl_ioctl_control", "drm_ioctl"}, []string{"hl_ioctl"}, ""},
		{"defaults, out-of-tree driver", []string{"ffffffffc0a01000 t hl_ioctl\t[habanalabs]"}, nil,
			[]string{"hl_ioctl"}, []string{"hl_ioctl_control", "drm_ioctl"}, ""},
		{"defaults, no driver", []string{"ffffffff81000000 T _stext"}, nil, nil, nil,
			"none of hl_ioctl, hl_ioctl_control, drm_ioctl is in"},
		{"named", []string{"ffffffffc0900000 t ib_uverbs_ioctl\t[ib_uverbs]"}, []string{"ib_uverbs_ioctl"},
			[]string{"ib_uverbs_ioctl"}, nil, ""},
		{"named, one missing", gaudi, []string{"hl_ioctl_control", "ib_uverbs_ioctl"}, nil, nil,
			"ib_uverbs_ioctl not in"},
		{"a data symbol is not a function", []string{"ffffffffc0900000 d ib_uverbs_ioctl\t[ib_uverbs]"}, []string{"ib_uverbs_ioctl"},
			nil, nil, "ib_uverbs_ioctl not in"},
		{"suffixed clones do not count", []string{"ffffffffc0900000 t drm_ioctl.cold\t[drm]"}, []string{"drm_ioctl"},
			nil, nil, "drm_ioctl not in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := withKallsyms(t, fakeSystem(t, root, true, false, nil), tc.lines...)
			found, miss, err := s.findFuncs(tc.names)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrNoFunc) {
					t.Fatalf("got %v, %v, %v; want an ErrNoFunc containing %q", found, miss, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.found, found); d != "" {
				t.Errorf("found (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.miss, miss); d != "" {
				t.Errorf("missing (-want +got):\n%s", d)
			}
		})
	}

	t.Run("unreadable kallsyms", func(t *testing.T) {
		s := fakeSystem(t, root, true, false, nil)
		s.kallsyms += ".absent"
		if _, _, err := s.findFuncs(nil); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("got %v, want a not-exist error", err)
		}
	})
}

func TestIoctlFuncMajors(t *testing.T) {
	for name, want := range map[string]uint32{"drm_ioctl": 261, "hl_ioctl_control": 0, "hl_ioctl": 0} {
		if got := ioctlFuncMajors[name]; got != want {
			t.Errorf("major of %s = %d, want %d", name, got, want)
		}
	}
}

func TestExplainFuncError(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("load program: %w", err) }
	for _, tc := range []struct {
		name    string
		mode    string
		err     error
		want    string
		wantErr error
	}{
		{"fentry EPERM", ProbeFentry, wrap(unix.EPERM), "security policy", ErrNoFentry},
		{"fentry EINVAL", ProbeFentry, wrap(unix.EINVAL), "refused fentry/fexit on f", ErrNoFentry},
		{"fentry ENOTSUPP", ProbeFentry, wrap(enotsupp), "BPF trampolines", ErrNoFentry},
		{"fentry not supported", ProbeFentry, wrap(ebpf.ErrNotSupported), "BPF trampolines", ErrNoFentry},
		{"fentry no BTF", ProbeFentry, wrap(btf.ErrNotFound), "no BTF for it", ErrNoFentry},
		{"kprobe missing symbol", ProbeKprobe, wrap(os.ErrNotExist), "kprobe on f", ErrNoFunc},
		{"kprobe not supported", ProbeKprobe, wrap(ebpf.ErrNotSupported), "kprobe on f", ErrNoKprobes},
		{"kprobe EINVAL", ProbeKprobe, wrap(unix.EINVAL), "blacklisted", ErrNoKprobes},
		{"other", ProbeKprobe, wrap(unix.ENOMEM), "kprobe on f: load program", unix.ENOMEM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := explainFuncError(tc.mode, "f", tc.err)
			if !strings.Contains(err.Error(), tc.want) || !errors.Is(err, tc.wantErr) {
				t.Errorf("got %v; want %v containing %q", err, tc.wantErr, tc.want)
			}
			if cause := errors.Unwrap(tc.err); !errors.Is(err, cause) {
				t.Errorf("%v lost the cause %v", err, cause)
			}
		})
	}
}

func TestOpenFuncsNeedFuncMode(t *testing.T) {
	for _, mode := range []string{"", ProbeAuto, ProbeTracepoint, ProbeRaw} {
		tr, err := Open(Options{Probe: mode, IoctlFuncs: []string{"hl_ioctl_control"}})
		if err == nil {
			tr.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "-func") {
			t.Errorf("probe %q with -func: %v, want an error about -func", mode, err)
		}
	}
}
