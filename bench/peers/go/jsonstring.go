// SPDX-License-Identifier: MIT

package main

import "strconv"

const hexDigits = "0123456789ABCDEF"

// appendJSONString appends s as a JSON string escaped as jansson escapes it in compact mode: quote and
// backslash, the short forms \b \f \n \r \t, other control characters as \u00XX (upper-case hex), everything
// else as it is (UTF-8 kept, no HTML escaping). encoding/json would escape <, >, &, U+2028 and U+2029 and
// write lower-case hex, so the same row would not give preon's bytes.
func appendJSONString(out []byte, s string) []byte {
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		out = append(out, s[start:i]...)
		switch c {
		case '"', '\\':
			out = append(out, '\\', c)
		case '\b':
			out = append(out, '\\', 'b')
		case '\f':
			out = append(out, '\\', 'f')
		case '\n':
			out = append(out, '\\', 'n')
		case '\r':
			out = append(out, '\\', 'r')
		case '\t':
			out = append(out, '\\', 't')
		default:
			out = append(out, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

// appendFruit appends {"id":N,"name":"..."} as preon (jansson, compact) writes it.
func appendFruit(out []byte, id int64, name string) []byte {
	out = append(out, `{"id":`...)
	out = strconv.AppendInt(out, id, 10)
	out = append(out, `,"name":`...)
	out = appendJSONString(out, name)
	return append(out, '}')
}

// appendError appends preon's error object {"error":"...","status":N}.
func appendError(out []byte, status int, msg string) []byte {
	out = append(out, `{"error":`...)
	out = appendJSONString(out, msg)
	out = append(out, `,"status":`...)
	out = strconv.AppendInt(out, int64(status), 10)
	return append(out, '}')
}
