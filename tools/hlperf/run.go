package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/internal/cli"
	"golang.org/x/sys/unix"
)

// run opens the devices the configuration selects, checks that the run
// fits them and the host, and measures each device, in turn or at once.
// It returns an error without a report when nothing was measured (a bad
// selection, a device that cannot be opened, a run that does not fit);
// failures of one device are in its report.
func run(ctx context.Context, cfg *config, cmd *cli.Command) (*report, error) {
	sel, err := cmd.Device.Selection()
	if err != nil {
		return nil, err
	}
	rep := newReport(cfg, sel)
	devs, err := openDevices(cfg, sel, rep, cmd.Stderr)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, d := range devs {
			d.Close()
		}
	}()
	for _, d := range devs {
		fmt.Fprintf(cmd.Stderr, "hlperf: using %s, %s\n", d, sel.Why(d))
	}
	if err := checkDevices(cfg, devs); err != nil {
		return nil, err
	}
	rep.Devices = make([]deviceReport, len(devs))
	for i, d := range devs {
		rep.Devices[i] = describe(d)
	}
	prog := newProgress(cmd.Stderr, cfg, len(devs))
	results := make([][]result, len(devs))
	measureOne := func(i int) {
		res, err := measureDevice(ctx, cfg, devs[i], &rep.Devices[i], prog)
		results[i] = res
		if err != nil {
			rep.Devices[i].Error = cli.ErrorText(err)
		}
	}
	if cfg.parallel {
		var wg sync.WaitGroup
		for i := range devs {
			wg.Go(func() { measureOne(i) })
		}
		wg.Wait()
	} else {
		for i := range devs {
			if ctx.Err() != nil {
				break
			}
			measureOne(i)
		}
	}
	prog.clear()
	rep.Interrupted = ctx.Err() != nil
	for i := range devs {
		rep.Results = append(rep.Results, results[i]...)
		dr := &rep.Devices[i]
		if dr.Error != "" {
			fmt.Fprintf(cmd.Stderr, "hlperf: %s: %s\n", dr.Path, dr.Error)
		}
		judgeDevice(dr, results[i], cfg.passFraction)
	}
	summarizeRun(cfg, rep, results)
	return rep, nil
}

// newReport starts the report of a run: its metadata.
func newReport(cfg *config, sel cli.Selection) *report {
	host, _ := os.Hostname()
	from := sel.From
	if from == "" {
		from = "default"
	}
	r := &report{
		SchemaVersion: schemaVersion,
		Tool:          "hlperf",
		ToolVersion:   cli.Version(),
		Time:          time.Now().UTC().Format(time.RFC3339),
		Hostname:      host,
		Config: configReport{
			DeviceSelector: sel.Text, SelectorSource: from,
			Directions: cfg.dirs, MinBytes: uint64(cfg.min), MaxBytes: uint64(cfg.max),
			Warmup: cfg.warmup, Streams: cfg.streams, Verify: cfg.verify, All: cfg.all, Parallel: cfg.parallel,
			PassFraction: cfg.passFraction,
		},
		Devices:   []deviceReport{},
		Results:   []result{},
		Skipped:   []skipped{},
		Aggregate: []aggregate{},
	}
	if cfg.duration > 0 {
		r.Config.DurationS = cfg.duration.Seconds()
	} else {
		r.Config.Iterations = cfg.iters
	}
	return r
}

// openDevices opens the compute node of every device the run uses: the
// one sel opens, or with -all every one it names that is free: a device
// another process holds (EBUSY) is skipped and named on stderr, and only
// when every one is busy is that an error. The skipped devices are listed
// in rep.
func openDevices(cfg *config, sel cli.Selection, rep *report, stderr io.Writer) ([]*device.Device, error) {
	if !cfg.all {
		d, err := sel.Open()
		if err != nil {
			return nil, err
		}
		return []*device.Device{d}, nil
	}
	cands, err := sel.Devices()
	if err != nil {
		return nil, err
	}
	var devs []*device.Device
	for _, c := range cands {
		d, err := c.Open()
		if errors.Is(err, unix.EBUSY) {
			fmt.Fprintf(stderr, "hlperf: -all: skipping %s: %s\n", c.Name, cli.ErrorText(err))
			rep.Skipped = append(rep.Skipped, skipped{Path: c.Name, Reason: cli.ErrorText(err)})
			continue
		}
		if err != nil {
			for _, d := range devs {
				d.Close()
			}
			return nil, fmt.Errorf("-all: open %s: %w", c.Name, err)
		}
		devs = append(devs, d)
	}
	if len(devs) == 0 {
		what := "every device"
		if !sel.Default() {
			what += " " + sel.Text + " names"
		}
		return nil, fmt.Errorf("-all: %s is busy: %w", what, unix.EBUSY)
	}
	return devs, nil
}

// describe reports what identifies d.
func describe(d *device.Device) deviceReport {
	addr, _ := d.PCIAddress()
	driver, version := cli.DriverOf(d)
	return deviceReport{
		Device:        d.String(),
		Path:          d.Path(),
		ASIC:          d.ASIC().String(),
		PCIAddress:    addr,
		ModuleID:      d.HWIPInfo().ModuleID,
		Driver:        driver,
		DriverVersion: version,
		Simulated:     d.Simulated(),
	}
}

// asicStreams is how many streams per direction hlperf can use on an
// ASIC: Gaudi's PCI DMA engines have four queues each (DMA_0_0 to
// DMA_0_3); Gaudi2's driver enables two user PDMA streams host to device
// (PDMA_0_0, PDMA_0_1; gaudi2_is_queue_enabled), which dma.New uses at
// most; a Gaudi3 Engine claims up to four of the PDMA channels the driver
// gives users.
func asicStreams(a device.ASIC) int {
	if a.IsGaudi2() {
		return 2
	}
	return maxStreams
}

// memAvailable returns the host's MemAvailable; tests replace it.
var memAvailable = func() (uint64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: MemAvailable %q", rest)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("/proc/meminfo has no MemAvailable")
}

// checkDevices refuses, before any work, what the opened devices cannot
// do: more streams than the ASIC has, buffers beyond the free device
// memory, or beyond the host memory available for the pinned host
// buffers and, on the simulator, for the device memory it keeps in host
// memory (for -parallel, the sum over the devices).
func checkDevices(cfg *config, devs []*device.Device) error {
	hosts, ndev := cfg.buffers()
	size := uint64(cfg.max)
	var hostNeed, simDev uint64
	for _, d := range devs {
		if n := asicStreams(d.ASIC()); cfg.streams > n {
			return fmt.Errorf("-streams %d: %s has %d DMA streams per direction for users", cfg.streams, d.ASIC(), n)
		}
		page := max(d.HWIPInfo().DRAMPageSize, 1)
		need := uint64(ndev) * ((size + page - 1) / page * page)
		if u, err := d.DRAMUsage(); err == nil && need > u.Free {
			return fmt.Errorf("-max %s: the run needs %s of device memory (%s of %s, in pages of %s); %s has %s free",
				cli.FormatSize(size), cli.HumanSize(need), count(ndev, "device buffer"), cli.FormatSize(size), cli.HumanSize(page), d, cli.HumanSize(u.Free))
		}
		n := uint64(hosts) * size
		if d.Simulated() {
			n += uint64(ndev) * size
			simDev = uint64(ndev)
		}
		if cfg.parallel {
			hostNeed += n
		} else {
			hostNeed = max(hostNeed, n)
		}
	}
	avail, err := memAvailable()
	if err != nil || hostNeed <= avail {
		return nil // without MemAvailable, let the allocation tell
	}
	what := fmt.Sprintf("%s of %s", count(hosts, "host buffer"), cli.FormatSize(size))
	if simDev > 0 {
		what += fmt.Sprintf(" and %s of %s, which the simulator keeps in host memory", count(int(simDev), "simulated device buffer"), cli.FormatSize(size))
	}
	if cfg.parallel && len(devs) > 1 {
		what += fmt.Sprintf(", for each of %d devices at once", len(devs))
	}
	return fmt.Errorf("-max %s: the run needs %s of host memory (%s); this machine has %s available (MemAvailable)",
		cli.FormatSize(size), cli.HumanSize(hostNeed), what, cli.HumanSize(avail))
}

// count writes n things: "1 host buffer", "2 host buffers".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
