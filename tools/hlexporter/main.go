// Command hlexporter serves the Gaudi devices of this machine (or the
// simulator's) as Prometheus metrics, under the names and labels of Habana's
// metric exporter (habanalabs_power_mW, habanalabs_temperature_onchip,
// habanalabs_memory_used_bytes, ... with Serial, UUID, device, id, ...), so
// that dashboards built for it keep working; collector.go lists the names,
// their source and where this exporter differs.
//
// Usage:
//
//	hlexporter [-listen ADDR] [-device SEL] [-habana-names=false]
//	hlexporter -h | -version
//
// -device, and GAUDI_DEVICE without it, select the devices as in every
// command of this module (internal/cli); by default every Gaudi, else the
// simulator's devices. It reads the devices at every scrape, through their control nodes, so
// it never takes a device from a workload. It is a program of its own
// rather than an hlinfo mode: it runs as a daemon that serves HTTP, and
// it is the only tool that links the Prometheus client library.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gaudi-go/gaudi/internal/cli"
	"github.com/gaudi-go/gaudi/tools/internal/devstat"
)

const (
	synopsis = "hlexporter [-listen ADDR] [-device SEL] [-habana-names=false]"
	doc      = `hlexporter serves the Gaudi devices -device names (by default every one, else the simulator's)
as Prometheus metrics at /metrics, with the names and labels of Habana's metric exporter. It
reads the devices at every scrape, through their control nodes, so it never takes a device from
a workload.`
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cmd, c := newCommand(os.Stdout, os.Stderr)
	code := cmd.Report(run(ctx, cmd, c, os.Args[1:]))
	stop()
	os.Exit(code)
}

// config is what the command line asks for.
type config struct {
	listen      string
	opts        devstat.Options
	habanaNames bool
}

// newCommand returns hlexporter's command line, writing to stdout and
// stderr, and the configuration its flags fill.
func newCommand(stdout, stderr io.Writer) (*cli.Command, *config) {
	cmd := cli.New("hlexporter", synopsis, doc)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	c := &config{}
	fs := cmd.Flags
	// 41611 is the port of Habana's exporter (Intel Gaudi documentation,
	// "Prometheus Metric Exporter").
	fs.StringVar(&c.listen, "listen", ":41611", "serve /metrics on `ADDR` (host:port)")
	fs.BoolVar(&c.habanaNames, "habana-names", true, "keep Habana's metric names where promtool's lint rejects them (habanalabs_power_mW,\n"+
		"habanalabs_power_default_limit_mW, habanalabs_pcie_replay_count); false: habanalabs_power_mw,\n"+
		"habanalabs_power_default_limit_mw, habanalabs_pcie_replays")
	fs.StringVar(&c.opts.Root, "root", "", "read sys/ and proc/ below `DIR` instead of /")
	return cmd, c
}

// run is hlexporter with its command line: it parses args, checks that
// the selection names devices, and serves until ctx ends.
func run(ctx context.Context, cmd *cli.Command, c *config, args []string) error {
	if err := cmd.Parse(args); err != nil {
		return err
	}
	if cmd.Flags.NArg() > 0 {
		return cmd.UsageError("unexpected argument %q", cmd.Flags.Arg(0))
	}
	sel, err := cmd.Device.Selection()
	if err != nil {
		return err // a bad GAUDI_DEVICE
	}
	c.opts.Selection = sel
	// A selector that cannot work is an error now, not at every scrape.
	if _, err := devstat.Collect(c.opts); err != nil {
		return err
	}
	l, err := net.Listen("tcp", c.listen)
	if err != nil {
		return err
	}
	log.SetOutput(cmd.Stderr)
	log.SetFlags(0)
	log.Printf("hlexporter: serving http://%s/metrics", l.Addr())
	return serve(ctx, l, c)
}

// handler serves /metrics and a page that points at it.
func handler(c *config) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(c.opts, c.habanaNames),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "hlexporter: Gaudi metrics at /metrics")
	})
	return mux
}

// serve serves on l until ctx ends, then shuts down.
func serve(ctx context.Context, l net.Listener, c *config) error {
	srv := &http.Server{Handler: handler(c), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
