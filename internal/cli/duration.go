package cli

import (
	"flag"
	"fmt"
	"time"
)

// durationValue is a flag.Value for a time.Duration whose refusal says
// what a duration looks like, where package flag's says "parse error".
type durationValue struct{ d *time.Duration }

// Set implements flag.Value.
func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration with a unit, such as 500us, 10ms, 2s or 1m")
	}
	*v.d = d
	return nil
}

// String implements flag.Value.
func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

// DurationVar defines a duration flag on fs as fs.DurationVar does, with
// a refusal that says what a duration looks like.
func DurationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationValue{p}, name, usage)
}
