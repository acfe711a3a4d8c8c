// SPDX-License-Identifier: MIT

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
)

const nameMax = 255

// pathID reads /fruits/{id} as preon does (1..2147483647); answers 400 itself when it is not one.
func pathID(c *gin.Context) (int32, bool) {
	s, why, n := c.Param("id"), "", int64(0)
	for i := 0; i < len(s) && why == ""; i++ {
		switch {
		case s[i] < '0' || s[i] > '9':
			why = "must be a positive integer"
		default:
			if n = n*10 + int64(s[i]-'0'); n > 2147483647 {
				why = "must be at most 2147483647"
			}
		}
	}
	switch {
	case s == "":
		why = "must not be empty"
	case why == "" && n == 0:
		why = "must be a positive integer"
	}
	if why != "" {
		fail(c, http.StatusBadRequest, "parameter 'id' "+why)
		return 0, false
	}
	return int32(n), true
}

// bodyName checks the body of POST and PUT as preon does (src/service/body.c), with its messages; answers 415 or 400
// itself when it is not {"name":"..."}.
func bodyName(c *gin.Context) (string, bool) {
	mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if err != nil || mt != "application/json" {
		fail(c, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return "", false
	}
	body, err := io.ReadAll(io.LimitReader(c.Request.Body, 64<<10))
	if err != nil {
		fail(c, http.StatusBadRequest, "body could not be read: "+err.Error())
		return "", false
	}
	name, why := parseName(body)
	if why != "" {
		fail(c, http.StatusBadRequest, why)
		return "", false
	}
	return name, true
}

func parseName(body []byte) (string, string) {
	if !utf8.Valid(body) {
		bad := 0
		for bad < len(body) {
			r, size := utf8.DecodeRune(body[bad:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			bad += size
		}
		return "", fmt.Sprintf("body is not valid UTF-8 (byte %d)", bad)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return "", `body is empty; expected a JSON object such as {"name":"Banana"}`
	}
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", "body is not valid JSON: " + err.Error()
	}
	obj, isObj := doc.(map[string]any)
	if !isObj {
		return "", `body must be a JSON object such as {"name":"Banana"}`
	}
	for key := range obj {
		if key != "name" && key != "id" {
			if len(key) > 64 {
				key = key[:64]
			}
			return "", "unknown field '" + key + "'; only 'name' may be given"
		}
	}
	v, present := obj["name"]
	if !present {
		return "", "field 'name' is missing"
	}
	name, isString := v.(string)
	switch {
	case !isString:
		return "", "field 'name' must be a string"
	case name == "":
		return "", "field 'name' must not be empty"
	case strings.ContainsRune(name, 0): // jansson refuses \u0000 while parsing: PostgreSQL's text cannot hold it
		return "", `body is not valid JSON: \u0000 is not allowed`
	case utf8.RuneCountInString(name) > nameMax:
		return "", fmt.Sprintf("field 'name' is longer than %d characters", nameMax)
	}
	return name, ""
}
