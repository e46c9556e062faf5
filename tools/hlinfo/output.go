package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

func writeJSON(w io.Writer, inv *inventory) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(inv)
}

func writeText(w io.Writer, inv *inventory, verbose bool) error {
	fmt.Fprintf(w, "%d device(s), %s\n", len(inv.Devices), inv.Source)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IDX\tPCI\tASIC\tMODULE\tDRAM\tFREE\tSTATUS\tOWNED\tABI\tDMA-BUF\tNODE\tCONTROL")
	for _, r := range inv.Devices {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\t%v\t%s\t%s\t%s\t%s\n", r.Index, r.PCIAddress, r.ASIC, r.ModuleID,
			size(r.DRAMTotal), size(r.DRAMFree), r.Status, yesNo(r.Owned), r.Encoding, r.DMABuf, r.Node, r.ControlNode)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeNICs(w, inv); err != nil {
		return err
	}
	if !verbose {
		return nil
	}
	for _, r := range inv.Devices {
		fmt.Fprintf(w, "\ndevice %d (%s %s, rev %d, card %q, firmware %q):\n", r.Index, r.ASIC, r.DeviceID, r.Revision, r.CardName, r.Firmware)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, f := range r.Info {
			fmt.Fprintf(tw, "  %s\t%s\n", f.Name, f.Value)
		}
		for _, f := range r.Errors {
			fmt.Fprintf(tw, "  %s\t%s\n", f.Name, "error: "+f.Value)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
