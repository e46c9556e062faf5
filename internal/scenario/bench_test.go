package scenario

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/dma"
	"github.com/gaudi-go/gaudi/internal/hlsimproto"
	"github.com/gaudi-go/gaudi/internal/hlsimtest"
	"github.com/gaudi-go/gaudi/memory"
	"github.com/gaudi-go/gaudi/sim"
	"github.com/gaudi-go/gaudi/simdevice"
)

// Benchmarks of the served node against the simulator in the process:
// what a system call through FUSE to hlsim costs per ioctl, with one and
// several client processes, and host-to-device bandwidth.

// benchBackends returns the two ways to open device i of a fresh Gaudi2
// server of n devices.
func benchBackends(b *testing.B, n int) []backend {
	cfg := sim.Default(sim.Gaudi2, n)
	cfg.LockDir = b.TempDir()
	sys, err := sim.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sys.Close() })
	in := backend{name: "in-process", asic: device.Gaudi2,
		open: func(t testing.TB, i int, control bool) (*device.Device, error) {
			if control {
				return simdevice.OpenSimControl(sys.Device(i))
			}
			return simdevice.OpenSim(sys.Device(i))
		}}
	bs := []backend{in}
	if os.Geteuid() == 0 {
		s := hlsimtest.Serve(b, fmt.Sprintf("gaudi2:%d", n))
		bs = append(bs, backend{name: "served", asic: device.Gaudi2,
			open: func(t testing.TB, i int, control bool) (*device.Device, error) {
				if control {
					return device.OpenControl(s.Node(i, true))
				}
				return device.Open(s.Node(i, false))
			}})
	}
	return bs
}

// BenchmarkIoctl is one INFO (DEVICE_STATUS) per op on the compute node,
// and one 4 KiB host-to-device copy (CS and WAIT_CS) per op.
func BenchmarkIoctl(b *testing.B) {
	for _, be := range benchBackends(b, 1) {
		if be.name == "served" {
			// The transport alone: hlsim's Hello, which the server
			// answers without the simulator.
			b.Run("served/Hello", func(b *testing.B) {
				c := be.mustOpen(b, 0, true)
				f, err := os.OpenFile(c.Path(), os.O_RDWR, 0)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				var h hlsimproto.Hello
				b.ReportAllocs()
				for b.Loop() {
					if err := hello(f.Fd(), &h); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(be.name+"/INFO", func(b *testing.B) {
			d := be.mustOpen(b, 0, false)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Status(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(be.name+"/Copy4KiB", func(b *testing.B) {
			d := be.mustOpen(b, 0, false)
			m, e := benchEngine(b, d)
			h, err := m.AllocHost(4096, memory.HostOptions{})
			if err != nil {
				b.Fatal(err)
			}
			buf, err := m.Alloc(4096, memory.AllocOptions{})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := e.CopyToDevice(ctx, buf.Range(0, 4096), h.Range(0, 4096)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchEngine(b *testing.B, d *device.Device) (*memory.Manager, *dma.Engine) {
	m, err := memory.New(d, memory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	e, err := dma.New(m, dma.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return m, e
}

// BenchmarkCopyToDevice64MiB is host-to-device bandwidth, 64 MiB per op.
func BenchmarkCopyToDevice64MiB(b *testing.B) {
	const size = 64 << 20
	for _, be := range benchBackends(b, 1) {
		b.Run(be.name, func(b *testing.B) {
			d := be.mustOpen(b, 0, false)
			m, e := benchEngine(b, d)
			h, err := m.AllocHost(size, memory.HostOptions{})
			if err != nil {
				b.Fatal(err)
			}
			pattern(h.Bytes(), 5)
			buf, err := m.Alloc(size, memory.AllocOptions{})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				if err := e.CopyToDevice(ctx, buf.Range(0, size), h.Range(0, size)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// envBenchClient makes this binary a benchmark client: "PATH N" opens the
// control node at PATH and runs INFO DEVICE_STATUS N times, then prints
// the nanoseconds they took.
const envBenchClient = "SCENARIO_BENCH_CLIENT"

func init() {
	v := os.Getenv(envBenchClient)
	if v == "" {
		return
	}
	path, nstr, _ := strings.Cut(v, " ")
	n, _ := strconv.Atoi(nstr)
	d, err := device.OpenControl(path)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	start := time.Now()
	for range n {
		if _, err := d.Status(); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	}
	fmt.Println(time.Since(start).Nanoseconds())
	os.Exit(0)
}

// BenchmarkServedClients is INFO latency on a served control node with
// 1 and 4 client processes calling at once: ns/op is the mean time of one
// call as a client sees it.
func BenchmarkServedClients(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("serving devices needs root")
	}
	s := hlsimtest.Serve(b, "gaudi2:1")
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for _, clients := range []int{1, 4} {
		b.Run(fmt.Sprint(clients), func(b *testing.B) {
			b.ReportAllocs()
			cmds := make([]*exec.Cmd, clients)
			outs := make([]*strings.Builder, clients)
			for i := range cmds {
				cmds[i] = exec.Command(exe, "-test.run=^$")
				cmds[i].Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", envBenchClient, s.Node(0, true), b.N))
				outs[i] = &strings.Builder{}
				cmds[i].Stdout = outs[i]
			}
			b.ResetTimer()
			for _, c := range cmds {
				if err := c.Start(); err != nil {
					b.Fatal(err)
				}
			}
			var total int64
			for i, c := range cmds {
				if err := c.Wait(); err != nil {
					b.Fatalf("client: %v: %s", err, outs[i])
				}
				ns, err := strconv.ParseInt(strings.TrimSpace(outs[i].String()), 10, 64)
				if err != nil {
					b.Fatalf("client said %q", outs[i])
				}
				total += ns
			}
			b.StopTimer()
			b.ReportMetric(float64(total)/float64(clients)/float64(b.N), "ns/call")
		})
	}
}
