// SPDX-License-Identifier: MIT

// Command checker decides whether a recorded history of preon's CRUD API is linearizable, with Porcupine, against
// a model of the table: a map id -> name | absent, checked key by key (each id is its own partition).
//
//	checker -history H.jsonl -report R.txt
//
// exits 0 when the history is linearizable, 1 on a violation (the report names the operations involved and
// Porcupine's visualization is written beside it, R.html), 2 on bad input or when the check could not finish.
//
// What an answer promises (docs/api.md): a 2xx or 4xx is definite; a 503 says that nothing was done, so a 503'd
// operation is kept with its real interval as a no-op (a write's unique name then has no writer in the model, and
// a read that sees it cannot be linearized; a connection refused, nothing sent, counts as such too); a 502, a 504, a timeout or a reset is indeterminate: the operation
// may or may not have taken effect, so its return is put after every other event (it stays open to the end) and
// its output is unknown.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Record is one line of the history: an operation, or a nemesis interval (Nemesis set).
type Record struct {
	Client  int     `json:"client"`
	Slot    *int    `json:"slot"` // a pipelined client's operation: its place in the write that sent it
	Op      string  `json:"op"`   // get, put, post, delete
	ID      *int64  `json:"id"`   // the row; for a post, the id it answered (nil when unknown)
	Name    *string `json:"name"` // written (put, post) or read (get 200)
	Status  int     `json:"status"`
	Error   string  `json:"error"` // transport error (timeout, reset) when Status is 0
	Call    int64   `json:"call"`
	Return  *int64  `json:"return"`
	Nemesis string  `json:"nemesis"`
	End     int64   `json:"end"`
}

// Class of an answer.
const (
	Definite = "definite"
	Nothing  = "nothing" // 503: promised that nothing was done
	Unknown  = "unknown" // 502, 504, timeout, reset
	Invalid  = "invalid" // an answer the API never gives to this operation: a failure by itself
)

func classify(r *Record) string {
	switch {
	case r.Status == 503, r.Status == 0 && strings.HasPrefix(r.Error, "refused"): // a refused connection sent nothing
		return Nothing
	case r.Status == 0 || r.Status == 502 || r.Status == 504:
		return Unknown
	}
	ok := map[string][]int{"get": {200, 404}, "put": {200, 404}, "post": {201}, "delete": {204, 404}}[r.Op]
	for _, s := range ok {
		if s == r.Status {
			return Definite
		}
	}
	return Invalid
}

// Input and Output of a model step; the state of one key is its name, "" when absent (names are never empty).
type Input struct {
	Op     string
	Key    string
	Name   string
	Class  string
	Index  int // line of the history, for the report
	Client int // ... and who sent it (Slot: its place in a pipelined write, -1 when alone on its connection)
	Slot   int
}

type Output struct {
	Status int
	Name   string
}

func step(state, in, out interface{}) (bool, interface{}) {
	s, i, o := state.(string), in.(Input), out.(Output)
	switch i.Class {
	case Nothing:
		return true, s // promised: no effect
	case Unknown:
		switch i.Op {
		case "put":
			if s == "" {
				return true, s // would have answered 404: no effect either way
			}
			return true, i.Name
		case "post":
			return s == "", i.Name // a new id: absent before
		case "delete":
			return true, ""
		}
		return true, s
	}
	switch i.Op {
	case "get":
		if o.Status == 404 {
			return s == "", s
		}
		return s == o.Name, s
	case "put":
		if o.Status == 404 {
			return s == "", s
		}
		return s != "", i.Name
	case "post":
		return s == "", i.Name
	case "delete":
		if o.Status == 404 {
			return s == "", s
		}
		return s != "", ""
	}
	return false, s
}

func describe(in, out interface{}) string {
	i, o := in.(Input), out.(Output)
	arg := ""
	if i.Op == "put" || i.Op == "post" {
		arg = fmt.Sprintf("(%q)", i.Name)
	}
	res := fmt.Sprint(o.Status)
	switch {
	case i.Class == Unknown:
		res = "unknown"
	case i.Class == Nothing:
		res = "503 nothing done"
	case i.Op == "get" && o.Status == 200:
		res = fmt.Sprintf("%q", o.Name)
	}
	return fmt.Sprintf("#%d %s %s%s -> %s", i.Index, i.Op, i.Key, arg, res)
}

var model = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey, keys := map[string][]porcupine.Operation{}, []string{}
		for _, op := range h {
			k := op.Input.(Input).Key
			if _, seen := byKey[k]; !seen {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init:              func() interface{} { return "" },
	Step:              step,
	Equal:             func(a, b interface{}) bool { return a.(string) == b.(string) },
	DescribeOperation: describe,
	DescribeState: func(s interface{}) string {
		if s.(string) == "" {
			return "absent"
		}
		return fmt.Sprintf("%q", s.(string))
	},
}

// History is what the checker makes of a file.
type History struct {
	Ops      []porcupine.Operation
	Nemeses  []Record
	Counts   map[string]int
	Invalid  []string // operations answered with a status the API does not give them
	Findings []string // direct evidence, whatever Porcupine says: a 503'd write seen
}

func read(r io.Reader) (*History, error) {
	var recs []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var rec Record
		if err := json.Unmarshal([]byte(text), &rec); err != nil {
			return nil, fmt.Errorf("line %d: %v", line, err)
		}
		if rec.Nemesis == "" {
			switch rec.Op {
			case "get", "put", "delete":
				if rec.ID == nil {
					return nil, fmt.Errorf("line %d: %s without an id", line, rec.Op)
				}
			case "post":
			default:
				return nil, fmt.Errorf("line %d: unknown op %q", line, rec.Op)
			}
			if (rec.Op == "put" || rec.Op == "post") && (rec.Name == nil || *rec.Name == "") {
				return nil, fmt.Errorf("line %d: a %s without the name it writes", line, rec.Op)
			}
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	h := &History{Counts: map[string]int{}}
	var last int64
	for _, rec := range recs {
		if rec.Call > last {
			last = rec.Call
		}
		if rec.Return != nil && *rec.Return > last {
			last = *rec.Return
		}
		if rec.End > last {
			last = rec.End
		}
	}
	forever := last + 1 // after every other event
	// Porcupine draws each client's operations on one row: a pipelined client's operations of one write are in
	// flight together (their intervals overlap, and nothing else orders them), so each place in a write gets a row
	// of its own. The check itself knows only the intervals.
	rows := map[[2]int]int{}
	row := func(rec *Record) int {
		key := [2]int{rec.Client, slot(rec)}
		if _, ok := rows[key]; !ok {
			rows[key] = len(rows)
		}
		return rows[key]
	}
	// Which write put a name: names are unique, so a name seen under an id tells which post created that id.
	writer, seenAt := map[string]int{}, map[string]int64{}
	for i, rec := range recs {
		if rec.Nemesis == "" && rec.Name != nil && (rec.Op == "put" || rec.Op == "post") {
			if j, dup := writer[*rec.Name]; dup {
				return nil, fmt.Errorf("lines %d and %d write the same name %q: names must be unique", j+1, i+1, *rec.Name)
			}
			writer[*rec.Name] = i
		}
		if rec.Nemesis == "" && rec.Op == "get" && rec.Status == 200 && rec.Name != nil {
			seenAt[*rec.Name] = *rec.ID
		}
	}
	for i, rec := range recs {
		if rec.Nemesis != "" {
			h.Nemeses = append(h.Nemeses, rec)
			continue
		}
		class := classify(&rec)
		h.Counts[class]++
		h.Counts[rec.Op]++
		if class == Invalid {
			h.Invalid = append(h.Invalid, fmt.Sprintf("line %d: %s %v answered %d %s", i+1, rec.Op, idText(rec.ID), rec.Status, rec.Error))
			continue
		}
		if rec.Op == "get" && class == Unknown {
			continue // a read whose answer is unknown says nothing
		}
		var key string
		switch {
		case rec.ID != nil:
			key = fmt.Sprintf("id %d", *rec.ID)
		case seenAt[*rec.Name] != 0:
			key = fmt.Sprintf("id %d", seenAt[*rec.Name])
		default:
			key = fmt.Sprintf("post line %d", i+1) // never seen: a key of its own
		}
		name, outName := "", ""
		if rec.Name != nil {
			name = *rec.Name
		}
		if rec.Op == "get" {
			outName, name = name, ""
		}
		ret := forever
		if class != Unknown {
			if rec.Return == nil {
				return nil, fmt.Errorf("line %d: a definite answer without a return time", i+1)
			}
			ret = *rec.Return
		}
		if class == Nothing && rec.Op == "get" {
			continue // read nothing, changed nothing
		}
		if class == Nothing && name != "" {
			if id, seen := seenAt[name]; seen {
				h.Findings = append(h.Findings, fmt.Sprintf("line %d: %s answered 503 (nothing done), yet its name %q was read at id %d",
					i+1, rec.Op, name, id))
			}
		}
		h.Ops = append(h.Ops, porcupine.Operation{
			ClientId: row(&rec),
			Input:    Input{Op: rec.Op, Key: key, Name: name, Class: class, Index: i + 1, Client: rec.Client, Slot: slot(&rec)},
			Call:     rec.Call,
			Output:   Output{Status: rec.Status, Name: outName},
			Return:   ret,
		})
	}
	return h, nil
}

// slot is a pipelined operation's place in its write, -1 for one alone on its connection.
func slot(rec *Record) int {
	if rec.Slot == nil {
		return -1
	}
	return *rec.Slot
}

func idText(id *int64) string {
	if id == nil {
		return "(new)"
	}
	return fmt.Sprint(*id)
}

// involved names, for each key that cannot be linearized (checked again alone: the whole check stops at the first),
// the end of its longest linearizable prefix and the operations that could come next but do not fit.
func involved(ops []porcupine.Operation, timeout time.Duration) []string {
	var out []string
	single := model
	single.Partition = nil
	for _, part := range model.Partition(ops) {
		result, info := porcupine.CheckOperationsVerbose(single, part, timeout)
		if result == porcupine.Ok {
			continue
		}
		best := []int{}
		for _, l := range info.PartialLinearizations()[0] {
			if len(l) > len(best) {
				best = l
			}
		}
		in := map[int]bool{}
		for _, id := range best {
			in[id] = true // Porcupine numbers a partition's operations in the order given
		}
		key := part[0].Input.(Input).Key
		out = append(out, fmt.Sprintf("%s: %s; %d operations, at most %d linearizable in a row", key, result, len(part), len(best)))
		state := interface{}("")
		for _, id := range best {
			_, state = model.Step(state, part[id].Input, part[id].Output)
		}
		from := len(best) - 3
		if from < 0 {
			from = 0
		}
		for _, id := range best[from:] {
			out = append(out, "  linearized: "+describe(part[id].Input, part[id].Output)+times(part[id]))
		}
		out = append(out, "  state then: "+model.DescribeState(state))
		var earliest int64 = -1
		for id, op := range part {
			if !in[id] && (earliest < 0 || op.Return < earliest) {
				earliest = op.Return
			}
		}
		for id, op := range part {
			if !in[id] && op.Call <= earliest {
				out = append(out, "  cannot follow: "+describe(op.Input, op.Output)+times(op))
			}
		}
	}
	return out
}

func times(op porcupine.Operation) string {
	in := op.Input.(Input)
	who := fmt.Sprintf("client %d", in.Client)
	if in.Slot >= 0 {
		who += fmt.Sprintf(", pipelined #%d", in.Slot)
	}
	return fmt.Sprintf("  [%s, %.3f s .. %s]", who, float64(op.Call)/1e9, ret(op))
}

func ret(op porcupine.Operation) string {
	if op.Input.(Input).Class == Unknown {
		return "open"
	}
	return fmt.Sprintf("%.3f s", float64(op.Return)/1e9)
}

func main() {
	historyPath := flag.String("history", "", "the history, one JSON object per line")
	reportPath := flag.String("report", "", "where the report goes (the visualization beside it, .html); default stdout only")
	timeout := flag.Duration("timeout", 2*time.Minute, "give up (verdict unknown, exit 2) after this long")
	flag.Parse()
	if *historyPath == "" {
		fmt.Fprintln(os.Stderr, "usage: checker -history H.jsonl [-report R.txt] [-timeout 2m]")
		os.Exit(2)
	}
	f, err := os.Open(*historyPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	h, err := read(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", *historyPath, err)
		os.Exit(2)
	}
	result, info := porcupine.CheckOperationsVerbose(model, h.Ops, *timeout)
	verdict := map[porcupine.CheckResult]string{porcupine.Ok: "linearizable", porcupine.Illegal: "NOT linearizable",
		porcupine.Unknown: "unknown (the check timed out)"}[result]
	if len(h.Invalid) > 0 && result == porcupine.Ok {
		verdict = "answers the API does not give"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "history: %s\nverdict: %s\n", *historyPath, verdict)
	fmt.Fprintf(&b, "operations: %d (get %d, put %d, post %d, delete %d); definite %d, 503 nothing done %d, indeterminate %d, invalid %d\n",
		h.Counts["get"]+h.Counts["put"]+h.Counts["post"]+h.Counts["delete"], h.Counts["get"], h.Counts["put"], h.Counts["post"],
		h.Counts["delete"], h.Counts[Definite], h.Counts[Nothing], h.Counts[Unknown], h.Counts[Invalid])
	for _, n := range h.Nemeses {
		fmt.Fprintf(&b, "nemesis: %s %.3f s .. %.3f s\n", n.Nemesis, float64(n.Call)/1e9, float64(n.End)/1e9)
	}
	for _, s := range h.Invalid {
		fmt.Fprintln(&b, "invalid answer: "+s)
	}
	for _, s := range h.Findings {
		fmt.Fprintln(&b, "finding: "+s)
	}
	code := 0
	if result != porcupine.Ok {
		for _, s := range involved(h.Ops, *timeout) {
			fmt.Fprintln(&b, s)
		}
		code = 1
		if result == porcupine.Unknown {
			code = 2
		}
	} else if len(h.Invalid) > 0 {
		code = 1
	}
	if result == porcupine.Illegal && *reportPath != "" {
		var notes []porcupine.Annotation
		for _, n := range h.Nemeses {
			notes = append(notes, porcupine.Annotation{Tag: "nemesis", Start: n.Call, End: n.End, Description: n.Nemesis,
				BackgroundColor: "#f4c7c3"})
		}
		info.AddAnnotations(notes)
		html := strings.TrimSuffix(*reportPath, ".txt") + ".html"
		if err := porcupine.VisualizePath(model, info, html); err != nil {
			fmt.Fprintf(&b, "visualization: not written: %v\n", err)
		} else {
			fmt.Fprintf(&b, "visualization: %s\n", html)
		}
	}
	os.Stdout.WriteString(b.String())
	if *reportPath != "" {
		if err := os.WriteFile(*reportPath, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	os.Exit(code)
}
