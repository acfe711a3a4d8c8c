// SPDX-License-Identifier: MIT
package main

import (
	"math"
	"sort"
	"sync"
)

// The outcome of one request: "ok" (a 2xx), or why it is KO.
const (
	kindOK      = "ok"
	kindTimeout = "timeout"   // no complete answer within -timeout (includes the wait for a pooled connection)
	kindRefused = "refused"   // connect() refused: the listen backlog overflowed or nothing listens
	kindReset   = "reset"     // the connection was reset or closed before the answer
	kind503     = "http_503"  // 503: the target shed the request (preon: its queue bound, with Retry-After)
	kind5xx     = "http_5xx"  // other 5xx
	kind4xx     = "http_4xx"  // a 4xx: the journey's requests are valid, so this is the target's fault too
	kindBody    = "bad_body"  // a 2xx whose body the journey could not read (no id in a POST's answer)
	kindLarge   = "too_large" // an answer over 1 MiB: an unbounded list (a service without paging)
	kindOther   = "other"     // any other transport error
)

// sample is one finished request.
type sample struct {
	done     float64 // s since the start, when the answer (or the failure) came
	planned  float64 // s since the start, when the journey meant to send it
	latency  float64 // ms, from the actual send to the end of the answer
	poolWait float64 // ms spent waiting for a pooled connection (part of latency)
	kind     string
	retry    bool // a 503 with Retry-After
}

// window collects one period's samples; figures are computed when it closes.
type window struct {
	start, length     float64
	arrivalsPlanned   int
	arrivalsStarted   int
	notStarted        int
	activeMax         int
	latencies         []float64
	poolWaits         []float64
	kinds             map[string]int
	retryAfter503     int
	lagsByPlannedTime []float64 // lags whose planned send falls in this window (the driver's schedule, not answers)
}

func newWindow(start, length float64) *window {
	return &window{start: start, length: length, kinds: map[string]int{}}
}

// pct is the p-th percentile (0..100) of v, nearest rank; NaN when v is empty. Sorts v.
func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	sort.Float64s(v)
	i := int(math.Ceil(p/100*float64(len(v)))) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(v) {
		i = len(v) - 1
	}
	return v[i]
}

// stats is shared by every user: samples go into the window of their completion time; lags into the window of
// their planned send time too, so that a late window of the schedule shows as such.
type stats struct {
	mu      sync.Mutex
	length  float64
	windows []*window
	all     []float64 // every latency, for the run's percentiles
	allLags []float64
	kinds   map[string]int
	retry   int
	skipped int
}

func newStats(length float64) *stats {
	return &stats{length: length, kinds: map[string]int{}}
}

// at returns the window holding time t, creating the ones up to it. Call with mu held.
func (s *stats) at(t float64) *window {
	i := int(t / s.length)
	if i < 0 {
		i = 0
	}
	for len(s.windows) <= i {
		s.windows = append(s.windows, newWindow(float64(len(s.windows))*s.length, s.length))
	}
	return s.windows[i]
}

func (s *stats) add(x sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.at(x.done)
	w.latencies = append(w.latencies, x.latency)
	w.poolWaits = append(w.poolWaits, x.poolWait)
	w.kinds[x.kind]++
	s.kinds[x.kind]++
	if x.retry {
		w.retryAfter503++
		s.retry++
	}
	s.all = append(s.all, x.latency)
}

// sent records a request's send lag at the moment it is sent, in the window of its planned send time.
func (s *stats) sent(planned, lagMs float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.at(planned)
	w.lagsByPlannedTime = append(w.lagsByPlannedTime, lagMs)
	s.allLags = append(s.allLags, lagMs)
}

func (s *stats) arrival(t float64, started bool, lagMs float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.at(t)
	w.arrivalsPlanned++
	if started {
		w.arrivalsStarted++
		w.lagsByPlannedTime = append(w.lagsByPlannedTime, lagMs)
		s.allLags = append(s.allLags, lagMs)
	} else {
		w.notStarted++
	}
}

func (s *stats) active(t float64, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.at(t)
	if n > w.activeMax {
		w.activeMax = n
	}
}

func (s *stats) skip() {
	s.mu.Lock()
	s.skipped++
	s.mu.Unlock()
}
