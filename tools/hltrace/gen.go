package main

// The BPF object is built from hltrace.bpf.c by bpf2go with Debian's clang
// and committed (bpf_bpfel.go, bpf_bpfel.o). "make generate" rebuilds it;
// "make check-generate" rebuilds it into HLTRACE_GEN_DIR and fails when the
// committed copy differs. -type lists the C types Go reads from events.
//
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go@v0.22.0 -cc clang -target bpfel -go-package main -output-dir ${HLTRACE_GEN_DIR} -type event -type event_hdr -type call -type event_flag -type counter -type config_flag -type func_arg -type info_body -type cb_body -type chunk -type cs_body -type cs_ids_body -type hw_ip_offset -type wait_body -type mem_body -type debug_body -type uverbs_body -type dmabuf_body -type open_body -type mmap_body -type func_body -type hl_info_args -type hl_cb_in -type hl_cs_in -type hl_cs_out -type hl_cs_chunk -type hl_wait_cs_in -type hl_wait_cs_out -type hl_mem_in -type hl_debug_args -type ib_uverbs_ioctl_hdr -type ib_uverbs_attr bpf hltrace.bpf.c -- -O2 -mcpu=v3 -Wall -Werror
