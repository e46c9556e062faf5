package main

import "strings"

// initialisms are the words written in capitals in Go names.
var initialisms = map[string]bool{
	"id": true, "va": true, "cb": true, "cs": true, "dma": true, "pci": true, "hw": true,
	"ip": true, "fw": true, "cpu": true, "sram": true, "dram": true, "mmu": true, "asic": true,
	"pll": true, "fd": true, "gid": true, "guid": true, "mr": true, "pd": true, "qp": true,
	"cq": true, "srq": true, "mtu": true, "lid": true, "uid": true, "uuid": true, "tpc": true,
	"mme": true, "nic": true, "hbm": true, "sob": true, "rdma": true, "ah": true, "wq": true,
	"mw": true, "xrcd": true, "dm": true, "esp": true, "spi": true, "api": true, "tcp": true,
	"udp": true, "ipv4": true, "ipv6": true, "mac": true, "vlan": true, "gre": true,
	"mpls": true, "rss": true, "odp": true, "tm": true, "rc": true, "ud": true, "uc": true,
	"xrc": true, "sq": true, "rq": true, "psn": true, "qkey": true, "pkey": true, "lkey": true,
	"rkey": true, "iova": true, "cpucp": true, "hbw": true, "lbw": true, "etr": true,
	"etf": true, "stm": true, "spmu": true, "bmon": true, "arc": true, "pdma": true,
	"edma": true, "kdma": true, "cmdq": true, "ts": true, "ecc": true, "sm": true,
	"ib": true,
}

// camel turns a C snake_case identifier into an exported Go name.
func camel(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(strings.Trim(s, "_"), "_") {
		if part == "" {
			continue
		}
		low := strings.ToLower(part)
		if initialisms[low] {
			b.WriteString(strings.ToUpper(low))
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}
