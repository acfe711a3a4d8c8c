// SPDX-License-Identifier: MIT
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"syscall"
	"time"
)

// step is one request of the journey. Its path may name the user's own rows ("{a}", "{b}": the ids its POSTs got
// back), a random seeded row ("{r}") or the next page ("{next}": the Link of the last list, else after=its
// last id).
type step struct {
	method, path string
	body         bool   // a JSON body {"name": ...}
	saveAs       string // "a" or "b": the id in the answer of this POST
	list         bool   // a page of GET /fruits: remember where the next one starts
}

// journey is this project's stand-in for post 004's unpublished business scenario (docs/benchmarks.md): 14
// requests, 5 of them writes (36 %), each user writing and deleting only rows it created.
var journey = []step{
	{method: "GET", path: "/fruits?limit=20", list: true},
	{method: "GET", path: "/fruits/{r}"},
	{method: "GET", path: "/fruits/{r}"},
	{method: "POST", path: "/fruits", body: true, saveAs: "a"},
	{method: "GET", path: "/fruits/{a}"},
	{method: "GET", path: "/fruits?after={r}&limit=20", list: true},
	{method: "GET", path: "/fruits/{next}", list: true},
	{method: "PUT", path: "/fruits/{a}", body: true},
	{method: "GET", path: "/fruits/{r}"},
	{method: "POST", path: "/fruits", body: true, saveAs: "b"},
	{method: "GET", path: "/fruits/{b}"},
	{method: "GET", path: "/fruits/{r}"},
	{method: "DELETE", path: "/fruits/{a}"},
	{method: "DELETE", path: "/fruits/{b}"},
}

// helloJourney has the same shape with every request a GET of one path: the driver's own ceiling against a bare
// responder that answers anything with the same bytes.
func helloJourney(path string) []step {
	out := make([]step, len(journey))
	for i := range out {
		out[i] = step{method: "GET", path: path}
	}
	return out
}

// maxBody is the most of an answer the driver reads.
const maxBody = 1 << 20

var fruitWords = []string{"Apple", "Banana", "Cherry", "Durian", "Elderberry", "Fig", "Grape", "Kiwi", "Lime", "Mango",
	"Nectarine", "Papaya", "Pomelo", "Quince", "Raspberry", "Tangerine"}

type user struct {
	d        *driver
	id       int
	rng      *rand.Rand
	ids      map[string]int64
	next     string // the next page's path and query, from the last list
	t0       time.Time
	planned  time.Time
	stopping func() bool
}

// run plays the journey: each request is planned at the arrival (the first) or at the previous answer plus a
// think time; the user leaves after the last step, or early once the run stops (no new request is sent then).
func (u *user) run(steps []step) {
	for i, s := range steps {
		if i > 0 {
			u.planned = time.Now().Add(u.d.think(u.rng))
			if wait := time.Until(u.planned); wait > 0 {
				time.Sleep(wait)
			}
		}
		if u.stopping() {
			return
		}
		path, ok := u.resolve(s.path)
		if !ok {
			u.d.stats.skip() // an id this step needs never came (its POST was KO): not sent, as in Gatling
			continue
		}
		u.do(s, path)
	}
}

func (u *user) resolve(p string) (string, bool) {
	for _, k := range []string{"a", "b"} {
		if strings.Contains(p, "{"+k+"}") {
			id, ok := u.ids[k]
			if !ok {
				return "", false
			}
			p = strings.ReplaceAll(p, "{"+k+"}", fmt.Sprint(id))
		}
	}
	if strings.Contains(p, "{r}") {
		p = strings.ReplaceAll(p, "{r}", fmt.Sprint(1+u.rng.Int63n(u.d.maxID)))
	}
	if strings.Contains(p, "/fruits/{next}") {
		if u.next == "" {
			p = fmt.Sprintf("/fruits?after=%d&limit=20", 1+u.rng.Int63n(u.d.maxID))
		} else {
			p = u.next
		}
	}
	return p, true
}

func (u *user) do(s step, path string) {
	var body io.Reader
	if s.body {
		name := fmt.Sprintf("%s %s u%d-%d", fruitWords[u.rng.Intn(len(fruitWords))], fruitWords[u.rng.Intn(len(fruitWords))],
			u.id, u.rng.Intn(1000000))
		b, _ := json.Marshal(map[string]string{"name": name})
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), u.d.timeout)
	defer cancel()
	var poolStart, gotConn time.Time
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn: func(string) { poolStart = time.Now() },
		GotConn: func(httptrace.GotConnInfo) { gotConn = time.Now() },
	})
	req, err := http.NewRequestWithContext(ctx, s.method, u.d.base+path, body)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad request:", err)
		os.Exit(2)
	}
	if s.body {
		req.Header.Set("Content-Type", "application/json")
	}
	sent := time.Now()
	u.d.stats.sent(u.planned.Sub(u.t0).Seconds(), math.Max(0, ms(sent.Sub(u.planned))))
	res, err := u.d.client.Do(req)
	x := sample{planned: u.planned.Sub(u.t0).Seconds()}
	if err == nil {
		var data []byte
		// a page is at most 1000 rows (~100 KB); a service without paging answers the whole 150 MB table, which is
		// not read (thousands of those at once would exhaust this machine's memory): KO, and the connection closed
		data, err = io.ReadAll(io.LimitReader(res.Body, maxBody+1))
		res.Body.Close()
		if err == nil {
			x.kind = classifyStatus(res.StatusCode)
			x.retry = res.StatusCode == 503 && res.Header.Get("Retry-After") != ""
			if len(data) > maxBody {
				x.kind = kindLarge
			} else if x.kind == kindOK {
				x.kind = u.keep(s, res, data)
			}
		}
	}
	if err != nil {
		x.kind = classifyErr(err)
	}
	end := time.Now()
	x.done, x.latency = end.Sub(u.t0).Seconds(), ms(end.Sub(sent))
	if !poolStart.IsZero() && !gotConn.IsZero() {
		x.poolWait = ms(gotConn.Sub(poolStart))
	}
	u.d.stats.add(x)
}

// keep remembers what later steps need from a 2xx answer: a created row's id, where the next page starts.
func (u *user) keep(s step, res *http.Response, data []byte) string {
	if s.saveAs != "" {
		var row struct {
			ID int64 `json:"id"`
		}
		if json.Unmarshal(data, &row) != nil || row.ID == 0 {
			if !u.d.checkBody {
				u.ids[s.saveAs] = 1
				return kindOK
			}
			return kindBody
		}
		u.ids[s.saveAs] = row.ID
	}
	if s.list {
		u.next = ""
		if l := res.Header.Get("Link"); strings.HasPrefix(l, "<") && strings.Contains(l, `rel="next"`) {
			u.next = l[1:strings.Index(l, ">")]
		}
	}
	return kindOK
}

func classifyStatus(code int) string {
	switch {
	case code >= 200 && code < 400:
		return kindOK
	case code == 503:
		return kind503
	case code >= 500:
		return kind5xx
	default:
		return kind4xx
	}
}

func classifyErr(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return kindTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return kindRefused
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "server closed"):
		return kindReset
	default:
		return kindOther
	}
}

func ms(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}
