package prom

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// The decoder's JSON reading: objects and arrays member by member,
// strings, numbers, and values passed over. Each checks what it reads as
// strictly as encoding/json; the rare string with escapes or invalid UTF-8
// is unquoted by encoding/json itself.

// stringAfter reads a string value unless err is set.
func (d *decoder) stringAfter(err error) (string, error) {
	if err != nil {
		return "", err
	}
	s, err := d.stringValue()
	return string(s), err
}

// stringValue reads a string and returns its contents.
func (d *decoder) stringValue() ([]byte, error) {
	lit, escaped, err := d.stringLiteral()
	if err != nil {
		return nil, err
	}
	return unquote(lit, escaped)
}

// object reads an object, calling field with each key once the reader is
// at the key's value; field must read the value.
func (d *decoder) object(field func(key []byte) error, known ...string) error {
	more, err := d.open('{', '}')
	for err == nil && more {
		var key []byte
		if key, err = d.key(known...); err == nil {
			if err = field(key); err == nil {
				more, err = d.more('}')
			}
		}
	}
	return err
}

// open reads the first byte of an object or array and reports whether
// members follow.
func (d *decoder) open(begin, end byte) (bool, error) {
	if err := d.expect(begin); err != nil {
		return false, err
	}
	if d.peek() == end {
		d.i++
		return false, nil
	}
	return true, nil
}

// more reads what follows a member: true after a comma, false after end.
func (d *decoder) more(end byte) (bool, error) {
	switch d.peek() {
	case ',':
		d.i++
		return true, nil
	case end:
		d.i++
		return false, nil
	}
	return false, d.syntax(fmt.Sprintf("',' or %q", end))
}

// key reads a member's key, unescaped, and the colon after it. Keys that
// match one of known only without regard to case are refused, as
// encoding/json would take them for the known key.
func (d *decoder) key(known ...string) ([]byte, error) {
	key, err := d.stringValue()
	if err != nil {
		return nil, err
	}
	for _, k := range known {
		if string(key) != k && bytes.EqualFold(key, []byte(k)) {
			return nil, fmt.Errorf("key %q is not %q", key, k)
		}
	}
	return key, d.expect(':')
}

// stringLiteral reads a string and returns it with its quotes, and whether
// it has escapes.
func (d *decoder) stringLiteral() (lit []byte, escaped bool, err error) {
	if d.peek() != '"' {
		return nil, false, d.syntax("a string")
	}
	from := d.i
	for d.i++; d.i < len(d.b); d.i++ {
		switch c := d.b[d.i]; {
		case c == '"':
			d.i++
			return d.b[from:d.i], escaped, nil
		case c == '\\':
			escaped = true
			d.i++
		case c < 0x20:
			return nil, false, d.syntax("no control character in a string")
		}
	}
	return nil, false, errors.New("unexpected end of reply in a string")
}

// unquote returns the contents of a string literal, through encoding/json
// where it has escapes or is not valid UTF-8 (which encoding/json replaces).
func unquote(lit []byte, escaped bool) ([]byte, error) {
	inner := lit[1 : len(lit)-1]
	if !escaped && utf8.Valid(inner) {
		return inner, nil
	}
	var s string
	if err := json.Unmarshal(lit, &s); err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// number reads a number, checked against JSON's grammar.
func (d *decoder) number() ([]byte, error) {
	d.space()
	from := d.i
	digits := func() int {
		n := 0
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	if n := digits(); n == 0 || n > 1 && d.b[d.i-n] == '0' {
		return nil, d.syntax("a number")
	}
	if d.i < len(d.b) && d.b[d.i] == '.' {
		d.i++
		if digits() == 0 {
			return nil, d.syntax("digits after '.'")
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if d.i < len(d.b) && (d.b[d.i] == '+' || d.b[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return nil, d.syntax("an exponent")
		}
	}
	return d.b[from:d.i], nil
}

// skip passes over any value and returns where it was. Values the
// decoder reads later (data, result) are left to that strict reading;
// others are checked with json.Valid.
func (d *decoder) skip(check bool) (span, error) {
	d.space()
	from := d.i
	switch d.peek() {
	case '"':
		if _, _, err := d.stringLiteral(); err != nil {
			return span{}, err
		}
	case '{', '[':
		for depth := 0; ; {
			if d.i >= len(d.b) {
				return span{}, errors.New("unexpected end of reply")
			}
			switch d.b[d.i] {
			case '"':
				if _, _, err := d.stringLiteral(); err != nil {
					return span{}, err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			d.i++
			if depth == 0 {
				break
			}
		}
	default:
		for d.i < len(d.b) && !bytes.ContainsAny(d.b[d.i:d.i+1], ",}] \t\n\r") {
			d.i++
		}
	}
	if check && !json.Valid(d.b[from:d.i]) {
		return span{}, fmt.Errorf("invalid JSON value at offset %d", from)
	}
	return span{from, d.i}, nil
}

// end checks that only whitespace follows.
func (d *decoder) end() error {
	d.space()
	if d.i != len(d.b) {
		return d.syntax("the end of the reply")
	}
	return nil
}

func (d *decoder) expect(c byte) error {
	if d.peek() != c {
		return d.syntax(fmt.Sprintf("%q", c))
	}
	d.i++
	return nil
}

// peek skips whitespace and returns the next byte, 0 at the end.
func (d *decoder) peek() byte {
	d.space()
	if d.i >= len(d.b) {
		return 0
	}
	return d.b[d.i]
}

func (d *decoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) syntax(want string) error {
	if d.i >= len(d.b) {
		return fmt.Errorf("unexpected end of reply, want %s", want)
	}
	return fmt.Errorf("unexpected %q at offset %d, want %s", d.b[d.i], d.i, want)
}
