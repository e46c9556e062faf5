package main

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gaudi-go/gaudi/tools/internal/devstat"
	"github.com/gaudi-go/gaudi/tools/internal/devstat/devstattest"
)

// TestFailedQueriesAreVisible: a device whose queries fail (here its
// control node cannot be opened, as on a fixture machine) gets a
// habanalabs_device_collect_errors series per failed query, and the scrape
// does not claim success. Before, only the sysfs series were exported and
// habanalabs_exporter_collect_success read 1.
func TestFailedQueriesAreVisible(t *testing.T) {
	c := newCollector(devstat.Options{Root: devstattest.Machine(t), OpenControl: devstattest.NoDevice, Selection: mustSelect(t, "0")}, true)
	l := `Serial="AN00000001",UUID="01P0-HL2080A0-15-TNS000-00-00-01",device="AN00000001",driver="linux 6.12.57+deb12-amd64",` +
		`fit="U-Boot 2023.07-hl-gaudi2-1.17.0-fw-51.2.0-sec-9",id="0",pod_name="",pod_namespace="",spi="5.10.18-hl-gaudi2-1.17.0-fw-51.2.0-sec-9"`
	want := `
# HELP habanalabs_device_collect_errors 1 for each query that failed for the device at the last scrape, by query (hlinfo -json lists the errors)
# TYPE habanalabs_device_collect_errors gauge
habanalabs_device_collect_errors{` + strings.Replace(l, `,spi=`, `,query="open",spi=`, 1) + `} 1
# HELP habanalabs_exporter_collect_success 1 when the last scrape listed the devices and every query of every device answered
# TYPE habanalabs_exporter_collect_success gauge
habanalabs_exporter_collect_success 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "habanalabs_device_collect_errors", "habanalabs_exporter_collect_success"); err != nil {
		t.Error(err)
	}
}
