package main

// schemaVersion is the version of the JSON and CSV layouts: it changes
// when a field changes meaning or goes away.
//
// 2: devices[].driver names the driver's flavour as hlinfo does, and
// devices[].driver_version is null for a simulated device (it was "sim");
// devices[].outcome, skipped and aggregate are new, and a failed verdict
// makes the exit status 1.
const schemaVersion = 2

// report is everything one run of hlperf found.
type report struct {
	SchemaVersion int            `json:"schema_version"`
	Tool          string         `json:"tool"`
	ToolVersion   string         `json:"tool_version"`
	Time          string         `json:"time"` // start, RFC 3339, UTC
	Hostname      string         `json:"hostname"`
	Config        configReport   `json:"config"`
	Interrupted   bool           `json:"interrupted"` // Ctrl-C: the results so far
	Devices       []deviceReport `json:"devices"`
	Results       []result       `json:"results"`
	// Skipped lists the devices -all named that another process owned.
	Skipped []skipped `json:"skipped"`
	// Aggregate is, with -parallel, the devices' bandwidth together.
	Aggregate []aggregate `json:"aggregate"`
}

// failed reports whether a device failed: it could not be measured, a
// verification failed, or its verdict failed (outcome).
func (r *report) failed() bool {
	for _, d := range r.Devices {
		if d.Outcome.Result == "fail" {
			return true
		}
	}
	return false
}

// configReport is the configuration, as the JSON reports it.
type configReport struct {
	DeviceSelector string   `json:"device_selector"` // "" for the default
	SelectorSource string   `json:"selector_source"` // "-device", "GAUDI_DEVICE" or "default"
	Directions     []string `json:"directions"`
	MinBytes       uint64   `json:"min_bytes"`
	MaxBytes       uint64   `json:"max_bytes"`
	Iterations     int      `json:"iterations"` // 0 with a duration
	DurationS      float64  `json:"duration_s"` // 0 with an iteration count
	Warmup         int      `json:"warmup"`
	Streams        int      `json:"streams"`
	Verify         bool     `json:"verify"`
	All            bool     `json:"all"`
	Parallel       bool     `json:"parallel"`
	PassFraction   float64  `json:"pass_fraction"`
}

// deviceReport describes one device of the run.
type deviceReport struct {
	Device     string `json:"device"` // as the library names it: "GAUDI2 module 0 (sim:accel0)"
	Path       string `json:"path"`
	ASIC       string `json:"asic"`
	PCIAddress string `json:"pci_address"`
	ModuleID   uint32 `json:"module_id"`
	// Driver is the driver's flavour, "upstream" or "out-of-tree", and
	// DriverVersion its version, as hlinfo reports them (cli.DriverOf);
	// each null when unknown, the version null for a simulated device.
	Driver        *string     `json:"driver"`
	DriverVersion *string     `json:"driver_version"`
	Simulated     bool        `json:"simulated"`
	PCIeLink      *linkReport `json:"pcie_link"` // null when unknown (always for the simulator)
	Verdict       verdict     `json:"verdict"`
	// Outcome is the device's result: pass, fail, none or interrupted,
	// and why.
	Outcome outcome `json:"outcome"`
	Error   string  `json:"error,omitempty"` // the device could not be measured (whole or in part)
}

// linkReport is a PCIe link, as the JSON reports it.
type linkReport struct {
	Generation      int     `json:"generation"`
	SpeedGTs        float64 `json:"speed_gt_per_s"`
	Width           int     `json:"width"`
	MaxGeneration   int     `json:"max_generation,omitempty"`
	MaxWidth        int     `json:"max_width,omitempty"`
	BandwidthGBps   float64 `json:"bandwidth_gb_per_s"` // per direction, after line encoding
	BelowMaximum    bool    `json:"below_maximum"`
	LinkDescription string  `json:"description"`
}

// result is one measured point: a direction and a size on one device.
type result struct {
	Device         string `json:"device"` // path, as in devices[].path
	Simulated      bool   `json:"simulated"`
	Direction      string `json:"direction"`
	SizeBytes      uint64 `json:"size_bytes"`
	BytesPerSample uint64 `json:"bytes_per_sample"` // size_bytes, times 2 for bidir
	Samples        int    `json:"samples"`
	// Partial is set for the point Ctrl-C interrupted: fewer samples
	// than asked for.
	Partial             bool     `json:"partial"`
	BandwidthMedianGBps float64  `json:"bandwidth_median_gb_per_s"`
	BandwidthMeanGBps   float64  `json:"bandwidth_mean_gb_per_s"`
	LatencyMinUs        float64  `json:"latency_min_us"`
	LatencyMedianUs     float64  `json:"latency_median_us"`
	LatencyMeanUs       float64  `json:"latency_mean_us"`
	LatencyP99Us        *float64 `json:"latency_p99_us"` // null below 100 samples
	LatencyMaxUs        float64  `json:"latency_max_us"`
	Verified            *bool    `json:"verified"` // null without -verify
	VerificationError   string   `json:"verification_error,omitempty"`
}

// us converts a duration to microseconds.
func us[T ~int64](d T) float64 { return float64(d) / 1e3 }

// newResult fills a result from the summary of its samples.
func newResult(dev *deviceReport, dir string, size uint64, s summary) result {
	r := result{
		Device: dev.Path, Simulated: dev.Simulated, Direction: dir, SizeBytes: size,
		BytesPerSample:      size * uint64(copies(dir)),
		Samples:             s.N,
		BandwidthMedianGBps: s.BandwidthMedian / 1e9,
		BandwidthMeanGBps:   s.BandwidthMean / 1e9,
		LatencyMinUs:        us(s.Min),
		LatencyMedianUs:     us(s.Median),
		LatencyMeanUs:       us(s.Mean),
		LatencyMaxUs:        us(s.Max),
	}
	if s.HasP99 {
		p := us(s.P99)
		r.LatencyP99Us = &p
	}
	return r
}
