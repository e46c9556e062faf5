package packet

import "strconv"

// str builds the String form of a packet: NAME{Field:value Flag ...}.
type str struct {
	b   []byte
	sep bool
}

func newStr(op Opcode) *str { return newStrName(op.String()) }

// newStrName starts the String form of a packet called name.
func newStrName(name string) *str {
	s := &str{b: make([]byte, 0, 96)}
	s.b = append(s.b, name...)
	s.b = append(s.b, '{')
	return s
}

func (s *str) key(name string) {
	if s.sep {
		s.b = append(s.b, ' ')
	}
	s.sep = true
	s.b = append(s.b, name...)
}

// hex writes name:0xV.
func (s *str) hex(name string, v uint64) {
	s.key(name)
	s.b = append(s.b, ":0x"...)
	s.b = strconv.AppendUint(s.b, v, 16)
}

// dec writes name:V.
func (s *str) dec(name string, v uint64) {
	s.key(name)
	s.b = append(s.b, ':')
	s.b = strconv.AppendUint(s.b, v, 10)
}

// decNZ writes the field only when it is not zero.
func (s *str) decNZ(name string, v uint64) {
	if v != 0 {
		s.dec(name, v)
	}
}

// flag writes name when b is set.
func (s *str) flag(b bool, name string) {
	if b {
		s.key(name)
	}
}

func (s *str) String() string {
	return string(append(s.b, '}'))
}
