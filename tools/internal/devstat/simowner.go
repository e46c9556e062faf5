package devstat

import (
	"os"

	"github.com/gaudi-go/gaudi/internal/holders"
)

// absentWhenOwnedElsewhere blanks the values of r, a device of this
// process's simulator, that live with the device's owner when another
// process owns it: the memory it allocated is in that process, and this
// process's simulator sees only its own untouched copy (0 bytes used).
// They are absent, and Errors says why, naming the owner. (The energy
// counter is not among them: every process's simulator counts it from
// the host's boot, so they all read one count.)
func absentWhenOwnedElsewhere(r *Device) {
	var owners []holders.Process
	for _, p := range r.Processes {
		if p.Node == "compute" && p.PID != os.Getpid() {
			owners = append(owners, holders.Process{PID: p.PID, Command: p.Name})
		}
	}
	if len(owners) == 0 {
		return
	}
	why := r.Node + " is " + holders.Text(owners) +
		": its device memory is in that process, which this process's simulator cannot see"
	r.MemoryUsedBytes, r.MemoryFreeBytes = nil, nil
	r.Errors = append(r.Errors, QueryError{Query: "dram_usage", Message: why})
}
