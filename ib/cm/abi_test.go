package cm

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gaudi-go/gaudi/internal/abicheck"
)

// The C proof of the commands and events: gcc fills the kernel's own
// structures (include/uapi/rdma/rdma_user_cm.h) and the bytes must equal
// what this package builds or decodes.
var abiTable = &abicheck.Table{
	Package:     "ib/cm",
	IncludeDirs: []string{"include/uapi"},
	Includes:    []string{"rdma/rdma_user_cm.h", "linux/in.h"},
	Prelude:     "#include <sys/socket.h>\n",
}

func TestWireBytesAgainstC(t *testing.T) {
	c := abicheck.Bytes(t, abiTable, []abicheck.Snippet{
		{Name: "resolve_ip", Type: "struct rdma_ucm_resolve_ip", Code: `
struct sockaddr_in *d = (struct sockaddr_in *)&p->dst_addr;
d->sin_family = AF_INET; d->sin_port = __builtin_bswap16(18515); d->sin_addr.s_addr = __builtin_bswap32(0x0a4d0001);
p->src_addr.sin6_family = AF_INET6; p->src_addr.sin6_port = __builtin_bswap16(7174); p->src_addr.sin6_addr.s6_addr[15] = 1;
p->id = 3; p->timeout_ms = 2000;`},
		{Name: "connect", Type: "struct rdma_ucm_connect", Code: `
p->conn_param.qp_num = 0x11; p->conn_param.private_data[0] = 'h'; p->conn_param.private_data[1] = 'i';
p->conn_param.private_data_len = 2; p->conn_param.responder_resources = 1; p->conn_param.initiator_depth = 4;
p->conn_param.flow_control = 1; p->conn_param.retry_count = 7; p->conn_param.rnr_retry_count = 6; p->conn_param.valid = 1; p->id = 5;`},
		{Name: "accept", Type: "struct rdma_ucm_accept", Code: `
p->uid = 0x99; p->conn_param.qp_num = 0x12; p->conn_param.responder_resources = 1; p->conn_param.initiator_depth = 1;
p->conn_param.flow_control = 1; p->conn_param.retry_count = 7; p->conn_param.rnr_retry_count = 7; p->conn_param.valid = 1; p->id = 6;`},
		{Name: "event", Type: "struct rdma_ucm_event_resp", Code: `
p->uid = 0x1234; p->id = 7; p->event = 5; p->status = 0; p->param.conn.qp_num = 0x1000042;
p->param.conn.private_data[0] = 0xab; p->param.conn.private_data_len = 196;
p->param.conn.responder_resources = 3; p->param.conn.initiator_depth = 2; p->param.conn.rnr_retry_count = 7;`},
	})
	check := func(name string, got []byte) {
		t.Helper()
		if d := cmp.Diff(c[name], got); d != "" {
			t.Errorf("%s: bytes differ from C (-C +Go):\n%s", name, d)
		}
	}
	ri := make([]byte, 64)
	putSockaddr(ri[0:28], netip.MustParseAddrPort("[::1]:7174"))
	putSockaddr(ri[28:56], netip.MustParseAddrPort("10.77.0.1:18515"))
	binary.LittleEndian.PutUint32(ri[56:], 3)
	binary.LittleEndian.PutUint32(ri[60:], 2000)
	check("resolve_ip", ri)
	if got := getSockaddr(ri[28:56]); got != netip.MustParseAddrPort("10.77.0.1:18515") {
		t.Errorf("getSockaddr: %v", got)
	}

	co := make([]byte, 288)
	encodeConnParam(co, 0x11, &ConnParam{PrivateData: []byte("hi"), InitiatorDepth: 4, RNRRetryCount: 6})
	binary.LittleEndian.PutUint32(co[272:], 5)
	check("connect", co)
	ac := make([]byte, 296)
	binary.LittleEndian.PutUint64(ac, 0x99)
	encodeConnParam(ac[8:280], 0x12, &ConnParam{})
	binary.LittleEndian.PutUint32(ac[280:], 6)
	check("accept", ac)

	r, err := decodeEvent(c["event"])
	if err != nil {
		t.Fatal(err)
	}
	if r.uid != 0x1234 || r.id != 7 || r.ev.Type != EventConnectResponse || r.ev.QPNum != 0x42 ||
		len(r.ev.PrivateData) != 196 || r.ev.PrivateData[0] != 0xab || r.ev.ResponderResources != 3 ||
		r.ev.InitiatorDepth != 2 || r.ev.RNRRetryCount != 7 {
		t.Errorf("decoded %+v", r)
	}
	if _, err := decodeEvent(c["event"][:eventRespMin-1]); err == nil {
		t.Error("short event decoded")
	}
}

// FuzzDecodeEvent feeds arbitrary bytes to the event decoder: errors, no
// panics.
func FuzzDecodeEvent(f *testing.F) {
	f.Add(make([]byte, eventRespSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeEvent(b)
		if err == nil && len(r.ev.PrivateData) > 255 {
			t.Fatalf("%d bytes of private data", len(r.ev.PrivateData))
		}
	})
}
