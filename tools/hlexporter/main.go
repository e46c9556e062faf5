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
//	hlexporter -version
//
// It reads the devices at every scrape, through their control nodes, so
// it never takes a device from a workload. It is a program of its own
// rather than an hlinfo mode: it runs as a daemon that serves HTTP, and
// it is the only tool that links the Prometheus client library.
package main

import (
	"context"
	"errors"
	"flag"
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

	"github.com/gaudi-go/gaudi/device"
	"github.com/gaudi-go/gaudi/tools/internal/devstat"
)

const usage = `usage: hlexporter [-listen ADDR] [-device SEL] [-habana-names=false]
       hlexporter -version

Serves the Gaudi devices (or the simulator's) as Prometheus metrics at
/metrics, with the names and labels of Habana's metric exporter.

Environment:
  GAUDI_DEVICE       default for -device: N, PCI address, module:N, /dev path,
                     chip name (gaudi2), sim or sim:N; empty: every device
  GAUDI_SIM          shape of the simulator, such as gaudi2:8 (the default)
  GAUDI_SIM_LOCKDIR  lock directory shared by processes using the simulator

Flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Stdout, os.Stderr, os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hlexporter:", err)
		os.Exit(1)
	}
}

// config is what the command line asks for.
type config struct {
	listen      string
	opts        devstat.Options
	habanaNames bool
}

func parse(args []string, stderr io.Writer, getenv func(string) string) (*config, bool, error) {
	fs := flag.NewFlagSet("hlexporter", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	c := &config{}
	// 41611 is the port of Habana's exporter (Intel Gaudi documentation,
	// "Prometheus Metric Exporter").
	fs.StringVar(&c.listen, "listen", ":41611", "address to serve /metrics on")
	fs.StringVar(&c.opts.Selector, "device", getenv("GAUDI_DEVICE"), "devices to export, in GAUDI_DEVICE's grammar (default $GAUDI_DEVICE; empty: all)")
	fs.BoolVar(&c.habanaNames, "habana-names", true, "keep Habana's metric names where promtool's lint rejects them (habanalabs_power_mW, habanalabs_power_default_limit_mW, habanalabs_pcie_replay_count); false: habanalabs_power_mw, habanalabs_power_default_limit_mw, habanalabs_pcie_replays")
	fs.StringVar(&c.opts.Root, "root", "", "read sys/ and proc/ below this directory instead of /")
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return nil, false, err
	}
	if fs.NArg() > 0 {
		return nil, false, fmt.Errorf("unexpected argument %q (see -h)", fs.Arg(0))
	}
	return c, *version, nil
}

func run(ctx context.Context, stdout, stderr io.Writer, args []string, getenv func(string) string) error {
	c, version, err := parse(args, stderr, getenv)
	if err != nil {
		return err
	}
	if version {
		_, err := fmt.Fprintf(stdout, "hlexporter %s\n", device.Version())
		return err
	}
	// A selector that cannot work is an error now, not at every scrape.
	if _, err := devstat.Collect(c.opts); err != nil {
		return err
	}
	l, err := net.Listen("tcp", c.listen)
	if err != nil {
		return err
	}
	log.SetOutput(stderr)
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
