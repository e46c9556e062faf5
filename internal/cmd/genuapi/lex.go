package main

import (
	"fmt"
	"strings"
)

// tokKind classifies a C token.
type tokKind int

const (
	tokIdent tokKind = iota
	tokNumber
	tokChar
	tokString
	tokPunct
)

// token is one C token with the line it came from, for error messages.
type token struct {
	kind tokKind
	text string
	line int
}

func (t token) String() string { return fmt.Sprintf("%q (line %d)", t.text, t.line) }

// stripComments replaces every comment with spaces, keeping newlines so line
// numbers survive.
func stripComments(src string) string {
	var b strings.Builder
	b.Grow(len(src))
	for i := 0; i < len(src); {
		switch {
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				end = len(src) - i - 2
			}
			for _, c := range src[i : i+2+end] {
				if c == '\n' {
					b.WriteByte('\n')
				}
			}
			b.WriteByte(' ')
			i += end + 4
		case strings.HasPrefix(src[i:], "//"):
			end := strings.IndexByte(src[i:], '\n')
			if end < 0 {
				end = len(src) - i
			}
			i += end
		case src[i] == '"' || src[i] == '\'':
			q := src[i]
			j := i + 1
			for j < len(src) && src[j] != q {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) {
				j = len(src) - 1
			}
			b.WriteString(src[i : j+1])
			i = j + 1
		default:
			b.WriteByte(src[i])
			i++
		}
	}
	return b.String()
}

var puncts = []string{"<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "->", "..."}

// lex splits C text into tokens. line is the number of the first line.
func lex(src string, line int) ([]token, error) {
	var toks []token
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case isIdentStart(c):
			j := i + 1
			for j < len(src) && isIdentChar(src[j]) {
				j++
			}
			toks = append(toks, token{tokIdent, src[i:j], line})
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < len(src) && (isIdentChar(src[j]) || src[j] == '.') {
				j++
			}
			toks = append(toks, token{tokNumber, src[i:j], line})
			i = j
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(src) && src[j] != c {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) {
				return nil, fmt.Errorf("line %d: unterminated literal", line)
			}
			kind := tokChar
			if c == '"' {
				kind = tokString
			}
			toks = append(toks, token{kind, src[i : j+1], line})
			i = j + 1
		default:
			p := string(c)
			for _, m := range puncts {
				if strings.HasPrefix(src[i:], m) {
					p = m
					break
				}
			}
			toks = append(toks, token{tokPunct, p, line})
			i += len(p)
		}
	}
	return toks, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }
